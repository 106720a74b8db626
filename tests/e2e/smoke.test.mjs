/**
 * The harness and the extension without a working server: the workbench opens a plain file,
 * and a wrong `tvmExplorer.pythonPath` gives an error notification that names the fix.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { emptyWorkspace, Session } from './lib/session.mjs';
import { activeTabTitle, openFile, runCommand, screenshot } from './lib/workbench.mjs';

let session;
before(async () => {
  session = await Session.start({
    workspace: (runDir) => {
      const dir = emptyWorkspace(runDir);
      writeFileSync(join(dir, 'hello.txt'), 'Hello from the TVM Explorer e2e harness.\n');
      writeFileSync(join(dir, 'lonely.tir'), '@T.prim_func\ndef main(A: T.Buffer((4,), "float32")):\n    A[0] = T.float32(1)\n');
      return dir;
    },
    settings: { 'tvmExplorer.pythonPath': '/nonexistent/bin/python3' },
  });
});
after(async () => {
  const leftovers = await session?.close();
  assert.deepEqual(leftovers ?? [], [], 'processes left behind');
});

test('workbench opens a plain file', async () => {
  const { page } = session;
  await openFile(page, 'hello.txt');
  assert.match(await activeTabTitle(page), /hello\.txt/);
  await page.locator('.editor-instance .view-line', { hasText: 'Hello from' }).waitFor();
  await screenshot(page, '00-plain-file');
});

test('a wrong interpreter gives an error notification with the fix', async () => {
  const { page } = session;
  await openFile(page, 'lonely.tir');
  const toast = page.locator('.notifications-toasts .notification-toast', { hasText: 'Python interpreter not found' });
  await toast.first().waitFor({ state: 'visible', timeout: 60000 });
  const text = await toast.first().textContent();
  await page.locator('.statusbar-item', { hasText: 'TIR (TVMScript)' }).first().waitFor();
  await screenshot(page, '00-server-error-notification');
  assert.match(text, /nonexistent\/bin\/python3/);
  assert.match(text, /tvmExplorer\.pythonPath/);
  assert.match(text, /Open Settings/);
});

test('with a missing interpreter the pass view says so and how to fix it', async () => {
  const { page } = session;
  await runCommand(page, 'TVM Explorer: Focus on Passes View');
  const welcome = page.locator('.welcome-view-content', { hasText: 'Python interpreter for TVM Explorer was not found' });
  await welcome.waitFor({ timeout: 60000 });
  await screenshot(page, '00-pass-view-missing-python');
  assert.match(await welcome.innerText(), /tvmExplorer\.pythonPath/);
  assert.equal(await page.locator('.welcome-view-content', { hasText: 'No bundle found' }).count(), 0);
  assert.ok(await welcome.getByRole('button', { name: 'Open Settings' }).isVisible());
});
