/**
 * Restricted Mode (real Workspace Trust, the workspace not trusted): a PyTorch .pt2 is never
 * offered to be compiled or bisected. The workspace holds evil.pt2 (its weight is a pickle that
 * touches a marker file outside the workspace) and an ONNX file beside it.
 * - The explorer's context menu offers Compile Model… and Bisect Model… on the .onnx, not on
 *   the .pt2.
 * - The .pt2 still opens as its model document (read from the archive's JSON, without
 *   PyTorch), but its code lens says compiling is not offered and links to Workspace Trust, and
 *   the title bar has no Compile button.
 * - Compile Model… and Bisect Model… from the command palette on it are refused with a message
 *   saying why and how to trust the workspace; nothing asks for a target, no CLI runs, the
 *   pickle never ran and no bundle appears.
 * Screenshots: test-artifacts/vscode/pt2-restricted-*.png.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { evilPt2Session } from './lib/pt2.mjs';
import { REPO } from './lib/paths.mjs';
import { activeTabTitle, poll, runCommand, screenshot } from './lib/workbench.mjs';

let session;
let folder;
let marker;

before(async () => {
  ({ session, folder, marker } = await evilPt2Session({
    'security.workspace.trust.enabled': true,
    'security.workspace.trust.startupPrompt': 'never',
    'security.workspace.trust.banner': 'always',
  }, (dir) => copyFileSync(join(REPO, 'tests', 'models', 'light_squeezenet.onnx'), join(dir, 'light.onnx'))));
});

after(async () => {
  const leftovers = await session?.close();
  assert.deepEqual(leftovers ?? [], [], 'processes left behind');
});

/** The labels of the explorer context menu of `name`. */
async function contextMenu(page, name) {
  const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: name }).first();
  const labels = page.locator('.context-view .action-label');
  const shown = await poll(async () => {
    await row.click({ button: 'right' });
    if (await labels.first().waitFor({ state: 'visible', timeout: 3000 }).then(() => true, () => false)) return true;
    await page.keyboard.press('Escape');
    return false;
  }, { timeoutMs: 90000, intervalMs: 500 });
  assert.ok(shown, `no context menu on ${name}`);
  return (await labels.allInnerTexts()).map((t) => t.trim()).filter(Boolean);
}

test('the explorer offers Compile and Bisect on the .onnx, not on the .pt2', async () => {
  const { page } = session;
  await runCommand(page, 'View: Show Explorer');
  // The extension registers its menus once active: the .onnx menu shows when it is.
  const onnx = await poll(async () => {
    const items = await contextMenu(page, 'light.onnx');
    await page.keyboard.press('Escape');
    return items.includes('Compile Model…') ? items : undefined;
  }, { timeoutMs: 90000, intervalMs: 1000 });
  assert.ok(onnx, 'the .onnx has no Compile Model… (the extension is not active?)');
  assert.ok(onnx.includes('Bisect Model…'), onnx.join(', '));
  const pt2 = await contextMenu(page, 'evil.pt2');
  await screenshot(page, 'pt2-restricted-01-context-menu');
  await page.keyboard.press('Escape');
  assert.ok(pt2.length > 3, pt2.join(', '));
  assert.ok(!pt2.includes('Compile Model…'), `offered on the .pt2: ${pt2.join(', ')}`);
  assert.ok(!pt2.includes('Bisect Model…'), `offered on the .pt2: ${pt2.join(', ')}`);
});

test('the .pt2 model document shows, without a Compile action', async () => {
  const { page } = session;
  await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'evil.pt2' }).first().dblclick();
  const head = page.locator('.editor-instance .view-line', { hasText: '# PyTorch ExportedProgram evil.pt2' });
  await head.waitFor({ timeout: 90000 });
  assert.match(await activeTabTitle(page), /evil\.pt2/);
  const lens = page.locator('.codelens-decoration', { hasText: 'Restricted Mode: compiling a PyTorch file is not offered' });
  await lens.waitFor({ timeout: 30000 });
  assert.equal(await page.locator('.codelens-decoration', { hasText: 'Compile this model' }).count(), 0);
  assert.equal(await page.locator('.editor-actions [aria-label*="Compile Model"]').count(), 0);
  await screenshot(page, 'pt2-restricted-02-model-document');
});

for (const command of ['Compile Model', 'Bisect Model']) {
  test(`${command}… from the palette is refused on the .pt2`, async () => {
    const { page } = session;
    await runCommand(page, `TVM Explorer: ${command}…`); // the model document is the active editor
    const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'not offered for evil.pt2 in Restricted Mode' });
    await toast.waitFor({ timeout: 30000 });
    const text = (await toast.innerText()).replace(/\s+/g, ' ');
    assert.match(text, new RegExp(`${command} is not offered`));
    assert.match(text, /Trust this workspace first/);
    assert.ok(await toast.getByRole('button', { name: 'Manage Workspace Trust' }).isVisible());
    assert.equal(await page.locator('.quick-input-widget .quick-input-title', { hasText: 'target' }).isVisible(), false);
    await screenshot(page, `pt2-restricted-03-${command.split(' ')[0].toLowerCase()}-refused`);
    await toast.locator('.codicon-notifications-clear, .codicon-close').first().click().catch(() => {});
    assert.equal(existsSync(marker), false, 'the pickle ran');
    assert.equal(existsSync(join(folder, 'evil.bundle')), false);
    assert.equal(existsSync(join(folder, 'evil.bisect.bundle')), false);
  });
}
