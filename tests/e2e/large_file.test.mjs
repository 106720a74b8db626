/**
 * A generated file above the editor's size limit, in a real VS Code: tests/models/
 * mobilenet_v3_small_int8.tflite compiled with --target llvm has a ~21 MB code/host.ll, above
 * the 10 MB `workbench.editorLargeFileConfirmation` of a remote window (code-server), where
 * VS Code shows "The file is not displayed in the text editor because it is very large". The
 * extension must say so, naming the file and its size, and offer to open it anyway (raising the
 * limit for the workspace) or to show one function with hovers answered by the server.
 * Screenshots in test-artifacts/vscode/large-*.png.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { bundleSuite, hoverNamingLayer } from './lib/suite.mjs';
import { cursorPosition, goToLine, openFile, poll, runCommand, screenshot } from './lib/workbench.mjs';

const suite = bundleSuite({
  compile: { model: 'mobilenet_v3_small_int8.tflite', name: 'mnv3_llvm', target: 'llvm', cache: true },
  shots: 'large-',
});
const HOST = 'code/host.ll';

/** Opens a workspace file with Quick Open (the editor may show no text lines for it). */
async function quickOpen(page, rel) {
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+P');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(rel);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: rel.split('/').pop() }).first().waitFor();
  await page.keyboard.press('Enter');
  await page.locator('.tab.active', { hasText: rel.split('/').pop() }).waitFor({ timeout: 30000 });
}

const notice = (page) => page.locator('.notification-toast', { hasText: /host\.ll is [\d.]+ MB, above this window's 10 MB limit/ }).first();

test('a host.ll above the editor limit is named with its size, and one of its functions answers hovers', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const mb = statSync(join(bundle.root, HOST)).size / 2 ** 20;
  assert.ok(mb > 10, `host.ll is only ${mb.toFixed(1)} MB`);
  await runCommand(page, 'TVM Explorer: Focus on Passes View');
  await page.getByRole('treeitem', { name: /mnv3_llvm/ }).first().waitFor({ timeout: 120000 });
  await quickOpen(page, relative(suite.folder, join(bundle.root, HOST)));
  const toast = notice(page);
  await toast.waitFor({ timeout: 30000 });
  const text = await toast.textContent();
  assert.match(text, new RegExp(`mnv3_llvm\\.bundle/code/host\\.ll is ${mb.toFixed(1)} MB`));
  assert.match(text, /workbench\.editorLargeFileConfirmation/);
  await screenshot(page, 'large-01-notice');
  // A statement of a conv inside a compute function, and the function holding it.
  const stmt = bundle.statementOf(HOST, 'CONV_2D', { inLoop: false });
  const lines = readFileSync(join(bundle.root, HOST), 'utf8').split('\n');
  let start = stmt.line;
  while (!lines[start].startsWith('define ')) start--;
  const name = /@"?([^\s("]+)"?\(/.exec(lines[start])[1];
  await toast.getByRole('button', { name: 'Show One Function…' }).click();
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(name);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: `lines ${start + 1}–` }).first();
  await row.waitFor();
  await row.click();
  await page.locator('.tab.active', { hasText: `${name}.ll` }).waitFor({ timeout: 30000 });
  // The view's line 1 is the function's define line; the statement keeps its column.
  await goToLine(page, stmt.line - start + 1, stmt.character + 1);
  const hover = await hoverNamingLayer(suite, { ...stmt, line: stmt.line - start });
  assert.match(hover, /CONV_2D/);
  await screenshot(page, 'large-02-function-hover');
});

test('Open Anyway raises the workspace limit and shows the whole file', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  await runCommand(page, 'View: Close All Editors');
  await quickOpen(page, relative(suite.folder, join(bundle.root, HOST)));
  const toast = notice(page);
  await toast.waitFor({ timeout: 30000 }); // told again: the tab was closed and opened anew
  await toast.getByRole('button', { name: 'Open Anyway' }).click();
  const define = page.locator('.editor-instance .view-line', { hasText: /define|target datalayout|ModuleID/ }).first();
  await define.waitFor({ timeout: 60000 });
  const settings = await poll(() => {
    try {
      return JSON.parse(readFileSync(join(suite.folder, '.vscode', 'settings.json'), 'utf8'));
    } catch {
      return undefined;
    }
  }, { timeoutMs: 10000 });
  const mb = statSync(join(bundle.root, HOST)).size / 2 ** 20;
  assert.equal(settings['workbench.editorLargeFileConfirmation'], Math.ceil(mb) + 1);
  await screenshot(page, 'large-03-open-anyway');
  // Back to VS Code's own limit for the next test.
  writeFileSync(join(suite.folder, '.vscode', 'settings.json'), '{}\n');
  await new Promise((r) => setTimeout(r, 1500));
});

test('a Layer Places row in host.ll opens the file at the place, with no notice', async () => {
  // The extension's own opens load the document first, which VS Code then shows whatever the
  // limit (with its large-file optimizations): telling "not displayed" there would be wrong.
  const { session, bundle } = suite;
  const { page } = session;
  await runCommand(page, 'View: Close All Editors');
  const stmt = bundle.statementOf(HOST, 'CONV_2D', { inLoop: false });
  const layer = stmt.layers[0];
  const entry = bundle.layerEntry(layer.id);
  await openFile(page, relative(suite.folder, join(bundle.root, entry.path)));
  await goToLine(page, entry.line + 1, entry.character + entry.text.indexOf(layer.opcode) + 1);
  await runCommand(page, 'TVM Explorer: Show Layer Places');
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Layer Places' }) });
  const row = pane.locator('.monaco-list-row', { hasText: /^host\.ll:\d+/ }).first();
  await poll(async () => {
    if (await row.isVisible().catch(() => false)) return true;
    const stage = pane.locator('.monaco-list-row', { hasText: /^Generated/ }).first();
    if (await stage.isVisible().catch(() => false) && (await stage.getAttribute('aria-expanded')) === 'false') await stage.click();
    return false;
  }, { timeoutMs: 60000 });
  const label = (await row.textContent()).replace(/\u00a0/g, ' ');
  const line = Number(/^host\.ll:(\d+)/.exec(label)[1]); // 1-based
  await row.click();
  await page.locator('.tab.active', { hasText: 'host.ll' }).waitFor({ timeout: 30000 });
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return p && p.line === line ? p : undefined;
  }, { timeoutMs: 30000 });
  assert.ok(pos, `host.ll is not shown at line ${line}: ${JSON.stringify(await cursorPosition(page))}`);
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(await notice(page).isVisible().catch(() => false), false, 'a "not displayed" notice for a file on screen');
  await screenshot(page, 'large-04-place-shown');
});
