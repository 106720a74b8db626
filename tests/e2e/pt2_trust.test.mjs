/**
 * A .pt2 whose weight is a pickle that runs code (tests/frontends/hostile_pt2.py: it touches a
 * marker file outside the workspace), compiled from the explorer's context menu. The CLI refuses
 * it; a modal dialog names the file, the entry and the risk. Cancel: nothing ran, the failure
 * says why. "Load and Run Its Code": the compile is repeated with --trust-pickle and the bundle
 * opens. Screenshots in test-artifacts/vscode/pt2-trust-*.png.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { PYTHON, REPO } from './lib/paths.mjs';
import { emptyWorkspace, Session } from './lib/session.mjs';
import { poll, runCommand, screenshot } from './lib/workbench.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let session;
let folder;
let marker;

before(async () => {
  session = await Session.start({
    workspace: (runDir) => {
      folder = emptyWorkspace(runDir);
      marker = join(runDir, 'PICKLE-RAN');
      execFileSync(PYTHON, [join(REPO, 'tests', 'frontends', 'hostile_pt2.py'), join(folder, 'evil.pt2'), marker],
        { cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300000 });
      return folder;
    },
    settings: { 'tvmExplorer.pythonPath': PYTHON },
  });
});

after(async () => {
  const leftovers = await session?.close();
  assert.deepEqual(leftovers ?? [], [], 'processes left behind');
});

/** Right-click evil.pt2 → Compile Model…, target c, no options, the default folder. */
async function compileEvil(page) {
  await runCommand(page, 'View: Show Explorer');
  const row = page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'evil.pt2' }).first();
  const item = page.locator('.context-view .action-label', { hasText: 'Compile Model…' });
  // Right after start the explorer may still be settling: right-click again until the menu shows.
  const opened = await poll(async () => {
    await row.click({ button: 'right' });
    if (await item.waitFor({ state: 'visible', timeout: 3000 }).then(() => true, () => false)) return true;
    await page.keyboard.press('Escape');
    return false;
  }, { timeoutMs: 90000, intervalMs: 500 });
  assert.ok(opened, 'the explorer context menu of evil.pt2 has no Compile Model…');
  await sleep(200);
  await item.click();
  const input = page.locator('.quick-input-widget input');
  const shown = await input.waitFor({ state: 'visible', timeout: 5000 }).then(() => true, () => false);
  if (!shown && await item.isVisible().catch(() => false)) await page.keyboard.press('Enter');
  await input.waitFor({ state: 'visible' });
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'c' }).first().waitFor();
  await input.fill('c');
  await sleep(200);
  await page.keyboard.press('Enter'); // target
  await page.locator('.quick-input-widget .quick-input-title', { hasText: 'options' }).waitFor();
  await sleep(200);
  await page.keyboard.press('Enter'); // no options
  await page.locator('.quick-input-widget .quick-input-title', { hasText: 'bundle folder' }).waitFor();
  await sleep(200);
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
}

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
