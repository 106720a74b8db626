// Opens a `tvm-explorer report` page (a real bundle's, or a large graph document's) in headless
// chromium and does what a user would on a large graph, printing one JSON object of what it
// found (tests/graph/test_scale.py asserts on it). Usage: node scale_check.mjs REPORT.html
// SCREENSHOT_PREFIX SPEC_JSON, where SPEC says what to try: {search, reveal, expand, highlight,
// rollups, overlay}.
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const [file, shots, specText] = process.argv.slice(2);
const spec = JSON.parse(specText || '{}');
const browser = await chromium.launch({
  executablePath: process.env.TVM_EXPLORER_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
});
const out = { errors: [], requests: [] };
/** Whether the element of `selector` lies inside the graph's view (a box on screen). */
const onScreen = (page, selector) =>
  page.evaluate((sel) => {
    const el = document.querySelector(sel);
    if (!el) return null;
    const b = el.getBoundingClientRect();
    const v = document.querySelector('svg.graph').getBoundingClientRect();
    return b.width > 0 && b.left >= v.left - 1 && b.top >= v.top - 1 && b.right <= v.right + 1 && b.bottom <= v.bottom + 1;
  }, selector);
const drawn = () => page.evaluate(() => window.tvmxGraph.painted.then(() => undefined));
let page;
try {
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const url = pathToFileURL(file).href;
  page.on('request', (r) => r.url() !== url && !r.url().startsWith('blob:') && out.requests.push(r.url()));
  page.on('pageerror', (e) => out.errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && out.errors.push(m.text()));
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForFunction(() => document.documentElement.dataset.painted, null, { timeout: 180000 });
  await drawn();
  out.painted = Number(await page.evaluate(() => document.documentElement.dataset.painted));
  out.mode = await page.evaluate(() => window.tvmxGraph.layoutMode());
  out.notice = await page.textContent('.notice');
  out.status = await page.textContent('.status');
  out.layers = await page.$$eval('[data-layer]', (els) => els.map((e) => e.getAttribute('data-layer')));
  out.collapsed = await page.$$eval('.group.collapsed', (els) => els.map((e) => e.getAttribute('data-group')));
  out.fontPx = await page.evaluate(() => {
    // the rendered height of a node's shape text at the opening zoom, in screen pixels
    const t = document.querySelector('[data-layer] .detail');
    return t ? t.getBoundingClientRect().height : null;
  });
  out.firstOnScreen = out.layers.length ? await onScreen(page, `[data-layer="${out.layers[0]}"]`) : null;
  await page.screenshot({ path: `${shots}-open.png` });
  if (spec.overlay) {
    await page.selectOption('select.overlay', spec.overlay);
  }
  if (spec.rollups) {
    out.rollups = await page.$$eval('.group.collapsed[data-value]', (els) => Object.fromEntries(els.map((e) => [e.getAttribute('data-group'), Number(e.getAttribute('data-value'))])));
  }
  if (spec.compare) {
    // ×N on a repeated module's box: its repetitions compared in the panel
    await page.dispatchEvent(`.group.collapsed[data-group="${spec.compare}"] .compare`, 'click');
    await page.waitForSelector('.compare-table tbody tr');
    out.compare = await page.$$eval('.compare-table tbody tr', (rows) => rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)));
    out.compareHead = await page.$$eval('.compare-table thead th', (ths) => ths.map((th) => th.textContent));
    await page.screenshot({ path: `${shots}-compare.png` });
  }
  if (spec.weights) {
    // "weights" draws the folded nodes again
    await page.check('input.show-weights');
    await drawn();
    out.withWeights = await page.$$eval('[data-layer]', (els) => els.length);
    await page.uncheck('input.show-weights');
    await drawn();
    out.withoutWeights = await page.$$eval('[data-layer]', (els) => els.length);
  }
  if (spec.highlight) {
    await page.evaluate((ids) => window.tvmxGraph.highlight(ids), spec.highlight);
    await page.waitForTimeout(150);
    out.highlighted = {};
    for (const id of spec.highlight) {
      // its own node, the node it is folded into, or (many highlighted) the collapsed group holding it
      const where = await page.evaluate((lid) => window.tvmxGraph.drawnAs(lid), id);
      out.highlighted[id] = where && (await onScreen(page, where)) ? where : false;
    }
    await page.screenshot({ path: `${shots}-highlight.png` });
  }
  if (spec.expand) {
    out.before = await page.evaluate(() => window.tvmxGraph.geometry());
    const t0 = Date.now();
    await page.dispatchEvent(`.group.collapsed[data-group="${spec.expand}"]`, "click");
    await page.waitForFunction((gid) => document.querySelector(`.group:not(.collapsed)[data-group="${gid}"]`), spec.expand, { timeout: 60000 });
    await drawn();
    out.expandMs = Date.now() - t0;
    out.after = await page.evaluate(() => window.tvmxGraph.geometry());
    await page.screenshot({ path: `${shots}-expanded.png` });
    await page.evaluate((gid) => window.tvmxGraph.setCollapsed(gid, true), spec.expand);
    out.again = await page.evaluate(() => window.tvmxGraph.geometry());
  }
  if (spec.search) {
    out.matches = await page.evaluate((q) => window.tvmxGraph.find(q).length, spec.search);
    await page.fill('input.search', spec.search);
    await page.press('input.search', 'Enter');
    await page.waitForFunction((id) => document.querySelector(`[data-layer="${id}"]`), spec.reveal, { timeout: 60000 });
    await drawn();
    await page.waitForTimeout(100);
    out.revealed = await onScreen(page, `[data-layer="${spec.reveal}"]`);
    out.revealedSelected = await page.$$eval('[data-layer].selected', (els) => els.map((e) => e.getAttribute('data-layer')));
    await page.screenshot({ path: `${shots}-search.png` });
  }
  if (spec.panel) {
    // the layer panel never takes more than half of the view, and closes
    const main = await page.evaluate(() => document.querySelector('.main').getBoundingClientRect().width);
    const grip = await page.locator('.resizer').boundingBox();
    await page.mouse.move(grip.x + grip.width / 2, grip.y + grip.height / 2);
    await page.mouse.down();
    await page.mouse.move(20, grip.y + grip.height / 2, { steps: 5 });
    await page.mouse.up();
    out.panelShare = (await page.evaluate(() => document.querySelector('.panel').getBoundingClientRect().width)) / main;
    out.graphShare = (await page.evaluate(() => document.querySelector('svg.graph').getBoundingClientRect().width)) / main;
    await page.click('button.panel-toggle');
    out.panelClosedWidth = await page.evaluate(() => document.querySelector('.panel').getBoundingClientRect().width);
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
