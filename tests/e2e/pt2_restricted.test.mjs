/**
 * Restricted Mode (real Workspace Trust, the workspace not trusted): Compile Model… on a .pt2
 * whose weight is a pickle that runs code. The CLI refuses it and no dialog offers to run it:
 * the failure says it is not offered in Restricted Mode, and the pickle never ran.
 * Screenshot: test-artifacts/vscode/pt2-restricted-01.png.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { compileEvil, evilPt2Session } from './lib/pt2.mjs';
import { screenshot } from './lib/workbench.mjs';

let session;
let folder;
let marker;

before(async () => {
  ({ session, folder, marker } = await evilPt2Session({
    'security.workspace.trust.enabled': true,
    'security.workspace.trust.startupPrompt': 'never',
    'security.workspace.trust.banner': 'always',
  }));
});

after(async () => {
  const leftovers = await session?.close();
  assert.deepEqual(leftovers ?? [], [], 'processes left behind');
});

test('in Restricted Mode a refused pickle is never offered to run', async () => {
  const { page } = session;
  await compileEvil(page);
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'compile failed' });
  await toast.waitFor({ timeout: 180000 });
  const text = (await toast.innerText()).replace(/\s+/g, ' ');
  await screenshot(page, 'pt2-restricted-01');
  assert.match(text, /archive entry data\/weights\/weight_0/);
  assert.match(text, /not offered in Restricted Mode/);
  assert.equal(await page.locator('.monaco-dialog-box').count(), 0, 'a dialog offered to run the pickle');
  assert.equal(existsSync(marker), false, 'the pickle ran');
  assert.equal(existsSync(join(folder, 'evil.bundle')), false);
});
