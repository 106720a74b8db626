/**
 * Extract Reproducer and Compare With Bundle… in code-server, on two bundles compiled at test
 * start (small_cnn fp32 and int8, target c). Screenshots in test-artifacts/vscode/ (prefix repro-).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { test } from 'node:test';
import { BundleView, compileBundle } from './lib/bundle.mjs';
import { workspaceSuite } from './lib/suite.mjs';
import { activeTabTitle, goToLine, openFile, poll, screenshot } from './lib/workbench.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const s = workspaceSuite({
  fill: (folder, _runDir, state) => {
    state.fp32 = new BundleView(compileBundle(folder, { name: 'small_cnn_fp32', cache: true }));
    state.int8 = new BundleView(compileBundle(folder, { model: 'small_cnn_int8.tflite', name: 'small_cnn_int8', cache: true }));
  },
  shots: 'repro-',
});

/** Opens the command palette and runs a command by its title (retrying: the server may still
 * be loading the bundles). */
async function palette(page, title) {
  await page.keyboard.press('Escape');
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first().waitFor({ timeout: 30000 });
  await sleep(150);
  await page.keyboard.press('Enter');
}

test('Extract Reproducer on a PrimFunc opens a script next to the bundle', async () => {
  const { page } = s.session;
  const tir = s.fp32.documents('tir')[0];
  const lines = s.fp32.codePoints(tir).join('').split('\n');
  const line = lines.findIndex((l) => l.includes('def fused_conv2d_add_relu('));
  assert.ok(line > 0, 'no fused_conv2d_add_relu in the first TIR document');
  await openFile(page, relative(s.folder, join(s.fp32.root, tir)));
  await goToLine(page, line + 1, 10);
  await screenshot(page, 'repro-01-primfunc');
  const opened = await poll(async () => {
    await palette(page, 'TVM Explorer: Extract Reproducer');
    return poll(async () => (await activeTabTitle(page)).includes('.repro.py'), { timeoutMs: 8000 });
  }, { timeoutMs: 90000, intervalMs: 1000 });
  assert.ok(opened, `no reproducer opened (active tab: ${await activeTabTitle(page)})`);
  await page.locator('.editor-instance .view-line', { hasText: '# Reproducer: kernel fused_conv2d_add_relu' })
    .first().waitFor({ timeout: 15000 });
  await screenshot(page, 'repro-02-script-open');
  const scripts = readdirSync(dirname(s.fp32.root)).filter((f) => f.endsWith('.repro.py'));
  assert.deepEqual(scripts, ['small_cnn_fp32.bundle.fused_conv2d_add_relu.repro.py']);
  const text = readFileSync(join(dirname(s.fp32.root), scripts[0]), 'utf8');
  assert.match(text, /# Layer\(s\):  op 0 CONV_2D small_cnn_1\/conv2d_1/);
  assert.match(text, /^class Kernels:$/m);
});

test('Compare With Bundle… lists the layers and opens a split diff of one', async () => {
  const { page } = s.session;
  await openFile(page, relative(s.folder, join(s.fp32.root, 'model.tflgraph')));
  await palette(page, 'TVM Explorer: Compare With Bundle…');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'small_cnn_int8.bundle' }).first()
    .waitFor({ timeout: 30000 });
  await input.fill('small_cnn_int8');
  await sleep(200);
  await page.keyboard.press('Enter');
  const conv = page.getByRole('treeitem', { name: /op 0 CONV_2D/ });
  await conv.first().waitFor({ timeout: 60000 });
  await sleep(500);
  await screenshot(page, 'repro-03-comparison-tree');
  // The summary row counts the matched layers; the tree renders only the rows that fit the
  // view's height (the sidebar holds several views), so the rows are checked for order.
  const summary = await page.getByRole('treeitem', { name: /^8 layers \(matched/ }).first().textContent();
  assert.ok(summary, 'no "8 layers (matched …)" summary row');
  const rows = await page.getByRole('treeitem', { name: /^op \d+ / }).allTextContents();
  const ops = rows.map((r) => Number(/^op (\d+) /.exec(r)[1]));
  assert.ok(rows.length >= 4 && ops.every((op, i) => op === i), `rows not in graph order: ${JSON.stringify(rows)}`);
  // int8 code differs in every layer but the reshape, whose own lines are one copy loop either
  // way (tests/compare/test_compare.py says the same)
  assert.ok(rows.every((r) => r.includes(/RESHAPE/.test(r) ? 'same' : 'changed')), JSON.stringify(rows));
  assert.ok(rows[0].includes('small_cnn_1/conv2d_1'), rows[0]);
  await conv.first().click();
  await page.locator('.monaco-diff-editor').first().waitFor({ timeout: 30000 });
  await poll(async () => (await activeTabTitle(page)).includes('op 0 CONV_2D'), { timeoutMs: 15000 });
  await page.locator('.monaco-diff-editor .view-line', { hasText: 'code/module.c: fused_conv2d_add_relu' })
    .first().waitFor({ timeout: 30000 });
  await sleep(500);
  await screenshot(page, 'repro-04-layer-diff');
  assert.match(await activeTabTitle(page), /op 0 CONV_2D small_cnn_1\/conv2d_1/);
  assert.ok(existsSync(s.int8.root));
});
