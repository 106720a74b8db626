/**
 * "Show Model Graph" in a real VS Code on small_cnn compiled for c: the graph opens beside the
 * generated C with a node for every layer; the cursor on a convolution's statement in the C
 * highlights that convolution's node, and moving it to the dense layer's statement moves the
 * highlight; clicking a node shows its Layer Places and opens its generated code at a line of
 * that layer; recompiled with --profile, the graph is redrawn and its time overlay has data.
 * Screenshots in test-artifacts/vscode/ (prefix graph-).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { MODELS, PYTHON, REPO } from './lib/paths.mjs';
import { bundleSuite, openAt } from './lib/suite.mjs';
import { activeTabTitle, cursorPosition, poll, runCommand, screenshot } from './lib/workbench.mjs';

const suite = bundleSuite({ shots: 'graph-' });
const CODE = 'code/module.c';

/** The graph app inside the webview (code-server nests it in two iframes). */
const graphFrame = (page) => page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');

async function highlighted(page) {
  return graphFrame(page).locator('[data-layer].highlight').evaluateAll((els) => els.map((e) => e.getAttribute('data-layer')));
}

test('the graph highlights the layer of the C statement under the cursor', async () => {
  const { page } = suite.session;
  const conv = suite.bundle.statementOf(CODE, 'CONV_2D');
  await openAt(suite, CODE, conv.line, conv.character);
  await runCommand(page, 'TVM Explorer: Show Model Graph');
  const graph = graphFrame(page);
  await graph.locator('[data-layer]').first().waitFor({ state: 'visible', timeout: 120000 });
  const ids = await graph.locator('[data-layer]').evaluateAll((els) => els.map((e) => e.getAttribute('data-layer')));
  assert.deepEqual(ids.map(Number).sort((a, b) => a - b), suite.bundle.index.layers.map((l) => l.id));
  const want = conv.layers.map((l) => String(l.id));
  const got = await poll(async () => {
    const h = await highlighted(page);
    return h.length && h.every((id) => want.includes(id)) ? h : undefined;
  }, { timeoutMs: 30000 });
  await screenshot(page, 'graph-01-cursor-in-c');
  assert.ok(got, `no node of ${want} highlighted for the C line "${conv.lineText.trim()}": ${await highlighted(page)}`);
  // The cursor moves to the dense layer's statement: the highlight follows.
  const dense = suite.bundle.statementOf(CODE, 'FULLY_CONNECTED');
  await openAt(suite, CODE, dense.line, dense.character);
  const wantDense = dense.layers.map((l) => String(l.id));
  const moved = await poll(async () => {
    const h = await highlighted(page);
    return h.length && h.every((id) => wantDense.includes(id)) ? h : undefined;
  }, { timeoutMs: 30000 });
  await screenshot(page, 'graph-02-cursor-moved');
  assert.ok(moved, `highlight did not follow to ${wantDense}: ${await highlighted(page)}`);
});

test('clicking a node shows its Layer Places and jumps to its generated code', async () => {
  const { page } = suite.session;
  const pool = suite.bundle.index.layers.find((l) => l.opcode === 'MAX_POOL_2D');
  await graphFrame(page).locator(`[data-layer="${pool.id}"]`).click();
  const opened = await poll(async () => (await activeTabTitle(page)).includes('module.c'), { timeoutMs: 30000 });
  assert.ok(opened, `the generated code did not open: ${await activeTabTitle(page)}`);
  const lines = new Set(
    suite.bundle.ranges(CODE).filter((r) => r.origins.some(([id]) => id === pool.id)).map((r) => suite.bundle.position(CODE, r.start).line + 1),
  );
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return p && lines.has(p.line) ? p : undefined;
  }, { timeoutMs: 15000 });
  assert.ok(pos, `cursor ${JSON.stringify(await cursorPosition(page))} is on no line of ${pool.opcode} ${pool.id}`);
  const places = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Layer Places' }) });
  await places.getByText(/MAX_POOL_2D op \d+/).first().waitFor({ state: 'visible', timeout: 30000 });
  // The panel of the clicked layer lists its places with code.
  const panel = graphFrame(page).locator('.panel');
  assert.match(await panel.locator('h2').textContent(), /^MAX_POOL_2D/);
  assert.ok((await panel.locator('pre.excerpt').count()) >= 3, 'the layer panel shows no code excerpts');
  await screenshot(page, 'graph-03-node-clicked');
});

test('a recompiled bundle is drawn again, with the data it gained', async () => {
  const { page } = suite.session;
  const timeOption = () => graphFrame(page).locator('select.overlay option[value="time"]').textContent();
  assert.match(await timeOption(), /no data/);
  // The same bundle compiled again, now profiled: the server reloads it, the graph follows.
  execFileSync(join(dirname(PYTHON), 'tvm-explorer'),
    ['compile', join(MODELS, 'small_cnn_fp32.tflite'), '-o', suite.bundle.root, '--target', 'c', '--profile', '--repeat', '2'],
    { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'], timeout: 600000 });
  const redrawn = await poll(async () => !/no data/.test(await timeOption()), { timeoutMs: 90000, intervalMs: 1000 });
  assert.ok(redrawn, `the graph was not redrawn after the recompile: ${await timeOption()}`);
  await graphFrame(page).locator('select.overlay').selectOption('time');
  const fills = await graphFrame(page).locator('[data-layer]').evaluateAll((els) => els.filter((e) => e.getAttribute('data-fill')).length);
  assert.equal(fills, suite.bundle.index.layers.length, 'not every layer is colored by its measured time');
  await screenshot(page, 'graph-04-recompiled-profiled');
});
