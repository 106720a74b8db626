/**
 * IR-native navigation, stage jumps and the model graph in a real VS Code (code-server +
 * chromium), against the real language server, on tests/models/small_cnn_fp32.tflite compiled
 * for target c at test start (one session: the graph tests were graph.test.mjs).
 * Navigation: ctrl-click on a Relax variable use lands on its binding, and Go to Declaration
 * walks generated C -> final TIR -> the Relax binding calling the PrimFunc -> the model's
 * CONV_2D in three steps. Screenshots in test-artifacts/vscode/ (prefix nav-).
 * "Show Model Graph": the graph opens beside the generated C with a node for every layer; the
 * cursor on a convolution's statement in the C highlights that convolution's node, and moving
 * it to the dense layer's statement moves the highlight; clicking a node shows its Layer Places
 * and opens its generated code at a line of that layer; recompiled with --profile (the last
 * test: it changes the session's bundle), the graph is redrawn and its time overlay has data.
 * Screenshots prefixed graph-.
 * Memory: hovering an `alloc_storage` line of Relax names the layers whose tensors live in that
 * storage, when, and its share of the memory peak (nav-memory-alloc-storage-hover). "Show Memory
 * Timeline" draws bytes over steps with the peak marked; clicking the peak's band of a storage
 * shows its tensor's layer in Layer Places and opens the tensor's allocation line in Relax
 * (the last test: nav-memory-timeline-*).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { MODELS, PYTHON, REPO } from './lib/paths.mjs';
import { bundleSuite, openAt } from './lib/suite.mjs';
import {
  activeTabTitle,
  ctrlClickRect,
  cursorPosition,
  hoverRect,
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

// The model graph (after the navigation tests: its last test recompiles the bundle).

const CODE = 'code/module.c';

/** The graph app inside the webview (code-server nests it in two iframes). */
const graphFrame = (page) => page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');

async function highlighted(page) {
  return graphFrame(page).locator('[data-layer].highlight').evaluateAll((els) => els.map((e) => e.getAttribute('data-layer')));
}

/** The graph's highlighted nodes once there are some and all are layers of `stmt` (undefined
 * if that does not come within 30 s). */
async function highlightOf(page, stmt) {
  const want = stmt.layers.map((l) => String(l.id));
  return poll(async () => {
    const h = await highlighted(page);
    return h.length && h.every((id) => want.includes(id)) ? h : undefined;
  }, { timeoutMs: 30000 });
}

test('hovering an alloc_storage line names the layers whose tensors live in it, and when', async () => {
  const { page } = suite.session;
  const memory = JSON.parse(readFileSync(join(suite.bundle.root, 'memory.json'), 'utf8'));
  const doc = memory.analysed.document;
  const storage = memory.storages[0];
  const lines = readFileSync(join(suite.bundle.root, doc), 'utf8').split('\n');
  const line = lines.findIndex((l) => l.trimStart().startsWith(`${storage.var}: R.Any = R.memory.alloc_storage(`));
  assert.ok(line >= 0, `no alloc_storage of ${storage.var} in ${doc}`);
  await openAt(suite, doc, line);
  const hover = page.locator('.monaco-hover:visible');
  const text = await poll(async () => {
    await hoverRect(page, await wordRectOnCursorLine(page, 'alloc_storage'));
    await hover.first().waitFor({ state: 'visible', timeout: 4000 }).catch(() => {});
    const t = (await hover.allTextContents()).join('\n');
    return t.includes('Memory') ? t : undefined;
  }, { timeoutMs: 90000, intervalMs: 1000 });
  await screenshot(page, 'nav-memory-alloc-storage-hover');
  assert.ok(text, 'no memory hover over the alloc_storage line');
  assert.match(text, /storage #0: 42\.2 KiB \(planned by StaticPlanBlockMemory\), held from step 0 to step 3; 2 tensors in turn/);
  assert.match(text, /small_cnn_1\/conv2d_1\b/);
  assert.match(text, /small_cnn_1\/conv2d_1_2/);
  assert.match(text, /Held at the peak \(step 0, 87\.6 KiB\): 48 % of it/);
  assert.match(text, /Show Memory Timeline/); // the extension's link to the picture, beside it
});

test('the graph highlights the layer of the C statement under the cursor', async () => {
  const { page } = suite.session;
  const conv = suite.bundle.statementOf(CODE, 'CONV_2D');
  await openAt(suite, CODE, conv.line, conv.character);
  await runCommand(page, 'TVM Explorer: Show Model Graph');
  const graph = graphFrame(page);
  await graph.locator('[data-layer]').first().waitFor({ state: 'visible', timeout: 120000 });
  const ids = await graph.locator('[data-layer]').evaluateAll((els) => els.map((e) => e.getAttribute('data-layer')));
  assert.deepEqual(ids.map(Number).sort((a, b) => a - b), suite.bundle.index.layers.map((l) => l.id));
  const got = await highlightOf(page, conv);
  await screenshot(page, 'graph-01-cursor-in-c');
  const want = conv.layers.map((l) => String(l.id));
  assert.ok(got, `no node of ${want} highlighted for the C line "${conv.lineText.trim()}": ${await highlighted(page)}`);
  // The cursor moves to the dense layer's statement: the highlight follows.
  const dense = suite.bundle.statementOf(CODE, 'FULLY_CONNECTED');
  await openAt(suite, CODE, dense.line, dense.character);
  const moved = await highlightOf(page, dense);
  await screenshot(page, 'graph-02-cursor-moved');
  assert.ok(moved, `highlight did not follow to ${dense.layers.map((l) => l.id)}: ${await highlighted(page)}`);
});

test('clicking a node shows its Layer Places and jumps to its generated code', async () => {
  const { page } = suite.session;
  const pool = suite.bundle.index.layers.find((l) => l.opcode === 'MAX_POOL_2D');
  await graphFrame(page).locator(`[data-layer="${pool.id}"]`).click();
  const opened = await poll(async () => (await activeTabTitle(page)).includes('module.c'), { timeoutMs: 30000 });
  assert.ok(opened, `the generated code did not open: ${await activeTabTitle(page)}`);
  const lines = new Set(
    suite.bundle.ranges(CODE).filter((r) => r.origins.some(([id]) => id === pool.id)).map((r) => suite.bundle.position(CODE, r.start).line + 1),
  );
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return p && lines.has(p.line) ? p : undefined;
  }, { timeoutMs: 15000 });
  assert.ok(pos, `cursor ${JSON.stringify(await cursorPosition(page))} is on no line of ${pool.opcode} ${pool.id}`);
  const places = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Layer Places' }) });
  await places.getByText(/MAX_POOL_2D op \d+/).first().waitFor({ state: 'visible', timeout: 30000 });
  // The panel of the clicked layer lists its places with code.
  const panel = graphFrame(page).locator('.panel');
  assert.match(await panel.locator('h2').textContent(), /^MAX_POOL_2D/);
  assert.ok((await panel.locator('pre.excerpt').count()) >= 3, 'the layer panel shows no code excerpts');
  await screenshot(page, 'graph-03-node-clicked');
});

test('a recompiled bundle is drawn again, with the data it gained', async () => {
  const { page } = suite.session;
  const timeOption = () => graphFrame(page).locator('select.overlay option[value="time"]').textContent();
  assert.match(await timeOption(), /no data/);
  // The same bundle compiled again, now profiled: the server reloads it, the graph follows.
  execFileSync(join(dirname(PYTHON), 'tvm-explorer'),
    ['compile', join(MODELS, 'small_cnn_fp32.tflite'), '-o', suite.bundle.root, '--target', 'c', '--profile', '--repeat', '2'],
    { cwd: REPO, stdio: ['ignore', 'inherit', 'inherit'], timeout: 600000 });
  const redrawn = await poll(async () => !/no data/.test(await timeOption()), { timeoutMs: 90000, intervalMs: 1000 });
  assert.ok(redrawn, `the graph was not redrawn after the recompile: ${await timeOption()}`);
  await graphFrame(page).locator('select.overlay').selectOption('time');
  const fills = await graphFrame(page).locator('[data-layer]').evaluateAll((els) => els.filter((e) => e.getAttribute('data-fill')).length);
  assert.equal(fills, suite.bundle.index.layers.length, 'not every layer is colored by its measured time');
  await screenshot(page, 'graph-04-recompiled-profiled');
});

/** The memory timeline's frame (code-server nests each webview in two iframes; the graph's is
 * open too). */
async function memoryFrame(page) {
  return poll(async () => {
    for (const f of page.frames()) {
      if (await f.locator('#tvmx-memory canvas').count().catch(() => 0)) {
        return f;
      }
    }
    return undefined;
  }, { timeoutMs: 60000, intervalMs: 500 });
}

test('the memory timeline marks the peak, and a click on a band opens its layer and allocation line', async () => {
  const { page } = suite.session;
  const memory = JSON.parse(readFileSync(join(suite.bundle.root, 'memory.json'), 'utf8'));
  const doc = memory.analysed.document;
  await openAt(suite, doc, 0);
  await runCommand(page, 'TVM Explorer: Show Memory Timeline');
  const frame = await memoryFrame(page);
  assert.ok(frame, 'the memory timeline did not open');
  const heading = frame.locator('.tvmx-mem-heading');
  const peakKiB = (memory.peak.bytes / 1024).toFixed(1); // 87.6: no tie to round
  await heading.getByText(`Peak ${peakKiB} KiB`).waitFor({ state: 'visible', timeout: 60000 });
  assert.match(await heading.textContent(), new RegExp(`at step ${memory.peak.step} \\(`));
  // The storages held at the peak are listed below it, largest first, each a button.
  const held = memory.storages.filter((s) => s.first_step !== null && s.first_step <= memory.peak.step && memory.peak.step <= s.last_step);
  const listed = await frame.locator('.tvmx-mem-details button[data-storage]').evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-storage'))));
  assert.deepEqual([...listed].sort(), held.map((s) => s.id).sort());
  // What a run measured: the line of its bytes after each kernel call, with its caption; or, for
  // a bundle compiled without --profile, no line and a caption saying why. (The suite's bundle
  // is recompiled with --profile by the graph test before this one: measured, then.)
  const caption = frame.locator('.tvmx-mem-measured');
  assert.equal(await caption.getAttribute('data-measured'), memory.measured.status);
  const line = await frame.evaluate(() => window.tvmxMemory.measuredLine());
  if (memory.measured.status === 'measured') {
    assert.ok(line, 'no measured line drawn');
    assert.deepEqual(line.bytes, memory.measured.steps);
    assert.match(await caption.textContent(), /^measured on this machine: peak /);
  } else {
    assert.equal(line, null);
    assert.match(await caption.textContent(), /^not measured: compiled without --profile; tvm-explorer compile --profile/);
  }
  await screenshot(page, 'nav-memory-timeline-01-open');
  // A click on storage #0's band at the peak: its tensor there is the first convolution's output.
  const storage = memory.storages[0];
  const tensor = memory.tensors.find((t) => t.storage === storage.id && t.first_step <= memory.peak.step && memory.peak.step <= t.last_step);
  // Where Chart.js drew the band (asked again if the click landed before a redraw).
  const clicked = await poll(async () => {
    const at = await frame.evaluate(([id, step]) => window.tvmxMemory.barAt(window.tvmxMemory.bandOf(id), step), [storage.id, memory.peak.step]);
    if (!at) return undefined;
    await frame.locator('#tvmx-memory canvas').click({ position: { x: at.x, y: at.y } });
    return (await frame.locator('.tvmx-mem-details').textContent()).startsWith('Storage #') || undefined;
  }, { timeoutMs: 20000, intervalMs: 500 });
  assert.ok(clicked, 'no band of storage #0 at the peak to click');
  const relax = readFileSync(join(suite.bundle.root, doc), 'utf8').split('\n');
  const allocLine = relax.findIndex((l) => l.trimStart().startsWith(`${tensor.var}: `) && l.includes('alloc_tensor('));
  assert.ok(allocLine >= 0, `no alloc_tensor of ${tensor.var} in ${doc}`);
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return (await activeTabTitle(page)).includes(fileName(doc)) && p?.line === allocLine + 1 ? p : undefined;
  }, { timeoutMs: 30000 });
  assert.ok(pos, `not on the allocation line ${doc}:${allocLine + 1}: ${await activeTabTitle(page)} ${JSON.stringify(await cursorPosition(page))}`);
  const layer = suite.bundle.index.layers[tensor.layer];
  const places = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Layer Places' }) });
  await places.getByText(new RegExp(`${layer.opcode} op ${layer.op_index}\\b`)).first().waitFor({ state: 'visible', timeout: 30000 });
  const details = await frame.locator('.tvmx-mem-details').textContent();
  assert.match(details, new RegExp(`Storage #${storage.id} .* at step ${memory.peak.step}`));
  assert.ok(details.includes(layer.name), `the clicked band does not name ${layer.name}: ${details}`);
  await screenshot(page, 'nav-memory-timeline-02-band-clicked');
});
