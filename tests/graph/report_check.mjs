// Opens a `tvm-explorer report` HTML file from disk in headless chromium (playwright-core) and
// checks it as a user would see it; prints one JSON object of what it found (tests/graph/
// test_report.py asserts on it). Usage: node report_check.mjs REPORT.html SCREENSHOT_PREFIX
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';

const [file, shots] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.TVM_EXPLORER_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
});
const out = { requests: [], errors: [], csp: [] };
try {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  const url = pathToFileURL(file).href;
  page.on('request', (r) => {
    // blob: the layout worker, started from the page's own script text (nothing leaves the page)
    if (r.url() !== url && !r.url().startsWith('blob:')) out.requests.push(r.url());
  });
  page.on('pageerror', (e) => out.errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') out.errors.push(m.text());
  });
  await page.goto(url);
  await page.waitForSelector('[data-layer]', { timeout: 60000 });
  await page.evaluate(() => window.tvmxGraph.painted);
  // where each box is drawn at first (compared with the page opened again, at the end)
  const placed = (p) => p.$$eval('[data-layer], [data-group]', (els) => els.map((e) => `${e.getAttribute('data-layer') ?? e.getAttribute('data-group')} ${e.getAttribute('transform')}`).sort());
  out.opening = await placed(page);
  out.layers = await page.$$eval('[data-layer]', (els) => els.map((e) => e.getAttribute('data-layer')));
  out.overlays = await page.$$eval('select.overlay option', (els) => els.map((e) => e.value));
  const fills = async () => page.$$eval('[data-layer]', (els) => Object.fromEntries(els.map((e) => [e.getAttribute('data-layer'), e.getAttribute('data-fill')])));
  out.fill = {};
  for (const id of out.overlays.filter((v) => v)) {
    await page.selectOption('select.overlay', id);
    out.fill[id] = await fills();
  }
  if (out.overlays.includes('error')) {
    await page.selectOption('select.overlay', 'error');
    out.errorLegend = await page.$$eval('.legend-row > span', (els) => els.map((e) => e.textContent));
    out.errorCaption = await page.textContent('.legend-caption');
  }
  await page.selectOption('select.overlay', out.overlays.includes('time') ? 'time' : 'code');
  out.legend = await page.$$eval('.legend-row > span', (els) => els.map((e) => e.textContent));
  await page.screenshot({ path: `${shots}-graph.png` });
  // The hottest layer's row in the hot-layers table selects it: the panel shows its code.
  const hot = await page.$('#hot-layers tbody tr a');
  out.hot = hot ? await hot.getAttribute('data-goto') : null;
  if (hot) {
    await hot.click();
  }
  out.panel = {
    title: await page.textContent('.panel h2'),
    stages: await page.$$eval('.panel .place', (els) => els.map((e) => e.getAttribute('data-stage'))),
    code: await page.$$eval('.panel pre.excerpt', (els) => els.map((e) => e.textContent)),
    functions: await page.$$eval('.panel .place .function', (els) => els.map((e) => e.textContent)),
  };
  out.selected = await page.$$eval('[data-layer].selected', (els) => els.map((e) => e.getAttribute('data-layer')));
  await page.screenshot({ path: `${shots}-panel.png` });
  // The pass slider, by keyboard as a user scrubs: Home (the first pass), then → until FuseOps,
  // then → once more; what each position marks, and that nothing moved.
  if (await page.$('.passes:not([hidden]) input.pass-slider')) {
    const geometry = () => page.evaluate(() => JSON.stringify(window.tvmxGraph.geometry().nodes));
    const marks = () => page.evaluate(() => ({
      caption: document.querySelector('.pass-caption').textContent,
      touched: [...document.querySelectorAll('[data-layer].pass-touched')].map((e) => e.getAttribute('data-layer')),
      lowered: [...document.querySelectorAll('[data-layer].pass-lowered')].map((e) => e.getAttribute('data-layer')),
      frames: [...document.querySelectorAll('rect.fusion')].map((e) => e.getAttribute('data-fused').split(' ')),
    }));
    const before = await geometry();
    const slider = page.locator('input.pass-slider');
    await slider.focus();
    await page.keyboard.press('Home');
    out.slider = { first: await marks(), steps: [] };
    const count = Number(await slider.getAttribute('max')) + 1;
    for (let i = 1; i < count; i++) {
      const t0 = await page.evaluate(() => performance.now());
      await page.keyboard.press('ArrowRight');
      const ms = await page.evaluate((t) => new Promise((r) => requestAnimationFrame(() => r(performance.now() - t))), t0);
      out.slider.steps.push(ms);
      const m = await marks();
      if (m.caption.includes(' FuseOps ') && !out.slider.fuse) {
        out.slider.fuse = m;
        await page.screenshot({ path: `${shots}-pass-slider-fuseops.png` });
      }
    }
    out.slider.last = await marks();
    out.slider.still = (await geometry()) === before;
    await page.click('.passes .pass-off');
    out.slider.off = await marks();
  }
  // The memory timeline: the peak said, the storages held there listed; a click on the band of
  // storage MEMORY_STORAGE at the peak selects its tensor's layer and names its allocation line.
  if (await page.$('#memory canvas')) {
    await page.locator('#memory').scrollIntoViewIfNeeded();
    out.memory = {
      heading: await page.textContent('#memory .tvmx-mem-heading'),
      listed: await page.$$eval('#memory button[data-storage]', (els) => els.map((e) => Number(e.getAttribute('data-storage')))),
      // what a run measured: the caption line and the line drawn over the bands
      caption: await page.textContent('#memory .tvmx-mem-measured'),
      measuredStatus: await page.getAttribute('#memory .tvmx-mem-measured', 'data-measured'),
      line: await page.evaluate(() => window.tvmxMemory.measuredLine()),
    };
    const [storage, step] = (process.env.MEMORY_CLICK || '0,0').split(',').map(Number);
    await page.locator('#memory').screenshot({ path: `${shots}-memory.png` });
    // Where Chart.js drew the band: asked again after a resize of the page (the graph's panel
    // opening narrows it, and Chart.js redraws on its next frame).
    for (let attempt = 0; attempt < 5; attempt++) {
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const at = await page.evaluate(([id, s]) => window.tvmxMemory.barAt(window.tvmxMemory.bandOf(id), s), [storage, step]);
      if (!at) {
        break;
      }
      await page.locator('#memory canvas').click({ position: { x: at.x, y: at.y } });
      out.memory.details = await page.textContent('#memory .tvmx-mem-details');
      if (out.memory.details.startsWith('Storage #')) {
        break;
      }
      await page.waitForTimeout(300);
    }
    out.memory.alloc = await page.getAttribute('#memory [data-alloc]', 'data-alloc');
    out.memory.selected = await page.$$eval('[data-layer].selected', (els) => els.map((e) => e.getAttribute('data-layer')));
    await page.locator('#memory').screenshot({ path: `${shots}-memory-clicked.png` });
  } else {
    out.memory = await page.textContent('#memory').catch(() => null);
  }
  // Search: typing a layer's name dims the others and selects the first match.
  const query = process.env.GRAPH_SEARCH;
  if (query) {
    await page.fill('input.search', query);
    out.matches = await page.$$eval('[data-layer].match', (els) => els.map((e) => e.getAttribute('data-layer')));
  }
  // Collapse all: the top-level groups stand for their layers; clicking one opens it again.
  if (await page.$('.group')) {
    await page.click('button.collapse-all');
    await page.evaluate(() => window.tvmxGraph.painted);
    out.collapsedLayers = (await page.$$('[data-layer]')).length;
    await page.click('.group.collapsed');
    await page.evaluate(() => window.tvmxGraph.painted);
    out.openedOne = (await page.$$('[data-layer]')).length;
    await page.click('button.expand-all');
    await page.evaluate(() => window.tvmxGraph.painted);
    out.expandedLayers = (await page.$$('[data-layer]')).length;
  }
  // Hovering a node shows its full name (one tooltip element, filled as text).
  if (process.env.GRAPH_HOVER) {
    await page.hover(`[data-layer="${process.env.GRAPH_HOVER}"]`);
    out.tip = await page.textContent('.tip');
  }
  out.text = await page.textContent('body');
  out.pwned = await page.evaluate(() => window.pwned ?? null);
  out.images = (await page.$$('img')).length;
  // Opened again in the same browser profile: the layouts the first page kept draw the opening
  // view without ELK, every box where ELK put it.
  await page.waitForFunction(() => Object.keys(localStorage).some((k) => k.startsWith('tvmx-layouts:')), null, { timeout: 60000 });
  const again = await context.newPage();
  await again.goto(url);
  await again.waitForSelector('[data-layer]', { timeout: 60000 });
  out.reopened = {
    laidOut: await again.evaluate(async () => (await window.tvmxGraph.painted).laidOut),
    opening: await placed(again),
  };
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
