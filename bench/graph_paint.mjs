// First paint and pan/zoom of `tvm-explorer report` pages in headless chromium (playwright-core):
// opens each REPORT.html from disk REPS times in a fresh page and prints one JSON line per
// report: time from navigation start to the first painted graph (HTML and data parsed, elkjs
// layout, SVG drawn, one frame), the layout alone, and the frame intervals while zooming and
// panning with the mouse. Driven by bench/graph_paint.py. Usage: node graph_paint.mjs REPS FILE...
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const [reps, ...files] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.TVM_EXPLORER_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update'],
});
try {
  for (const file of files) {
    const runs = [];
    for (let i = 0; i < Number(reps); i++) {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      // The main thread's busy time (CDP TaskDuration): what the page costs the CPU, which other
      // jobs on a shared machine do not inflate the way they inflate the wall time.
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Performance.enable');
      await page.goto(pathToFileURL(file).href, { waitUntil: 'commit' });
      await page.waitForFunction(() => window.tvmxGraph !== undefined, null, { timeout: 120000 });
      const paint = await page.evaluate(async () => {
        const layout = await window.tvmxGraph.painted;
        return { first_paint_ms: performance.now(), layout_ms: layout.ms, nodes: layout.nodes.size };
      });
      const metrics = (await cdp.send('Performance.getMetrics')).metrics;
      paint.main_thread_ms = 1000 * metrics.find((m) => m.name === 'TaskDuration').value;
      // Zoom in and out with the wheel, then drag: frame intervals while the view moves.
      const box = await page.locator('svg.graph').boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.evaluate(() => {
        window.__frames = [];
        let last = performance.now();
        const tick = (t) => {
          window.__frames.push(t - last);
          last = t;
          if (window.__frames.length < 400) requestAnimationFrame(tick);
        };
        requestAnimationFrame(tick);
      });
      for (let k = 0; k < 20; k++) await page.mouse.wheel(0, k < 10 ? -120 : 120);
      await page.mouse.down();
      for (let k = 0; k < 30; k++) await page.mouse.move(box.x + box.width / 2 + 10 * k, box.y + box.height / 2 + 5 * k);
      await page.mouse.up();
      const frames = (await page.evaluate(() => window.__frames)).slice(1).sort((a, b) => a - b);
      paint.frame_p50_ms = frames[Math.floor(frames.length * 0.5)];
      paint.frame_p95_ms = frames[Math.floor(frames.length * 0.95)];
      runs.push(paint);
      await page.close();
    }
    process.stdout.write(`${JSON.stringify({ file, runs })}\n`);
  }
} finally {
  await browser.close();
}
