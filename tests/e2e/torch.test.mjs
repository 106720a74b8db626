/**
 * The extension on a PyTorch bundle: tests/frontends/torch_nets.py's residual net, exported
 * with torch.export and compiled for target c at test start. Ctrl-click on a ReLU statement of
 * the generated C lands on the line of forward() that made it, then F12 on the model entry; the hover
 * names the module, its class and that line. Screenshots in test-artifacts/vscode/ (torch-).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { PYTHON, REPO } from './lib/paths.mjs';
import { bundleSuite, hoverNamingLayer, openAt } from './lib/suite.mjs';
import { activeTabTitle, actUntilTab, ctrlClickRect, cursorPosition, poll, screenshot, wordRectOnCursorLine } from './lib/workbench.mjs';

const NETS = join(REPO, 'tests', 'frontends', 'torch_nets.py');
const pt2 = join(mkdtempSync(join(tmpdir(), 'tvmx-torch-')), 'resnet.pt2');
execFileSync(PYTHON, ['-c', 'import sys; sys.path.insert(0, "tests"); import torch;'
  + ' from frontends import torch_nets; ep, _ = torch_nets.resnet_program(); torch.export.save(ep, sys.argv[1])', pt2],
{ cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300000 });

const suite = bundleSuite({ compile: { model: pt2, name: 'resnet' }, shots: 'torch-' });

function reluStatement() {
  return suite.bundle.statementOf('code/module.c', 'aten.relu.default', { inLoop: true });
}

test('ctrl-click on generated C lands on the forward() line; F12 goes on to the model entry', async () => {
  const { page } = suite.session;
  const stmt = reluStatement();
  await openAt(suite, 'code/module.c', stmt.line);
  await screenshot(page, 'torch-01-c-relu');
  // The definitions: the innermost line of model code first (issue 32), then the model
  // document's entries, then the calling frames; F12 steps through them ("Symbol 1 of N").
  const ctrlClick = async () => ctrlClickRect(page, await wordRectOnCursorLine(page, stmt.word, stmt.character));
  const inSource = await actUntilTab(page, 'torch_nets.py', ctrlClick, { timeoutMs: 90000, intervalMs: 1000, settleMs: 3000 });
  assert.ok(inSource, `ctrl-click did not open torch_nets.py (active tab: ${await activeTabTitle(page)})`);
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return p && p.line === 22 ? p : undefined;
  });
  await screenshot(page, 'torch-02-forward-line');
  assert.ok(pos, `cursor not on forward() line 22 of ${NETS}: ${JSON.stringify(await cursorPosition(page))}`);
  const f12 = () => page.keyboard.press('F12');
  const inModel = await actUntilTab(page, 'model.fxgraph', f12, { timeoutMs: 20000, intervalMs: 500, settleMs: 2000 });
  assert.ok(inModel, `F12 did not reach model.fxgraph (active tab: ${await activeTabTitle(page)})`);
  const entryText = suite.bundle.layerEntry(stmt.layers[0].id);
  const entry = await poll(async () => {
    const p = await cursorPosition(page);
    return p && p.line === entryText.line + 1 ? p : undefined;
  });
  await screenshot(page, 'torch-03-model-entry');
  assert.ok(entry, `not on the relu entry of the model document: ${JSON.stringify(await cursorPosition(page))}`);
});

test('hovering the statement names module, class and source line', async () => {
  const stmt = reluStatement();
  await openAt(suite, 'code/module.c', stmt.line);
  const text = await hoverNamingLayer(suite, stmt);
  await screenshot(suite.session.page, 'torch-04-hover');
  assert.match(text, /block\d\.act \(ReLU\) — torch_nets\.py:22/);
});
