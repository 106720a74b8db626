/**
 * The Numerics view on a bundle compiled with `--numerics-unfused` from the ground-truth model
 * (CONV_2D → ADD → RELU → RESHAPE → FULLY_CONNECTED, built here) against a reference copy
 * whose ADD bias was changed: the view lists the layers in graph order with op 1 ADD marked as
 * the first divergence; clicking it opens the model document at that layer, where a warning
 * sits. A second bundle, bisected with a planted add→subtract pass, shows that pass marked as
 * the culprit in the Passes view. A third, fused build (--numerics only) moved into the
 * workspace after the view first drew gets listed too, and its hidden conv's tooltip names the
 * fused kernel and --numerics-unfused. Screenshots in test-artifacts/vscode/ (prefix numerics-).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { PYTHON, REPO } from './lib/paths.mjs';
import { bundleSuite } from './lib/suite.mjs';
import { activeTabTitle, cursorPosition, passDiffStatus, poll, runCommand, screenshot } from './lib/workbench.mjs';

const models = mkdtempSync(join(tmpdir(), 'tvmx-numerics-'));
execFileSync(PYTHON, ['-c', 'import sys; from pathlib import Path; sys.path.insert(0, "tests");'
  + ' from numerics.planted import planted_reference; planted_reference(Path(sys.argv[1]), "add/bias")', models],
{ cwd: REPO });

const suite = bundleSuite({
  compile: {
    model: join(models, 'gt.tflite'),
    name: 'planted',
    target: 'llvm',
    extra: ['--numerics-unfused', '--reference', join(models, 'gt_planted.tflite')],
  },
  shots: 'numerics-',
  prepare: (folder) => {
    // A second bundle, written by `tvm-explorer bisect` with the planted add→subtract pass.
    execFileSync(join(dirname(PYTHON), 'tvm-explorer'),
      ['bisect', join(models, 'gt.tflite'), '--pipeline', 'planted_pipes:with_planted_add', '-o', join(folder, 'bisected.bundle')],
      { cwd: join(REPO, 'tests', 'numerics'), stdio: ['ignore', 'inherit', 'inherit'], timeout: 600000 });
  },
});

/** Runs a view's focus command, retrying while the workbench is still registering views. */
async function focusView(page, title) {
  const done = await poll(async () => {
    try {
      await runCommand(page, title);
      return true;
    } catch {
      await page.keyboard.press('Escape');
      return false;
    }
  }, { timeoutMs: 120000, intervalMs: 2000 });
  assert.ok(done, `"${title}" never became available`);
}

test('the Numerics view marks the first divergence and opens its layer', async () => {
  const { page } = suite.session;
  await focusView(page, 'TVM Explorer: Focus on Numerics View');
  const first = page.getByRole('treeitem', { name: /^op 1 ADD add\/output: .*first divergence/ });
  await first.first().waitFor({ state: 'visible', timeout: 90000 });
  const rows = await page.locator('.pane-body [role="treeitem"]').allTextContents();
  const ops = rows.map((r) => /op (\d+) /.exec(r)?.[1]).filter(Boolean);
  assert.deepEqual(ops.slice(-5), ['0', '1', '2', '3', '4'], `layers not in graph order: ${JSON.stringify(rows)}`);
  await screenshot(page, 'numerics-01-view');
  await first.first().click();
  const opened = await poll(async () => (await activeTabTitle(page)).includes('model.tflgraph'), { timeoutMs: 30000 });
  assert.ok(opened, 'clicking the layer did not open the model document');
  const text = suite.bundle.codePoints('model.tflgraph').join('');
  const line = text.slice(0, text.indexOf('op 1 ADD')).split('\n').length;
  const pos = await poll(async () => ((await cursorPosition(page))?.line === line ? true : undefined), { timeoutMs: 15000 });
  assert.ok(pos, `cursor not on line ${line}: ${JSON.stringify(await cursorPosition(page))}`);
  // The divergent layer carries a warning squiggle in the model document.
  const squiggle = page.locator('.editor-instance .squiggly-warning');
  await squiggle.first().waitFor({ state: 'attached', timeout: 30000 });
  await screenshot(page, 'numerics-02-layer-with-warning');
});

test('a layer the fused build did not observe names the kernel that hid it and --numerics-unfused', async () => {
  const { page } = suite.session;
  await focusView(page, 'TVM Explorer: Focus on Numerics View');
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Numerics' }) });
  await pane.locator('.monaco-list-row', { hasText: 'planted' }).first().waitFor({ state: 'visible', timeout: 90000 });
  // A fused build (--numerics only: conv and add hidden inside one kernel with the relu) that
  // finishes after the view first drew: moved into the workspace whole, as a copy would be.
  const built = join(dirname(suite.folder), 'unobserved-fused.bundle');
  execFileSync(join(dirname(PYTHON), 'tvm-explorer'),
    ['compile', join(models, 'gt.tflite'), '-o', built, '--target', 'c', '--numerics'],
    { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'], timeout: 600000 });
  renameSync(built, join(suite.folder, 'unobserved-fused.bundle'));
  // The fused bundle is listed last, below the planted bundle's layers: the list renders only
  // the rows on screen, so walk to the last row with the keyboard (the list follows the focus).
  const fused = pane.locator('.monaco-list-row', { hasText: 'unobserved-fused' });
  const reached = await poll(async () => {
    await focusView(page, 'TVM Explorer: Focus on Numerics View');
    await page.keyboard.press('End');
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press('ArrowUp');
    }
    return (await fused.count()) > 0;
  }, { timeoutMs: 90000, intervalMs: 2000 });
  await screenshot(page, 'numerics-03a-fused-bundle-rows');
  assert.ok(reached, `the fused bundle is not listed: ${(await pane.locator('.monaco-list-row').allTextContents()).join(' | ')}`);
  const hidden = page.getByRole('treeitem', { name: /^op 0 CONV_2D .*not observed/ });
  await hidden.first().waitFor({ state: 'visible', timeout: 90000 });
  await hidden.first().hover();
  const tip = page.locator('.workbench-hover, .monaco-hover').filter({ hasText: 'numerics-unfused' });
  const shown = await poll(async () => ((await tip.count()) > 0 ? (await tip.first().textContent()) : undefined), { timeoutMs: 15000, intervalMs: 300 });
  await screenshot(page, 'numerics-03-hidden-layer-tooltip');
  assert.ok(shown, 'no tooltip naming --numerics-unfused on the hidden conv');
  const text = shown.replace(/\u00a0/g, ' ');
  assert.ok(/fused kernel fused_conv2d_add_add_relu with op 1 ADD, op 2 RELU/.test(text), text);
});

test('the Passes view marks the culprit pass of a bisected bundle and opens its diff', async () => {
  const { page } = suite.session;
  await focusView(page, 'TVM Explorer: Focus on Passes View');
  const culprit = page.getByRole('treeitem', { name: /^PlantedAddToSubtract, relax pass 3, changed the IR, culprit found by bisect/ });
  await culprit.first().waitFor({ state: 'visible', timeout: 90000 });
  await culprit.first().scrollIntoViewIfNeeded();
  await screenshot(page, 'numerics-03-culprit-pass');
  await culprit.first().click();
  const diff = page.locator('.editor-instance .monaco-diff-editor');
  await diff.waitFor({ state: 'visible' });
  await diff.locator('.editor.modified .view-line').first().waitFor();
  const status = await poll(() => passDiffStatus(page));
  assert.ok(status?.includes('PlantedAddToSubtract'), `the pass diff shows "${status}", not the culprit`);
  // The modified side may still be painting the previous text: wait for it, do not read once.
  const modified = await poll(async () => {
    const lines = (await diff.locator('.editor.modified .view-line').allTextContents()).join('\n');
    return lines.includes('R.subtract') ? lines : undefined;
  }, { timeoutMs: 15000 });
  assert.ok(modified, 'the diff does not show the planted subtract');
  await screenshot(page, 'numerics-04-culprit-diff');
});
