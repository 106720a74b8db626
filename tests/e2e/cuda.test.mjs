/**
 * The extension on a CUDA bundle (tests/models/small_cnn_fp32.tflite compiled for target cuda
 * at test start; no GPU needed): from a line of a generated kernel to the TFLite layer, and the
 * hover of a kernel statement. Screenshots in test-artifacts/vscode/ (prefix cuda-).
 */
import assert from 'node:assert/strict';
import { join, relative } from 'node:path';
import { after, afterEach, before, test } from 'node:test';
import { BundleView, compileBundle } from './lib/bundle.mjs';
import { PYTHON } from './lib/paths.mjs';
import { emptyWorkspace, Session } from './lib/session.mjs';
import {
  activeTabTitle,
  ctrlClickRect,
  cursorPosition,
  goToLine,
  hoverRect,
  openFile,
  poll,
  screenshot,
  wordRectOnCursorLine,
} from './lib/workbench.mjs';

let session;
let bundle;
let folder;

before(async () => {
  session = await Session.start({
    workspace: (runDir) => {
      folder = emptyWorkspace(runDir);
      bundle = new BundleView(compileBundle(folder, { name: 'small_cnn_cuda', target: 'cuda' }));
      return folder;
    },
    settings: { 'tvmExplorer.pythonPath': PYTHON },
  });
});

let step = 0;
afterEach(async (t) => {
  step += 1;
  await screenshot(session.page, `cuda-end-${step}-${t.name.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 40)}`).catch(() => {});
});

after(async () => {
  const leftovers = await session?.close();
  assert.deepEqual(leftovers ?? [], [], 'processes left behind');
});

async function openAt(path, line) {
  await openFile(session.page, relative(folder, join(bundle.root, path)));
  await goToLine(session.page, line + 1);
}

const kernelSource = () => bundle.documents('code').find((p) => p.endsWith('.cu'));

test('ctrl-click in a CUDA kernel opens the model at CONV_2D', async () => {
  const { page } = session;
  const cuPath = kernelSource();
  assert.ok(cuPath, 'the bundle has no .cu document');
  const stmt = bundle.statementOf(cuPath, 'CONV_2D', { inLoop: false });
  const target = bundle.layerEntry(stmt.layers[0].id);
  await openAt(cuPath, stmt.line);
  await screenshot(page, 'cuda-01-kernel');
  const opened = await poll(async () => {
    if (!(await activeTabTitle(page)).includes('.cu')) return true;
    await ctrlClickRect(page, await wordRectOnCursorLine(page, stmt.word, stmt.character));
    return poll(async () => (await activeTabTitle(page)).includes('model.tflgraph'), { timeoutMs: 3000 });
  }, { timeoutMs: 90000, intervalMs: 1000 });
  assert.ok(opened, `ctrl-click on "${stmt.lineText.trim()}" did not open the model document`);
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return p && p.line === target.line + 1 ? p : undefined;
  });
  await screenshot(page, 'cuda-02-model-at-conv2d');
  assert.ok(pos, `cursor not on the layer entry (line ${target.line + 1}): ${JSON.stringify(await cursorPosition(page))}`);
  assert.match(target.text, /CONV_2D/);
});

test('hovering a CUDA kernel statement names its layer and the schedule step of its loop', async () => {
  const { page } = session;
  const cuPath = kernelSource();
  const stmt = bundle.statementOf(cuPath, 'CONV_2D', { inLoop: false });
  const layer = stmt.layers[0];
  await openAt(cuPath, stmt.line);
  const hover = page.locator('.monaco-hover:visible');
  const text = await poll(async () => {
    await hoverRect(page, await wordRectOnCursorLine(page, stmt.word, stmt.character));
    await hover.first().waitFor({ state: 'visible', timeout: 4000 }).catch(() => {});
    const t = (await hover.allTextContents()).join('\n');
    return t.includes(layer.opcode) ? t : undefined;
  }, { timeoutMs: 90000, intervalMs: 1000 });
  await screenshot(page, 'cuda-03-kernel-hover');
  assert.ok(text, `no hover naming ${layer.opcode} over "${stmt.lineText.trim()}"`);
  assert.match(text, new RegExp(`${layer.opcode}.*op ${layer.op_index}`));
  // The statement's loop was made by a dlight schedule step: the hover names it and its trace.
  assert.match(text, /schedule step \d+ of \w+ in traces\/\w+\.py, rule \w+/,
    'the hover does not name the schedule step that made the enclosing loop');
});
