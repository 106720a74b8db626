// One graph viewer page in headless chromium: ours (a report from disk), Netron or Model
// Explorer (served on loopback by their own Python packages). Prints one JSON line: time from
// navigation start to the graph drawn, the main thread's busy time, JS heap, frame intervals
// while zooming and panning. Every request off loopback is refused (the machine has no network;
// a peer's analytics must not wait on it). Driven by bench/graph_peers.py.
// Usage: node graph_peers.mjs ours|netron|explorer URL
import { chromium } from 'playwright-core';
import { frames } from './graph_paint_frames.mjs';

const [kind, url] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.TVM_EXPLORER_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--enable-precise-memory-info'],
});
/** In the page: is the graph drawn? (each viewer's own sign of a finished first paint) */
const DRAWN = {
  ours: () => !!document.documentElement.dataset.painted,
  // Netron shows its graph page (body.default) once the SVG of the layout is in place
  netron: () => !!document.body && document.body.classList.contains('default') && document.querySelectorAll('#canvas .node').length > 0,
  // Model Explorer draws with WebGL: its renderer's canvas is there and nothing says Processing
  explorer: () => {
    if (!document.body) return false;
    const canvas = document.querySelector('webgl-renderer canvas');
    const busy = [...document.querySelectorAll('body *')].some((e) => e.children.length === 0 && /Processing/.test(e.textContent ?? '') && e.getBoundingClientRect().height > 0);
    return !!canvas && canvas.width > 0 && !busy;
  },
}[kind];
const out = { kind };
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  await page.route('**/*', (route) => {
    const u = new URL(route.request().url());
    return ['127.0.0.1', 'localhost'].includes(u.hostname) || ['file:', 'blob:', 'data:'].includes(u.protocol) ? route.continue() : route.abort();
  });
  if (kind === 'netron') {
    // Netron replaces window.eval with a function that throws, and playwright evaluates through it:
    // keep the browser's own (a setter that ignores the replacement; nothing else changes)
    // Netron asks for consent to its cookies before it shows anything: answered beforehand
    await page.context().addCookies([{ name: 'consent', value: String(Date.now()), url }]);
    await page.addInitScript(() => {
      const own = window.eval;
      Object.defineProperty(window, 'eval', { get: () => own, set: () => undefined, configurable: false });
    });
  }
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForFunction(DRAWN, null, { timeout: 600000, polling: 50 });
  out.first_paint_ms = kind === 'ours' ? Number(await page.evaluate(() => document.documentElement.dataset.painted)) : await page.evaluate(() => performance.now());
  const metrics = Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
  out.main_thread_ms = 1000 * metrics.TaskDuration;
  out.heap_mib = metrics.JSHeapUsedSize / 2 ** 20;
  if (process.env.SHOT) {
    await page.screenshot({ path: process.env.SHOT }); // the first view, as it opened
  }
  const target = { ours: 'svg.graph', netron: '#target', explorer: 'webgl-renderer canvas' }[kind];
  const box = await page.locator(target).first().boundingBox();
  const f = await frames(page, box);
  out.frame_p50_ms = f.p50;
  out.frame_p95_ms = f.p95;
} finally {
  await browser.close();
}
process.stdout.write(`${JSON.stringify(out)}\n`);
