/**
 * "Reduce Model…" in a real VS Code: from the explorer's context menu on an ONNX model that TVM
 * cannot import (tests/reduce/models.py: an LpNormalization inside ten nodes), the reduction
 * runs behind a progress notification (probes, size tried, best so far), then the report opens
 * and names the one node kept. Screenshots in test-artifacts/vscode/reduce-*.png.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { PYTHON, REPO } from './lib/paths.mjs';
import { workspaceSuite } from './lib/suite.mjs';
import { activeTabTitle, poll, screenshot } from './lib/workbench.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const suite = workspaceSuite({
  fill: (folder) => {
    execFileSync(PYTHON, ['-c', 'import sys; sys.path.insert(0, ".");'
      + ' from tests.reduce.models import onnx_unsupported; onnx_unsupported(sys.argv[1])', join(folder, 'odd.onnx')],
    { cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'], timeout: 120000 });
  },
});

test('Reduce Model… shows its progress and opens the report of the one node kept', async () => {
  const { page } = suite.session;
  const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'odd.onnx' }).first();
  await row.waitFor({ state: 'visible', timeout: 60000 });
  // The extension's menus appear once it is installed and loaded: open the menu until they do.
  const item = page.locator('.context-view .action-label', { hasText: 'Reduce Model…' });
  await poll(async () => {
    await row.click({ button: 'right' });
    if (await item.waitFor({ state: 'visible', timeout: 3000 }).then(() => true, () => false)) return true;
    await page.keyboard.press('Escape');
    return false;
  }, { timeoutMs: 90000, intervalMs: 1000 });
  await screenshot(page, 'reduce-0-menu');
  await sleep(200);
  await item.click();
  const title = (text) => page.locator('.quick-input-widget .quick-input-title', { hasText: text });
  await title('the failure to keep').waitFor();
  await sleep(200);
  await page.keyboard.press('Enter'); // the failure it has
  await title('Relax pipeline').waitFor();
  await sleep(200);
  await page.keyboard.press('Enter'); // TVM's pipeline
  const progress = page.locator('.notifications-toasts .notification-toast', { hasText: 'Reducing odd.onnx' });
  const seen = await progress.first().waitFor({ timeout: 60000 }).then(() => true, () => false);
  if (seen) await screenshot(page, 'reduce-1-progress');
  await poll(async () => /odd\.reduced\.report\.md/.test(await activeTabTitle(page)), { timeoutMs: 300000 });
  await page.locator('.editor-instance .view-line', { hasText: 'LpNormalization' }).first().waitFor();
  await screenshot(page, 'reduce-2-report');
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'Reduced' });
  assert.match(await toast.first().innerText(), /10 → 1 \(1-minimal\)/);
  assert.ok(existsSync(join(suite.folder, 'odd.reduced.onnx')));
  assert.ok(existsSync(join(suite.folder, 'odd.reduced.repro.py')));
});
