/**
 * A .pt2 whose weight is a pickle that runs code (tests/frontends/hostile_pt2.py: it touches a
 * marker file outside the workspace), compiled from the explorer's context menu. The CLI refuses
 * it; a modal dialog names the file, the entry and the risk. Cancel: nothing ran, the failure
 * says why. "Load and Run Its Code": the compile is repeated with --trust-pickle and the bundle
 * opens. Screenshots in test-artifacts/vscode/pt2-trust-*.png.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { compileEvil, evilPt2Session } from './lib/pt2.mjs';
import { poll, screenshot } from './lib/workbench.mjs';

let session;
let folder;
let marker;

before(async () => {
  ({ session, folder, marker } = await evilPt2Session());
});

after(async () => {
  const leftovers = await session?.close();
  assert.deepEqual(leftovers ?? [], [], 'processes left behind');
});

function dialog(page) {
  return page.locator('.monaco-dialog-box');
}

test('a refused pickle asks in a modal dialog; Cancel loads nothing', async () => {
  const { page } = session;
  await compileEvil(page);
  const box = dialog(page);
  await box.waitFor({ state: 'visible', timeout: 180000 });
  const text = (await box.innerText()).replace(/\s+/g, ' ');
  await screenshot(page, 'pt2-trust-01-dialog');
  assert.match(text, /Python pickle/);
  assert.match(text, /runs whatever code/);
  assert.match(text, /evil\.pt2: archive entry data\/weights\/weight_0 \(weight 'stem\.weight'\)/);
  assert.ok(await box.getByRole('button', { name: 'Load and Run Its Code' }).isVisible());
  assert.equal(existsSync(marker), false, 'the pickle ran before the user was asked');
  await box.getByRole('button', { name: 'Cancel' }).click();
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'compile failed' });
  await toast.waitFor({ timeout: 30000 });
  assert.match(await toast.innerText(), /--trust-pickle/);
  await screenshot(page, 'pt2-trust-02-cancelled');
  assert.equal(existsSync(marker), false, 'the pickle ran although the user said Cancel');
  assert.equal(existsSync(join(folder, 'evil.bundle')), false);
  await toast.locator('.codicon-notifications-clear, .codicon-close').first().click().catch(() => {});
});

test('"Load and Run Its Code" repeats the compile with --trust-pickle', async () => {
  const { page } = session;
  await compileEvil(page);
  const box = dialog(page);
  await box.waitFor({ state: 'visible', timeout: 180000 });
  await box.getByRole('button', { name: 'Load and Run Its Code' }).click();
  const ok = await poll(async () => existsSync(join(folder, 'evil.bundle', 'manifest.json')),
    { timeoutMs: 300000, intervalMs: 1000 });
  await screenshot(page, 'pt2-trust-03-trusted');
  assert.ok(ok, 'no bundle after the user trusted the file');
  assert.equal(existsSync(marker), true, 'the trusted pickle did not run');
});
