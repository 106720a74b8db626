/**
 * Costs in VS Code, on tests/models/small_cnn_fp32.tflite compiled with `--profile` at test
 * start: the Hot Layers view (ranked by measured time; a click opens the layer and its
 * places), a cost hover, the cost code lenses, the gutter heat of the generated C, and pass
 * times in the pass view. Screenshots in test-artifacts/vscode/ (prefix costs-).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { PYTHON, REPO } from './lib/paths.mjs';
import { bundleSuite, hoverNamingLayer, openAt } from './lib/suite.mjs';
import { activeTabTitle, poll, runCommand, screenshot } from './lib/workbench.mjs';

const suite = bundleSuite({
  compile: { name: 'small_cnn_profiled', extra: ['--profile', '--repeat', '3'], cache: true },
  shots: 'costs-',
  // A second bundle, not profiled, named to sort first: Hot Layers must still list the
  // profiled bundle (and its slowest layer) first.
  prepare: (folder) => execFileSync(join(dirname(PYTHON), 'tvm-explorer'),
    ['compile', join(REPO, 'tests', 'models', 'small_cnn_fp32.tflite'), '-o', join(folder, 'a_unprofiled.bundle'), '--target', 'c'],
    { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'], timeout: 600000 }),
});

const costs = () => JSON.parse(readFileSync(join(suite.bundle.root, 'costs.json'), 'utf8'));

test('the model document has a cost code lens per layer', async () => {
  const { page } = suite.session;
  await openAt(suite, 'model.tflgraph', 0);
  const lens = page.locator('.contentWidgets .codelens-decoration', { hasText: ' ms · ' });
  await lens.first().waitFor({ state: 'visible', timeout: 60000 });
  const texts = await lens.allTextContents();
  await screenshot(page, 'costs-03-code-lenses');
  assert.ok(texts.some((t) => /\d+\.\d\d ms · \d+ % · \d+ C lines/.test(t)), texts.join('\n'));
});

test('Hot Layers lists the layers by measured time and a click opens the layer and its places', async () => {
  const { page } = suite.session;
  const ranked = [...costs().layers].sort((a, b) => b.time_ms - a.time_ms);
  await runCommand(page, 'TVM Explorer: Focus on Hot Layers View');
  const rows = page.locator('[id="workbench.view.extension.tvmExplorer"] .monaco-list-row[aria-label^="rank "]');
  await rows.first().waitFor({ state: 'visible', timeout: 90000 });
  await screenshot(page, 'costs-01-hot-layers');
  // Profiled bundles first (by time), then the unprofiled one.
  const bundles = (await page.locator('[id="workbench.view.extension.tvmExplorer"] .pane', { has: page.locator('.pane-header', { hasText: 'Hot Layers' }) })
    .locator('.monaco-list-row').allTextContents()).filter((t) => t.includes('.bundle'));
  console.log(`Hot Layers bundles: ${bundles.join(' | ')}`);
  assert.ok(bundles.length === 0 || bundles[0].includes('ms per run'), `an unprofiled bundle is listed first: ${bundles.join(' | ')}`);
  const first = await rows.first().getAttribute('aria-label');
  assert.match(first, new RegExp(`^rank 1: ${ranked[0].opcode} ${ranked[0].name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}, \\d+\\.\\d\\d ms · \\d+ %`));
  assert.equal(ranked[0].opcode, 'CONV_2D', 'a convolution is the slowest layer of the small CNN');
  await rows.first().click();
  const opened = await poll(async () => (await activeTabTitle(page)).includes('model.tflgraph'), { timeoutMs: 30000 });
  assert.ok(opened, 'the model document did not open');
  const peek = page.locator('.zone-widget .reference-zone-widget, .peekview-widget');
  await peek.first().waitFor({ state: 'visible', timeout: 30000 });
  await screenshot(page, 'costs-02-layer-and-places');
  await page.keyboard.press('Escape');
});

test('hovering a conv statement of the generated C shows its layer costs and kernel', async () => {
  const stmt = suite.bundle.cConv();
  await openAt(suite, stmt.path, stmt.line);
  const text = await hoverNamingLayer(suite, stmt);
  await screenshot(suite.session.page, 'costs-04-cost-hover');
  assert.match(text, /Cost\s*\d+\.\d\d ms · \d+ % · \d+ C lines/);
  // The layer's cost line (its only kernel's figures are the same, so no kernel line).
  assert.match(text, /Cost\s*\d+\.\d\d ms · \d+ %/);
  assert.match(text, /CPU time, median of 3 runs/);
});

test('the generated C has a heat mark in the gutter per kernel, the hottest red', async () => {
  const { page } = suite.session;
  const cPath = suite.bundle.documents('code').find((p) => p.endsWith('.c'));
  const hottest = [...costs().kernels].sort((a, b) => (b.time_ms ?? 0) - (a.time_ms ?? 0))[0];
  const start = suite.bundle.ranges(cPath).find((r) => r.kind === 'primfunc' && r.key === `prim:${hottest.name}`);
  const { line } = suite.bundle.position(cPath, start.start);
  await openAt(suite, cPath, line + 12);
  const marks = page.locator('.editor-instance .cgmr');
  const seen = await poll(async () => ((await marks.count()) > 0 ? true : undefined), { timeoutMs: 60000 });
  assert.ok(seen, 'no heat marks in the gutter');
  await openAt(suite, cPath, line);
  await poll(async () => ((await marks.count()) > 0 ? true : undefined), { timeoutMs: 30000 });
  await screenshot(page, 'costs-05-gutter-heat');
  const style = await marks.first().getAttribute('class');
  const background = await marks.first().evaluate((el) => getComputedStyle(el).backgroundImage);
  assert.match(background, /heat-4\.svg/, `the hottest kernel's mark is not red (${style}, ${background})`);
});

test('the pass view shows each pass compile time', async () => {
  const { page } = suite.session;
  await runCommand(page, 'TVM Explorer: Focus on Passes View');
  const item = page.getByRole('treeitem', { name: /^FuseOps\b/ });
  await item.first().waitFor({ state: 'visible', timeout: 60000 });
  const description = await item.first().locator('.label-description').textContent();
  await screenshot(page, 'costs-06-pass-times');
  assert.match(description ?? '', /#\d+ · \d+(\.\d)? (ms|s)$/);
});
