/**
 * The hostile .pt2 of the trust suites (tests/frontends/hostile_pt2.py: its weight is a pickle
 * that touches a marker file) and Compile Model… on it from the explorer's context menu.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { PYTHON, REPO } from './paths.mjs';
import { emptyWorkspace, Session } from './session.mjs';
import { poll, runCommand } from './workbench.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Writes the hostile archive to `path`; its pickle, if it ever runs, creates `marker`. */
export function writeEvilPt2(path, marker) {
  execFileSync(PYTHON, [join(REPO, 'tests', 'frontends', 'hostile_pt2.py'), path, marker],
    { cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300000 });
}

/** A code-server session on an empty workspace holding evil.pt2: `{ session, folder, marker }`
 * (`marker`, outside the workspace, exists once the pickle ran). `settings` are added;
 * `addFiles(folder)` may put more files into the workspace. */
export async function evilPt2Session(settings = {}, addFiles = () => {}) {
  const out = {};
  out.session = await Session.start({
    workspace: (runDir) => {
      out.folder = emptyWorkspace(runDir);
      out.marker = join(runDir, 'PICKLE-RAN');
      writeEvilPt2(join(out.folder, 'evil.pt2'), out.marker);
      addFiles(out.folder);
      return out.folder;
    },
    settings: { 'tvmExplorer.pythonPath': PYTHON, ...settings },
  });
  return out;
}

/** Right-click evil.pt2 → Compile Model…, target c, no options, the default folder. */
export async function compileEvil(page) {
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

