/**
 * The extension on a PyTorch bundle: tests/frontends/torch_nets.py's residual net, exported
 * with torch.export and compiled for target c at test start. Ctrl-click on a ReLU statement of
 * the generated C offers the model entry and the line of forward() that made it; the hover
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
import { activeTabTitle, ctrlClickRect, poll, screenshot, wordRectOnCursorLine } from './lib/workbench.mjs';

const NETS = join(REPO, 'tests', 'frontends', 'torch_nets.py');
const pt2 = join(mkdtempSync(join(tmpdir(), 'tvmx-torch-')), 'resnet.pt2');
execFileSync(PYTHON, ['-c', 'import sys; sys.path.insert(0, "tests"); import torch;'
  + ' from frontends import torch_nets; ep, _ = torch_nets.resnet_program(); torch.export.save(ep, sys.argv[1])', pt2],
{ cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300000 });

const suite = bundleSuite({ compile: { model: pt2, name: 'resnet' }, shots: 'torch-' });

function reluStatement() {
  return suite.bundle.statementOf('code/module.c', 'aten.relu.default', { inLoop: true });
}

test('ctrl-click on generated C offers the model entry and the forward() line, and opens it', async () => {
  const { page } = suite.session;
  const stmt = reluStatement();
  await openAt(suite, 'code/module.c', stmt.line);
  await screenshot(page, 'torch-01-c-relu');
  // Several definitions (the model entry and the source line): VS Code peeks them.
  const peek = page.locator('.peekview-widget');
  const listed = await poll(async () => {
    await ctrlClickRect(page, await wordRectOnCursorLine(page, stmt.word, stmt.character));
    await peek.first().waitFor({ state: 'visible', timeout: 4000 }).catch(() => {});
    const text = (await page.locator('.peekview-widget .monaco-list').allTextContents()).join('\n');
    return text.includes('torch_nets.py') && text.includes('model.fxgraph') ? text : undefined;
  }, { timeoutMs: 90000, intervalMs: 1500 });
  assert.ok(listed, 'the peek of definitions does not list model.fxgraph and torch_nets.py');
  await screenshot(page, 'torch-02-peek-definitions');
  // Open the source line from the peek: the file of the user's forward().
  await page.locator('.peekview-widget .monaco-list-row', { hasText: 'torch_nets.py' }).first().dblclick();
  const opened = await poll(async () => (await activeTabTitle(page)).includes('torch_nets.py'), { timeoutMs: 20000 });
  assert.ok(opened, `torch_nets.py did not open (active tab: ${await activeTabTitle(page)})`);
  await screenshot(page, 'torch-03-forward-line');
  assert.ok(NETS);
});

test('hovering the statement names module, class and source line', async () => {
  const stmt = reluStatement();
  await openAt(suite, 'code/module.c', stmt.line);
  const text = await hoverNamingLayer(suite, stmt);
  await screenshot(suite.session.page, 'torch-04-hover');
  assert.match(text, /block\d\.act \(ReLU\) — torch_nets\.py:22/);
});
