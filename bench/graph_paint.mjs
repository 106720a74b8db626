// The model graph (`tvm-explorer report` pages) in headless chromium (playwright-core): opens
// each REPORT.html from disk REPS times in a fresh page and prints one JSON line per report:
// first paint (the page's own mark, documentElement.dataset.painted: ms from navigation start to
// the first complete graph), the main thread's busy time and the JS heap then, the frame
// intervals while zooming and panning with the mouse, the time to open one collapsed group (a
// decoder layer, a part), a pass slider step (median and slowest), and with EXPAND_ALL=1 the time to open every group and the frames with
// everything drawn. The reports take turns (each repetition opens every report once), so that
// a shared machine's load falls alike on each; with PAINT_ONLY=1 only the first paint is measured,
// and the first paint of the report opened again in the same profile (its layouts kept by the
// first page: reopen_paint_ms) (bench/graph_paint.py --before). Driven by bench/graph_paint.py. Usage: node graph_paint.mjs REPS FILE...
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';
import { frames } from './graph_paint_frames.mjs';

const [reps, ...files] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.TVM_EXPLORER_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--enable-precise-memory-info'],
});

/** The same report opened again in the same browser profile, once the first page has kept its
 * layouts (the app's layout cache: the browser's storage), until its first paint (ms from
 * navigation start). A version without the cache lays out afresh. */
async function reopen(context, first, file) {
  await first
    .waitForFunction(
      () => typeof window.tvmxGraph.saveLayouts !== 'function' || Object.keys(localStorage).some((k) => k.startsWith('tvmx-layouts:')),
      null,
      { timeout: 60000, polling: 100 },
    )
    .catch(() => undefined);
  await first.close();
  const page = await context.newPage();
  await page.goto(pathToFileURL(file).href, { waitUntil: 'commit' });
  await page.waitForFunction(() => document.documentElement.dataset.painted, null, { timeout: 300000, polling: 50 });
  return Number(await page.evaluate(() => document.documentElement.dataset.painted));
}

const runsOf = new Map(files.map((f) => [f, []]));
try {
  for (let i = 0; i < Number(reps); i++) {
    for (const file of files) {
      const runs = runsOf.get(file);
      const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
      const page = await context.newPage();
      // The main thread's busy time (CDP TaskDuration): what the page costs the CPU, which other
      // jobs on a shared machine do not inflate the way they inflate the wall time.
      const cdp = await page.context().newCDPSession(page);
      await cdp.send('Performance.enable');
      await page.goto(pathToFileURL(file).href, { waitUntil: 'commit' });
      await page.waitForFunction(() => document.documentElement.dataset.painted, null, { timeout: 300000, polling: 50 });
      const run = await page.evaluate(async () => {
        const layout = await window.tvmxGraph.painted;
        return {
          first_paint_ms: Number(document.documentElement.dataset.painted),
          layout_ms: layout.ms,
          elk_ms: layout.elkMs,
          nodes: layout.nodes.size + layout.collapsed.size,
          mode: await window.tvmxGraph.layoutMode(),
        };
      });
      const metrics = Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
      run.main_thread_ms = 1000 * metrics.TaskDuration;
      run.heap_mib = metrics.JSHeapUsedSize / 2 ** 20;
      if (process.env.PAINT_ONLY) {
        run.reopen_paint_ms = await reopen(context, page, file);
        runs.push(run);
        await context.close();
        continue;
      }
      const box = await page.locator('svg.graph').boundingBox();
      const f = await frames(page, box);
      run.frame_p50_ms = f.p50;
      run.frame_p95_ms = f.p95;
      // The pass slider (real bundles carry a pipeline): each of up to 24 positions across the
      // pipeline, from the call to the next painted frame; the median and the slowest.
      const steps = await page.evaluate(async () => {
        const max = Number(document.querySelector('input.pass-slider')?.getAttribute('max') ?? -1);
        if (max < 1 || document.querySelector('.passes')?.hidden) return null;
        const out = [];
        for (let k = 0; k <= 24; k++) {
          const t = performance.now();
          window.tvmxGraph.setPass(Math.round((k * max) / 24));
          await new Promise((r) => requestAnimationFrame(() => r(undefined)));
          out.push(performance.now() - t);
        }
        window.tvmxGraph.setPass(null);
        return out.sort((a, b) => a - b);
      });
      if (steps) {
        run.slider_step_ms = steps[Math.floor(steps.length / 2)];
        run.slider_step_max_ms = steps[steps.length - 1];
      }
      // Open one collapsed group (the first drawn: a decoder layer, a part), as a click does.
      const gid = await page.evaluate(() => document.querySelector('.group.collapsed')?.getAttribute('data-group') ?? null);
      if (gid) {
        run.expand_ms = await page.evaluate(async (g) => {
          const t = performance.now();
          await window.tvmxGraph.setCollapsed(g, false);
          return performance.now() - t;
        }, gid);
      }
      if (process.env.EXPAND_ALL) {
        run.expand_all_ms = await page.evaluate(async () => {
          const t = performance.now();
          document.querySelector('button.expand-all').click();
          await new Promise((r) => setTimeout(r, 0));
          await window.tvmxGraph.painted;
          return performance.now() - t;
        });
        run.all_nodes = await page.evaluate(() => document.querySelectorAll('[data-layer]').length);
        const g = await frames(page, box);
        run.all_frame_p50_ms = g.p50;
        run.all_frame_p95_ms = g.p95;
        const m = Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((x) => [x.name, x.value]));
        run.all_heap_mib = m.JSHeapUsedSize / 2 ** 20;
      }
      runs.push(run);
      await context.close();
    }
  }
  for (const [file, runs] of runsOf) {
    process.stdout.write(`${JSON.stringify({ file, runs })}\n`);
  }
} finally {
  await browser.close();
}
