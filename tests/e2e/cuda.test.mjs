/**
 * The extension on a CUDA bundle (tests/models/small_cnn_fp32.tflite compiled for target cuda
 * with --sass at test start; no GPU needed): from a line of a generated kernel to the TFLite
 * layer, the hover of a kernel statement, and the kernel's machine code (SASS): its hover and
 * the ctrl-click to its CUDA line. Screenshots in test-artifacts/vscode/ (prefix cuda-).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bundleSuite, ctrlClickToModel, hoverNamingLayer, openAt } from './lib/suite.mjs';
import { activeTabTitle, ctrlClickRect, cursorPosition, poll, screenshot, wordRectOnCursorLine } from './lib/workbench.mjs';

const suite = bundleSuite({
  compile: { name: 'small_cnn_cuda', target: 'cuda', extra: ['--sass'], cache: true },
  shots: 'cuda-',
});

/** The generated CUDA source and its CONV_2D statement (kernels have no host loops around
 * their statements, so any statement whose only origin is a CONV_2D layer). */
function convStatement() {
  const cuPath = suite.bundle.documents('code').find((p) => p.endsWith('.cu'));
  assert.ok(cuPath, 'the bundle has no .cu document');
  return { cuPath, stmt: suite.bundle.statementOf(cuPath, 'CONV_2D', { inLoop: false }) };
}

test('ctrl-click in a CUDA kernel opens the model at CONV_2D', async () => {
  const { page } = suite.session;
  const { cuPath, stmt } = convStatement();
  await openAt(suite, cuPath, stmt.line);
  await screenshot(page, 'cuda-01-kernel');
  const { target, pos } = await ctrlClickToModel(suite, stmt, '.cu');
  await screenshot(page, 'cuda-02-model-at-conv2d');
  assert.ok(pos, `cursor not on the layer entry (line ${target.line + 1}): ${JSON.stringify(await cursorPosition(page))}`);
  assert.match(target.text, /CONV_2D/);
});

test('hovering a CUDA kernel statement names its layer and the schedule step of its loop', async () => {
  const { cuPath, stmt } = convStatement();
  const layer = stmt.layers[0];
  await openAt(suite, cuPath, stmt.line);
  const text = await hoverNamingLayer(suite, stmt);
  await screenshot(suite.session.page, 'cuda-03-kernel-hover');
  assert.match(text, new RegExp(`${layer.opcode}.*op ${layer.op_index}`));
  // The statement's loop was made by a dlight schedule step: the hover names it and its trace.
  assert.match(text, /schedule step \d+ of \w+ in traces\/\w+\.py, rule \w+/,
    'the hover does not name the schedule step that made the enclosing loop');
});

test('an FFMA of the conv kernel in SASS: the hover names the conv and its registers, ctrl-click opens its CUDA line', async () => {
  const { page } = suite.session;
  const sassPath = suite.bundle.documents('code').find((p) => p.endsWith('.sass'));
  assert.ok(sassPath, 'compiled with --sass, the bundle has no .sass document');
  const lines = suite.bundle.codePoints(sassPath).join('').split('\n');
  const kernel = lines.indexOf('fused_conv2d_add_relu_kernel:');
  const line = lines.findIndex((l, i) => i > kernel && / FFMA /.test(l));
  assert.ok(kernel >= 0 && line > kernel, 'no FFMA in the conv kernel');
  const cudaLine = Number(/device\.cu:(\d+)/.exec(lines[line])[1]);
  await openAt(suite, sassPath, line);
  const stmt = { word: 'FFMA', character: 0, lineText: lines[line], layers: [{ opcode: 'CONV_2D' }] };
  const text = await hoverNamingLayer(suite, stmt);
  await screenshot(page, 'cuda-04-sass-hover');
  assert.match(text, /Machine code of fused_conv2d_add_relu_kernel on sm_90: \d+ registers/);
  const landed = await poll(async () => {
    if ((await activeTabTitle(page)).includes('.sass')) {
      await ctrlClickRect(page, await wordRectOnCursorLine(page, 'FFMA'));
    }
    const p = await cursorPosition(page);
    return (await activeTabTitle(page)).includes('device.cu') && p?.line === cudaLine ? p : undefined;
  }, { timeoutMs: 60000, intervalMs: 1500 });
  await screenshot(page, 'cuda-05-sass-to-cuda-line');
  assert.ok(landed, `ctrl-click on the FFMA did not land on device.cu line ${cudaLine}: ${JSON.stringify(await cursorPosition(page))}`);
});
