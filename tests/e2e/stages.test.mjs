/**
 * Stages side by side in a real VS Code (issue 29), on tests/models/small_cnn_int8.tflite
 * compiled at test start (its kernels fuse layers, and some layers lower to two kernels):
 * "Open Stages Side by Side" opens the model document, the last Relax, the final TIR and the
 * generated C in four columns; the cursor in TIR highlights the same layer's lines in the three
 * others, the cursor on a fused C kernel highlights all its layers in the model, and a line
 * without origin clears the highlights. The expected lines come from the bundle's index.json.
 * Screenshots in test-artifacts/vscode/stages-*.png.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bundleSuite, openAt } from './lib/suite.mjs';
import { goToLineInFocused, poll, runCommand, screenshot } from './lib/workbench.mjs';

const suite = bundleSuite({ compile: { model: 'small_cnn_int8.tflite', name: 'small_cnn_int8', cache: true }, shots: 'stages-' });

/** 1-based lines of `path` covered by the ranges `keep(range)` accepts. */
function linesOf(bundle, path, keep) {
  const out = new Set();
  for (const r of bundle.ranges(path).filter(keep)) {
    const a = bundle.position(path, r.start).line;
    const b = bundle.position(path, r.end).line;
    for (let l = a; l <= b; l++) out.add(l + 1);
  }
  return out;
}

const holds = (layerIds) => (r) => r.origins.some(([id]) => layerIds.includes(id));

/** Per editor column: its tab title and the visible lines painted with the stage highlight
 * (the theme's find-match background, which nothing else paints here). */
async function highlighted(page) {
  return page.evaluate(() => {
    // The theme's colours are CSS variables of the workbench element, not of the body.
    const probe = document.createElement('div');
    probe.style.backgroundColor = 'var(--vscode-editor-findMatchHighlightBackground)';
    document.querySelector('.monaco-workbench').appendChild(probe);
    const color = getComputedStyle(probe).backgroundColor;
    probe.remove();
    if (!color || color === 'rgba(0, 0, 0, 0)') throw new Error('the theme has no find-match highlight colour');
    return [...document.querySelectorAll('.editor-group-container')].map((group) => {
      const editor = group.querySelector('.monaco-editor');
      const tops = new Set(
        [...(editor?.querySelectorAll('.view-overlays .cdr') ?? [])]
          .filter((el) => getComputedStyle(el).backgroundColor === color)
          .map((el) => el.parentElement.style.top),
      );
      const lines = [...(editor?.querySelectorAll('.margin-view-overlays > div') ?? [])]
        .filter((row) => tops.has(row.style.top))
        .map((row) => Number(row.querySelector('.line-numbers')?.textContent));
      return { title: group.querySelector('.tab.active')?.textContent?.trim() ?? '', lines: lines.sort((a, b) => a - b) };
    });
  });
}

/** Puts the cursor of editor column `column` (1-based) on a 1-based line and column. */
async function cursorIn(page, column, line, character = 1) {
  await page.keyboard.press('Escape');
  await page.keyboard.press(`Control+${column}`);
  const focused = await poll(async () => page.locator('.editor-group-container').nth(column - 1)
    .evaluate((g) => g.classList.contains('active') && g.contains(document.activeElement)) || undefined);
  assert.ok(focused, `editor column ${column} did not take the focus`);
  await goToLineInFocused(page, line, character);
}

/** Waits until `check(columns)` holds for the painted columns; returns them (or the last seen). */
async function until(page, check) {
  let last;
  const ok = await poll(async () => {
    last = await highlighted(page);
    return check(last) ? last : undefined;
  }, { timeoutMs: 20000, intervalMs: 250 });
  return ok ?? last;
}

/** Waits until the server has loaded the bundle (the Passes view lists it); closes the side bar. */
async function bundleLoaded(page) {
  await runCommand(page, 'TVM Explorer: Focus on Passes View');
  const passes = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Passes' }) });
  await passes.locator('.monaco-list-row', { hasText: 'small_cnn_int8.bundle' }).first().waitFor({ timeout: 180000 });
  await runCommand(page, 'View: Close Primary Side Bar');
}

function assertWithin(column, expected, what) {
  assert.ok(column.lines.length > 0, `${what}: nothing highlighted in ${column.title}`);
  const stray = column.lines.filter((l) => !expected.has(l));
  assert.deepEqual(stray, [], `${what}: ${column.title} highlights lines ${stray} that are not the layer's`);
}

test('the cursor in TIR highlights its layer in the model, Relax and C columns; in C, the layers of the fused kernel in the model', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const [model] = bundle.documents('model');
  const relax = bundle.documents('relax').at(-1);
  const tir = bundle.documents('tir').at(-1);
  const c = bundle.documents('code').find((p) => p.endsWith('.c'));
  // Open the stages once the bundle is loaded, once (run again while it opens, the command's
  // last focus would take keys meant for the palette), and wait for the status bar to say they
  // are in sync.
  await bundleLoaded(page);
  await runCommand(page, 'TVM Explorer: Open Stages Side by Side');
  await page.locator('.statusbar-item', { hasText: 'Stages in sync' }).waitFor({ timeout: 60000 });
  const titles = (await highlighted(page)).map((col) => col.title);
  assert.deepEqual(titles.map((t) => t.split(/\s/)[0]), [model, relax, tir, c].map((p) => p.split('/').pop()));

  // A MAX_POOL_2D statement of the final TIR (the innermost of a pooling loop nest).
  const stmt = bundle.statementOf(tir, 'MAX_POOL_2D');
  const pool = stmt.origins.map(([id]) => id);
  await cursorIn(page, 3, stmt.line + 1, stmt.character + 1);
  const fromTir = await until(page, (cols) => [0, 1, 3].every((i) => cols[i].lines.length > 0));
  await screenshot(page, 'stages-01-cursor-in-tir');
  assertWithin(fromTir[0], linesOf(bundle, model, (r) => r.kind === 'layer' && holds(pool)(r)), 'TIR → model');
  assertWithin(fromTir[1], linesOf(bundle, relax, (r) => r.kind === 'binding' && holds(pool)(r)), 'TIR → Relax');
  assertWithin(fromTir[3], linesOf(bundle, c, (r) => r.kind === 'stmt' && holds(pool)(r)), 'TIR → C');

  // The definition line of the C kernel that fuses MAX_POOL_2D (op 1) and CONV_2D (op 2)'s input.
  const cText = bundle.codePoints(c).join('').split('\n');
  const header = cText.findIndex((l) => l.startsWith('TVM_DLL int32_t __tvm_ffi_fused_max_pool2d_dequantize3(') && l.endsWith('{'));
  assert.ok(header >= 0, 'no fused max_pool2d + dequantize kernel in the C code');
  await cursorIn(page, 4, header + 1, 20);
  const entries = [1, 2].map((op) => bundle.index.layers.findIndex((l) => l.op_index === op));
  const entryLines = entries.map((id) => bundle.layerEntry(id).line + 1);
  const fromC = await until(page, (cols) => entryLines.every((l) => cols[0].lines.includes(l)));
  await screenshot(page, 'stages-02-cursor-in-fused-c-kernel');
  assertWithin(fromC[0], linesOf(bundle, model, (r) => r.kind === 'layer' && holds(entries)(r)), 'C → model');
  assert.ok(entryLines.every((l) => fromC[0].lines.includes(l)), `C → model: entries ${entryLines} not both highlighted: ${fromC[0].lines}`);
  assertWithin(fromC[1], linesOf(bundle, relax, (r) => r.kind === 'binding' && holds(entries)(r)), 'C → Relax');
  assertWithin(fromC[2], linesOf(bundle, tir, (r) => holds(entries)(r)), 'C → TIR');

  // A line with no origin (the C file's first line) clears every highlight.
  await cursorIn(page, 4, 1, 1);
  const cleared = await until(page, (cols) => cols.every((col) => col.lines.length === 0));
  await screenshot(page, 'stages-03-no-origin-cleared');
  assert.ok(cleared.every((col) => col.lines.length === 0), `highlights left: ${JSON.stringify(cleared)}`);
});

/** The innermost range of `path` whose origins are exactly the layer of `op` (its model entry in
 * the model document, else a statement or binding computing it), with its 1-based position. */
function placeOfOp(bundle, path, op, kinds) {
  const id = bundle.index.layers.findIndex((l) => l.op_index === op);
  const found = bundle.ranges(path).filter((r) => kinds.includes(r.kind) && r.origins.length === 1 && r.origins[0][0] === id
    && (r.kind !== 'binding' || r.link?.startsWith('prim:'))); // a binding computing it, not its bookkeeping
  assert.ok(found.length, `no ${kinds} of op ${op} in ${path}`);
  const r = found.at(-1); // the innermost of the last nest: a loop's statement, not its header
  const at = bundle.position(path, r.start);
  return { layers: [id], line: at.line + 1, character: at.character + 1 };
}

test('the stages sync from every start document, in every direction, and again on focusing a column', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const docs = [bundle.documents('model')[0], bundle.documents('relax').at(-1), bundle.documents('tir').at(-1),
    bundle.documents('code').find((p) => p.endsWith('.c'))];
  // Where each column's cursor goes: a place of a layer of its own, so that every move changes
  // what is highlighted (the model entry of op 5, the call of op 3's kernel, a store of op 2, a
  // C line of op 1).
  const places = [
    placeOfOp(bundle, docs[0], 5, ['layer']),
    placeOfOp(bundle, docs[1], 3, ['binding']),
    placeOfOp(bundle, docs[2], 2, ['stmt']),
    placeOfOp(bundle, docs[3], 1, ['stmt']),
  ];
  const kinds = [['layer'], ['binding'], ['stmt', 'loop', 'block', 'primfunc'], ['stmt']];
  /** Every column but `source` highlights lines of `layers` only, and some. */
  const check = (cols, source, layers, what) => {
    for (let i = 0; i < 4; i++) {
      if (i === source) continue;
      assertWithin(cols[i], linesOf(bundle, docs[i], (r) => kinds[i].includes(r.kind) && holds(layers)(r)), `${what}, column ${i + 1}`);
    }
  };
  const names = ['model', 'relax', 'tir', 'code'];
  await bundleLoaded(page);
  for (const [s, start] of docs.entries()) {
    await runCommand(page, 'View: Close All Editor Groups');
    await openAt(suite, start, places[s].line - 1, places[s].character - 1);
    await runCommand(page, 'TVM Explorer: Open Stages Side by Side');
    // At once: the cursor of the document it was started from, shown in the three others.
    const opened = await until(page, (cols) => cols.length === 4 && cols.every((c, i) => i === s || c.lines.length > 0));
    await screenshot(page, `stages-1${s}-started-from-${names[s]}`);
    assert.deepEqual(opened.map((col) => col.title.split(/\s/)[0]), docs.map((p) => p.split('/').pop()));
    check(opened, s, places[s].layers, `started from ${names[s]}`);
    // The cursor moved in the next column: the others (the start document's too) follow.
    const next = (s + 1) % 4;
    await cursorIn(page, next + 1, places[next].line, places[next].character);
    const moved = await until(page, (cols) => cols.every((c, i) => i === next || c.lines.length > 0)
      && linesOf(bundle, docs[s], holds(places[next].layers)).has(cols[s].lines[0]));
    check(moved, next, places[next].layers, `started from ${names[s]}, cursor in ${names[next]}`);
    // Focusing the start column again, its cursor unmoved: its layer is shown again.
    await page.keyboard.press('Escape');
    await page.keyboard.press(`Control+${s + 1}`);
    const back = await until(page, (cols) => cols.every((c, i) => i === s || c.lines.length > 0)
      && linesOf(bundle, docs[next], holds(places[s].layers)).has(cols[next].lines[0]));
    await screenshot(page, `stages-1${s}-refocused-${names[s]}`);
    check(back, s, places[s].layers, `started from ${names[s]}, its column focused again`);
  }
});

/** The texts shown before lines of editor column `column` (1-based) by decorations. */
async function beforeTexts(page, column) {
  return page.locator('.editor-group-container').nth(column - 1).evaluate((group) =>
    [...group.querySelectorAll('.view-lines span')]
      .map((el) => getComputedStyle(el, '::before').content)
      .filter((c) => c && c !== 'none' && c !== 'normal')
      .map((c) => c.replace(/^"|"$/g, '').replace(/\\"/g, '"')));
}

test('an int8 layer shows its own kernel, and the kernel holding only its input dequantize says so', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const docs = [bundle.documents('model')[0], bundle.documents('relax').at(-1), bundle.documents('tir').at(-1),
    bundle.documents('code').find((p) => p.endsWith('.c'))];
  // CONV_2D op 2's multiply-accumulate in the final TIR; its input dequantize lies in the kernel
  // of MAX_POOL_2D op 1 (fused_max_pool2d_dequantize3).
  const mac = bundle.statementOf(docs[2], 'CONV_2D', { accept: (p) => bundle.codePoints(docs[2]).join('').split('\n')[p.line].includes('conv2d_nhwc_intermediate[cse_v2] = conv2d_nhwc_intermediate[') });
  const same = bundle.ranges(docs[3]).filter((r) => r.key === mac.key).map((r) => bundle.position(docs[3], r.start).line + 1);
  assert.ok(same.length, `no C line carries ${mac.key}`);
  await bundleLoaded(page);
  await runCommand(page, 'View: Close All Editor Groups');
  await openAt(suite, docs[2], mac.line, mac.character);
  await runCommand(page, 'TVM Explorer: Open Stages Side by Side');
  const cols = await until(page, (c) => c.length === 4 && same.every((l) => c[3].lines.includes(l)));
  const notes = await poll(async () => {
    const found = await beforeTexts(page, 2);
    return found.length ? found : undefined;
  }, { timeoutMs: 20000 });
  await screenshot(page, 'stages-20-int8-own-kernel-and-noted-dequantize');
  // The C column shows the same multiply-accumulate, in the conv kernel.
  assert.ok(same.every((l) => cols[3].lines.includes(l)), `C column: MAC lines ${same} not shown: ${cols[3].lines}`);
  // The Relax column notes the max-pool kernel's call: it holds only op 2's input dequantize.
  assert.deepEqual((notes ?? []).map((n) => n.trim()), ["op 2's input dequantize only, in op 1's kernel ▸"]);
});
