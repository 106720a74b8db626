/**
 * IR-native navigation and stage jumps in a real VS Code (code-server + chromium), against the
 * real language server, on tests/models/small_cnn_fp32.tflite compiled for target c at test
 * start: ctrl-click on a Relax variable use lands on its binding, and Go to Declaration walks
 * generated C -> final TIR -> the Relax binding calling the PrimFunc -> the model's CONV_2D in
 * three steps. Screenshots in test-artifacts/vscode/ (prefix nav-).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bundleSuite, openAt } from './lib/suite.mjs';
import {
  activeTabTitle,
  ctrlClickRect,
  cursorPosition,
  poll,
  runCommand,
  screenshot,
  wordRectOnCursorLine,
} from './lib/workbench.mjs';

const suite = bundleSuite({ shots: 'nav-' });

const fileName = (path) => path.split('/').pop();

/** Line text and offset helpers over a bundle document. */
function lines(path) {
  return suite.bundle.codePoints(path).join('').split('\n');
}

test('ctrl-click on a Relax variable use lands on its binding', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const fuse = bundle.documents('relax').find((p) => p.endsWith('-FuseOps.relax'));
  const text = lines(fuse);
  const mainAt = text.findIndex((l) => l.includes('def main('));
  const useLine = text.findIndex((l, i) => i > mainAt && /= fused_conv2d1\w*\((\w+),/.test(l));
  const arg = /= fused_conv2d1\w*\((\w+),/.exec(text[useLine])[1];
  const bindingLine = text.findIndex((l, i) => i > mainAt && new RegExp(`^\\s+${arg}(: .*?)? = R\\.call_tir\\(max_pool2d,`).test(l));
  assert.ok(useLine > 0 && bindingLine > 0 && bindingLine < useLine, `no use/binding of ${arg} in ${fuse}`);
  const column = text[useLine].indexOf(`(${arg},`) + 1;
  await openAt(suite, fuse, useLine, column);
  await screenshot(page, 'nav-01-relax-use');
  const pos = await poll(async () => {
    await ctrlClickRect(page, await wordRectOnCursorLine(page, arg, column));
    return poll(async () => {
      const p = await cursorPosition(page);
      return p && p.line === bindingLine + 1 ? p : undefined;
    }, { timeoutMs: 3000 });
  }, { timeoutMs: 90000, intervalMs: 1000 });
  await screenshot(page, 'nav-02-relax-binding');
  assert.ok(pos, `cursor not on the binding of ${arg} (line ${bindingLine + 1}): ${JSON.stringify(await cursorPosition(page))}`);
  assert.ok((await activeTabTitle(page)).includes(fileName(fuse)), 'left the document');
});

/** Runs Go to Declaration until the tab `name` is active with the cursor on `line` (0-based). */
async function declarationTo(name, line, shot) {
  const { page } = suite.session;
  const pos = await poll(async () => {
    await runCommand(page, 'Go to Declaration');
    return poll(async () => {
      const p = await cursorPosition(page);
      return (await activeTabTitle(page)).includes(name) && p?.line === line + 1 ? p : undefined;
    }, { timeoutMs: 4000 });
  }, { timeoutMs: 60000, intervalMs: 500 });
  await screenshot(page, shot);
  assert.ok(pos, `declaration did not reach ${name}:${line + 1}; at ${await activeTabTitle(page)} ${JSON.stringify(await cursorPosition(page))}`);
}

test('Go to Declaration walks C -> final TIR -> Relax binding -> CONV_2D in three steps', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const cPath = bundle.documents('code').find((p) => p.endsWith('.c'));
  const c = lines(cPath);
  const fnLine = c.findIndex((l) => /int32_t __tvm_ffi_fused_conv2d1_add1_relu1\(void\* self_handle.*\{$/.test(l));
  const storeLine = c.findIndex((l, i) => i > fnLine && /^\s+(\w+)\[[^\n]*\] = \(\1\[.*\*/.test(l));
  const storeName = /^\s+(\w+)\[/.exec(c[storeLine])[1];
  // Where the server should land: the same store in the final TIR, the call of the PrimFunc
  // in the last Relax document, the layer's entry in the model.
  const cStart = c.slice(0, storeLine).reduce((n, l) => n + l.length + 1, 0) + c[storeLine].indexOf(storeName);
  const stmt = bundle.ranges(cPath).find((r) => r.kind === 'stmt' && r.start === cStart);
  assert.ok(stmt, `no indexed store at ${cPath}:${storeLine + 1}`);
  const tirPath = bundle.documents('tir').at(-1);
  const tirStmt = bundle.ranges(tirPath).find((r) => r.key === stmt.key);
  const tirLine = bundle.position(tirPath, tirStmt.start).line;
  const relaxPath = bundle.documents('relax').at(-1);
  const relax = lines(relaxPath);
  const callLine = relax.findIndex((l) => /^\s+fused_conv2d1_add1_relu1\(/.test(l));
  const entry = bundle.layerEntry(stmt.origins[0][0]);
  assert.match(entry.text, /^op 2 CONV_2D/);

  await openAt(suite, cPath, storeLine, c[storeLine].indexOf(storeName) + 1);
  await screenshot(page, 'nav-03-c-conv-store');
  await declarationTo(fileName(tirPath), tirLine, 'nav-04-declaration-final-tir');
  await declarationTo(fileName(relaxPath), callLine, 'nav-05-declaration-relax-binding');
  await declarationTo('model.tflgraph', entry.line, 'nav-06-declaration-model-conv2d');
});
