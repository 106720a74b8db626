/** Harness check without the language server: the workbench opens a plain file. */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { emptyWorkspace, Session } from './lib/session.mjs';
import { activeTabTitle, openFile, screenshot } from './lib/workbench.mjs';

let session;
before(async () => {
  session = await Session.start({
    workspace: (runDir) => {
      const dir = emptyWorkspace(runDir);
      writeFileSync(join(dir, 'hello.txt'), 'Hello from the TVM Explorer e2e harness.\n');
      return dir;
    },
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
