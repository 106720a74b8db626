/**
 * Stepping through the pipeline in a real VS Code, on a bundle compiled from
 * tests/models/small_cnn_fp32.tflite at test start: the same code one pass back or forward
 * (alt+[ / alt+]), one stage back (alt+\) from the generated C to the model, all in ONE
 * preview editor; the Layer Places view with its filter and the places code lens; Layer History from
 * its code lens, a step's diff of only the layer's lines; and pass diffs that show promptly
 * when stepped, hold the functions a pass changed aligned by name, and land on the first change. Screenshots in test-artifacts/vscode/jumps-*.png.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { PYTHON, REPO } from './lib/paths.mjs';
import { bundleSuite, ctrlClickToModel, hoverNamingLayer, openAt as openIn, openOnLayerEntry } from './lib/suite.mjs';
import { diffSides } from './lib/passDiffSides.mjs';
import { recordGoal } from './lib/timingGoals.mjs';
import { activeTabTitle, cursorPosition, goToLineInFocused, passDiffStatus, poll, runCommand, screenshot } from './lib/workbench.mjs';

const suite = bundleSuite({ shots: 'jumps-' });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const openAt = (path, line, character) => openIn(suite, path, line, character);

/** Closes every editor, then opens the generated C at its CONV_2D statement: that statement. */
async function openCConvAlone(page) {
  await runCommand(page, 'View: Close All Editors');
  const stmt = suite.bundle.cConv();
  await openAt(stmt.path, stmt.line, stmt.character);
  return stmt;
}

/** Number of open editor tabs, and whether the active one is a preview (italic) tab. */
async function tabs(page) {
  return {
    count: await page.locator('.tabs-container .tab').count(),
    // A preview tab's label is in italics.
    preview: (await page.locator('.tabs-container .tab.active .italic, .tabs-container .tab.active.italic').count()) > 0,
    classes: await page.locator('.tabs-container .tab.active').first().evaluate((el) => `${el.className} / ${el.querySelector('.monaco-icon-label')?.className}`),
  };
}

/** The pass index in a pass document's tab title ("012-FuseOps.relax" → 12). */
function passIndexOf(title) {
  const m = /(\d{3})-[^\s]*\.(relax|tir)/.exec(title);
  return m ? Number(m[1]) : undefined;
}

/** Whether the 0-based `line` of `path` holds code of layer `layerId`. */
function lineHasLayer(bundle, path, line, layerId) {
  return bundle.ranges(path).some((r) => {
    const a = bundle.position(path, r.start).line;
    const b = bundle.position(path, r.end).line;
    return a <= line && line <= b && r.origins.some(([id]) => id === layerId);
  });
}

/** Waits until the active tab differs from `before`; returns its title. */
async function nextTitle(page, before, timeoutMs = 30000) {
  return poll(async () => {
    const t = await activeTabTitle(page);
    return t && t !== before ? t : undefined;
  }, { timeoutMs, intervalMs: 100 });
}

test('alt+[ and alt+] step the same code through the passes that changed it, in one preview tab', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const docs = [...bundle.documents('relax'), ...bundle.documents('tir')];
  const stmt = bundle.cConv();
  const layer = stmt.layers[0];
  await runCommand(page, 'View: Close All Editors'); // a suite before it in the session left its own
  // Wait until the server has loaded the bundle (the pass view lists it).
  await runCommand(page, 'TVM Explorer: Focus on Passes View');
  const passesPane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Passes' }) });
  await passesPane.locator('.monaco-list-row', { hasText: 'small_cnn.bundle' }).first().waitFor({ timeout: 180000 });
  await openAt(stmt.path, stmt.line, stmt.character);
  const opened = await tabs(page);
  let title = await activeTabTitle(page);
  let index = Infinity;
  const visited = [];
  for (let i = 0; i < 3; i++) {
    await page.keyboard.press('Alt+BracketLeft');
    const now = await nextTitle(page, title, 60000);
    assert.ok(now, `alt+[ did not move from ${title}`);
    const nowIndex = passIndexOf(now);
    assert.ok(nowIndex < index, `alt+[ went from pass ${index} to ${nowIndex} (${now})`);
    const path = docs.find((p) => now.includes(p.split('/').pop()));
    const pos = await cursorPosition(page);
    assert.ok(path && lineHasLayer(bundle, path, pos.line - 1, layer.id), `landed on line ${pos.line} of ${now}, not on ${layer.opcode}`);
    const t = await tabs(page);
    assert.ok(t.count <= opened.count + 1, `a tab per step: ${t.count} tabs after ${i + 1} steps`);
    assert.ok(t.preview, `the landing is not in a preview tab (${t.classes})`);
    visited.push(now);
    title = now;
    index = nowIndex;
    if (i === 0) await screenshot(page, 'jumps-01-previous-pass');
  }
  await page.keyboard.press('Alt+BracketRight');
  const forward = await nextTitle(page, title);
  // Forward again: a later pass, no later than the one alt+[ came from.
  assert.ok(passIndexOf(forward) > index, `alt+] went from pass ${index} to ${passIndexOf(forward)}`);
  assert.ok(passIndexOf(forward) <= passIndexOf(visited[1]), `alt+] jumped past ${visited[1]} to ${forward}`);
  assert.ok((await tabs(page)).count <= opened.count + 1);
  await screenshot(page, 'jumps-02-next-pass');
});

test('Go to Previous Stage (alt+backslash) walks from a C conv line to the model in at most 3 steps, in one preview tab', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const stmt = await openCConvAlone(page);
  const layer = stmt.layers[0];
  let title = await activeTabTitle(page);
  const stages = [];
  for (let i = 0; i < 3 && !title.includes('model.tflgraph'); i++) {
    await page.keyboard.press('Alt+Backslash');
    const now = await nextTitle(page, title);
    assert.ok(now, `alt+\\ did not move from ${title}`);
    stages.push(now.includes('.tir') ? 'tir' : now.includes('.relax') ? 'relax' : now.includes('model.tflgraph') ? 'model' : now);
    const t = await tabs(page);
    assert.ok(t.count <= 2, `${t.count} tabs open after ${i + 1} steps`);
    await screenshot(page, `jumps-0${3 + i}-stage-${stages.at(-1)}`);
    title = now;
  }
  assert.deepEqual(stages, ['tir', 'relax', 'model']);
  const entry = bundle.layerEntry(layer.id);
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return p?.line === entry.line + 1 ? p : undefined;
  });
  assert.ok(pos, `not on the ${layer.opcode} entry (line ${entry.line + 1}) of the model`);
});

/** The Layer Places pane. */
const placesPane = (page) => page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Layer Places' }) });

/** The rendered rows of the Layer Places view, as text. */
async function placesRows(page) {
  return (await placesPane(page).locator('.monaco-list-row').allTextContents()).map((t) => t.replace(/\u00a0/g, ' ').trim());
}

/** The stage rows (the view collapsed to its top level: every stage is on screen). */
async function stageRows(page) {
  await placesPane(page).hover();
  await placesPane(page).locator('.actions [aria-label*="Collapse All"]').first().click();
  await sleep(300);
  return placesRows(page);
}

async function chooseFilter(page, label) {
  // The filter button in the view's title bar.
  await placesPane(page).hover();
  await placesPane(page).locator('.actions [aria-label*="Filter Layer Places"]').first().click();
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(label);
  await page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first().waitFor();
  await sleep(150);
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
  await sleep(300);
}

test('Layer Places lists the layer by stage in pipeline order, filters, and opens a place', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const layer = bundle.cConv().layers[0];
  await openOnLayerEntry(suite, layer);
  await runCommand(page, 'TVM Explorer: Show Layer Places');
  await poll(async () => (await placesRows(page)).length > 1, { timeoutMs: 60000 });
  // A row's text is its label followed by its description ("Relax15 places in 1 pass").
  const stageOrder = (rows) => rows.map((r) => /^(Model|Relax|TIR|Generated)(?=\d| code\d)/.exec(r)?.[1]).filter(Boolean);
  await chooseFilter(page, 'Last document of each stage');
  await screenshot(page, 'jumps-06-layer-places-last');
  // Expanded: the places computing the layer, file:line first, its stores grouped by function;
  // none of the Relax bookkeeping (allocations, shape checks, kills) around it.
  const expanded = await placesRows(page);
  console.log(`last document of each stage: ${expanded.join(' | ')}`);
  assert.ok(!expanded.some((r) => /R\.null_value|match_shape|alloc_storage|kill_object|alloc_tensor/.test(r)), `bookkeeping listed: ${expanded.join(' | ')}`);
  const relaxPlace = expanded.find((r) => /^\d{3}-[\w.]+\.relax:\d+/.test(r));
  assert.ok(relaxPlace && relaxPlace.includes('fused_conv2d'), `no Relax row led by file:line: ${expanded.join(' | ')}`);
  assert.ok(expanded.some((r) => /^module\.c:\d+–\d+\s*fused_conv2d\w* · \d+ statements/.test(r)), `the C stores are not one function row: ${expanded.join(' | ')}`);
  const message = (await placesPane(page).locator('.message, .pane-body .message').first().textContent().catch(() => '')) ?? '';
  console.log(`view message: ${message}`);
  let rows = await stageRows(page);
  assert.deepEqual(stageOrder(rows), ['Model', 'Relax', 'TIR', 'Generated']);
  for (const stage of ['Relax', 'TIR']) {
    const m = /(\d+) statements? in (\d+) pass/.exec(rows.find((r) => r.startsWith(stage)));
    assert.ok(m && Number(m[2]) === 1, `${stage}: the last document only, not ${rows.find((r) => r.startsWith(stage))}`);
  }

  await chooseFilter(page, 'Generated code only');
  rows = await placesRows(page);
  assert.deepEqual(stageOrder(rows), ['Generated']);
  assert.ok(rows.some((r) => r.includes('module.c:')), `no C place listed: ${rows.join(' | ')}`);
  await screenshot(page, 'jumps-07-layer-places-code');

  await chooseFilter(page, 'Every pass that changed it');
  await screenshot(page, 'jumps-08-layer-places-every-pass');
  rows = await stageRows(page);
  assert.deepEqual(stageOrder(rows), ['Model', 'Relax', 'TIR', 'Generated']);
  const relax = rows.find((r) => r.startsWith('Relax'));
  const m = /(\d+) statements? in (\d+) pass/.exec(relax);
  assert.ok(m && Number(m[2]) > 1, `the Relax stage lists one pass only: ${relax}`);
  // Pass groups come in pipeline order.
  await placesPane(page).locator('.monaco-list-row', { hasText: 'Relax' }).first().click();
  await sleep(300);
  rows = await placesRows(page);
  const passNumbers = rows.map((r) => /#(\d+)/.exec(r)).filter(Boolean).map((x) => Number(x[1]));
  assert.deepEqual(passNumbers, [...passNumbers].sort((a, b) => a - b), `passes out of order: ${passNumbers}`);
  // The bookkeeping of the memory-planning passes is shown apart, collapsed.
  await placesPane(page).locator('.monaco-list-row', { hasText: 'KillAfterLastUse' }).first().click();
  await sleep(300);
  rows = await placesRows(page);
  assert.ok(rows.some((r) => /^Bookkeeping\d+ bindings? around the layer/.test(r)), `no Bookkeeping row: ${rows.join(' | ')}`);
  await screenshot(page, 'jumps-08b-layer-places-relax-passes');

  // Clicking a place of the generated code opens it, in the preview tab, at its line.
  await chooseFilter(page, 'Generated code only');
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Layer Places' }) });
  const place = pane.locator('.monaco-list-row', { hasText: 'module.c:' }).first();
  const line = Number(/module\.c:(\d+)/.exec(await place.textContent())[1]);
  await place.click();
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return (await activeTabTitle(page)).includes('module.c') && p?.line === line ? p : undefined;
  });
  await screenshot(page, 'jumps-09-layer-place-opened');
  assert.ok(pos, `the place did not open at module.c:${line}`);
});

test('the places code lens on a model layer opens Layer Places on that layer, grouped by stage', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  await runCommand(page, 'View: Close All Editors');
  const cPath = bundle.documents('code').find((p) => p.endsWith('.c'));
  // Not the conv layer the view may still show from the test before: the lens must replace it.
  const conv = bundle.statementOf(cPath, 'CONV_2D').layers[0];
  const ids = [...new Set(bundle.ranges(cPath).flatMap((r) => r.origins.map(([id]) => id)))];
  const layer = ids.map((id) => bundle.layer(id)).find((l) => l.id !== conv.id && l.opcode !== conv.opcode);
  const entry = bundle.layerEntry(layer.id);
  await openAt(entry.path, entry.line, entry.character);
  // The lens of this layer: the places lens drawn just above the entry's line.
  const lens = await poll(async () => {
    const number = page.locator('.editor-instance .margin-view-overlays .line-numbers', { hasText: new RegExp(`^${entry.line + 1}$`) }).first();
    const lineBox = await number.boundingBox().catch(() => null);
    if (!lineBox) return undefined;
    const anchors = page.locator('.editor-instance .codelens-decoration a', { hasText: /functions? in generated code/ });
    let best;
    for (const a of await anchors.all()) {
      const box = await a.boundingBox();
      if (box && box.y + box.height <= lineBox.y + 2 && (!best || box.y > best.box.y)) best = { a, box };
    }
    return best && lineBox.y - (best.box.y + best.box.height) < 30 ? best.a : undefined;
  }, { timeoutMs: 60000, intervalMs: 300 });
  assert.ok(lens, `no places lens above line ${entry.line + 1} of the model document`);
  const lensText = (await lens.textContent()).trim();
  await lens.click();
  // The view shows this layer (its message names it) with its stages in pipeline order.
  const pane = placesPane(page);
  const named = await poll(async () => {
    const text = (await pane.textContent()) ?? '';
    return new RegExp(`${layer.opcode} op ${layer.op_index}\\b`).test(text) && (await placesRows(page)).length > 1 ? text : undefined;
  }, { timeoutMs: 60000, intervalMs: 300 });
  await screenshot(page, 'jumps-10-lens-layer-places');
  assert.ok(named, `Layer Places does not show ${layer.opcode} op ${layer.op_index} after clicking "${lensText}"`);
  assert.equal(await page.locator('.zone-widget .peekview-widget, .reference-zone-widget').count(), 0, 'the lens opened the references peek');
  await chooseFilter(page, 'Last document of each stage');
  const rows = await stageRows(page);
  const stages = rows.map((r) => /^(Model|Relax|TIR|Generated)(?=\d| code\d)/.exec(r)?.[1]).filter(Boolean);
  assert.deepEqual(stages, ['Model', 'Relax', 'TIR', 'Generated']);
  // The view lists as many functions in generated code as the lens counts, and says the
  // lens's words.
  const code = Number(/^(\d+) functions? in generated code/.exec(lensText)[1]);
  const generated = rows.find((r) => r.startsWith('Generated'));
  assert.ok(code > 0 && Number(/(\d+) functions?/.exec(generated)?.[1]) === code, `lens "${lensText}" vs view row "${generated}"`);
  assert.ok(((await pane.textContent()) ?? '').includes(lensText), `the view's message does not say "${lensText}"`);
  console.log(`lens "${lensText}"; view: ${rows.join(' | ')}`);
});

/** The Layer History pane. */
const historyPane = (page) => page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Layer History' }) });

/** The lines a history diff side shows: the file's lines of each range, "…" between two. */
function historySide(bundle, side) {
  const lines = bundle.codePoints(side.path).join('').split('\n');
  const out = [];
  side.lines.forEach(([first, last], i) => {
    if (i) out.push('…');
    out.push(...lines.slice(first - 1, last));
  });
  return out;
}

/** The rendered lines of one side of the active diff editor (`original` or `modified`), top down. */
async function renderedSide(page, side) {
  return page.evaluate((side) => {
    const d = document.querySelector('.editor-instance .monaco-diff-editor');
    return [...(d?.querySelectorAll(`.editor.${side} .view-lines .view-line`) ?? [])]
      .map((el) => ({ top: parseFloat(el.style.top), text: el.textContent.replace(/\u00a0/g, ' ').trimEnd() }))
      .sort((a, b) => a.top - b.top)
      .map((l) => l.text);
  }, side);
}

test('the Pass history lens opens Layer History; a step opens the diff of only the layer\u2019s lines, at its change', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  await runCommand(page, 'View: Close All Editors');
  const layer = bundle.cConv().layers[0];
  const entry = bundle.layerEntry(layer.id);
  // What the server answers, as the CLI prints it (same code): the steps the view must list.
  const expected = JSON.parse(execFileSync(PYTHON, ['-m', 'tvm_explorer', 'history', bundle.root, String(layer.op_index), '--json'],
    { cwd: REPO, encoding: 'utf8', timeout: 120000 }));
  await openAt(entry.path, entry.line, entry.character);
  const lens = await poll(async () => {
    const number = page.locator('.editor-instance .margin-view-overlays .line-numbers', { hasText: new RegExp(`^${entry.line + 1}$`) }).first();
    const lineBox = await number.boundingBox().catch(() => null);
    if (!lineBox) return undefined;
    let best;
    for (const a of await page.locator('.editor-instance .codelens-decoration a', { hasText: 'Pass history' }).all()) {
      const box = await a.boundingBox();
      if (box && box.y + box.height <= lineBox.y + 2 && (!best || box.y > best.box.y)) best = { a, box };
    }
    return best && lineBox.y - (best.box.y + best.box.height) < 30 ? best.a : undefined;
  }, { timeoutMs: 60000, intervalMs: 300 });
  assert.ok(lens, `no "Pass history" lens above line ${entry.line + 1} of the model document`);
  await lens.click();
  const pane = historyPane(page);
  const rows = async () => (await pane.locator('.monaco-list-row').allTextContents()).map((t) => t.replace(/\u00a0/g, ' ').trim());
  const listed = await poll(async () => {
    const text = (await pane.textContent()) ?? '';
    return new RegExp(`${layer.opcode} op ${layer.op_index}\\b`).test(text) && (await rows()).length > 3 ? true : undefined;
  }, { timeoutMs: 60000, intervalMs: 300 });
  assert.ok(listed, `Layer History does not show ${layer.opcode} op ${layer.op_index}`);
  for (const title of ['Passes', 'Layer Places', 'Hot Layers']) { // room for its rows
    const header = page.locator('[id="workbench.view.extension.tvmExplorer"] .pane-header[aria-expanded="true"]', { hasText: title });
    // on its twisty: the header's middle may be one of its action buttons (Compile Model…)
    if (await header.count()) await header.first().click({ position: { x: 10, y: 10 } });
  }
  await poll(async () => (await rows()).length > 8 || undefined, { timeoutMs: 10000, intervalMs: 200 });
  await screenshot(page, 'jumps-13-layer-history');
  const message = (await pane.textContent()) ?? '';
  assert.ok(message.includes(`${expected.steps.length} of ${expected.passes} passes changed its code`), `view message: ${message}`);
  // The rows are the passes that changed its code, in pipeline order, each with its summary
  // (the view scrolls: the rows on screen are the first ones).
  const shown = await rows();
  console.log(`layer history rows: ${shown.join(' | ')}`);
  shown.forEach((row, i) => {
    const step = expected.steps[i];
    assert.ok(row.startsWith(step.pass.name) && row.includes(step.summary.slice(0, 40)), `row ${i} "${row}" is not ${step.pass.name}: ${step.summary}`);
  });
  const fuse = expected.steps.findIndex((s) => s.pass.name === 'FuseTIR');
  assert.ok(fuse > 0 && /PrimFuncs → 1 \(fused_conv2d\w*\)/.test(expected.steps[fuse].summary), expected.steps[fuse]?.summary);
  assert.ok(expected.steps.some((s) => s.pass.name === 'FuseOps' && /fused_conv2d\w*/.test(s.summary)));
  // A step opens the split diff of only the layer's lines, landing on the first change.
  const step = expected.steps[fuse];
  const left = historySide(bundle, step.before);
  const right = historySide(bundle, step.after);
  await pane.locator('.monaco-list-row', { hasText: 'FuseTIR' }).first().click();
  const matches = (rendered, want) => rendered.length > 0 && want.some((_, k) => rendered.every((t, i) => want[k + i]?.trimEnd() === t));
  const opened = await poll(async () => (matches(await renderedSide(page, 'original'), left) && matches(await renderedSide(page, 'modified'), right)) || undefined,
    { timeoutMs: 30000, intervalMs: 200 });
  await screenshot(page, 'jumps-14-layer-history-diff');
  assert.ok(opened, `the diff does not show the layer's lines: ${JSON.stringify(await renderedSide(page, 'modified'))}`);
  const title = await activeTabTitle(page);
  assert.ok(title.includes('FuseTIR'), `tab title: ${title}`);
  // Only this layer's lines: far fewer than the documents, none of the pooling layers' code.
  const whole = bundle.codePoints(step.after.path).join('').split('\n').length;
  assert.ok(right.length < whole / 4, `the after side holds ${right.length} of ${whole} lines`);
  assert.ok(!right.some((l) => /max_pool/.test(l)), 'the after side shows another layer\u2019s code');
  const first = left.findIndex((l, i) => l !== right[i]);
  const landed = await poll(async () => ((await cursorPosition(page))?.line === first + 1 ? true : undefined), { timeoutMs: 5000, intervalMs: 100 });
  assert.ok(landed, `the diff opened at ${JSON.stringify(await cursorPosition(page))}, not at its first change (line ${first + 1})`);
});

test('the hover of a C conv line offers its pass history; the link opens Layer History on that layer', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const stmt = await openCConvAlone(page);
  const layer = stmt.layers[0];
  const link = page.locator('.monaco-hover:visible a', { hasText: /^Pass history of (this layer|these \d+ layers)$/ });
  const shown = await poll(async () => {
    if ((await link.count()) > 0) return true;
    await hoverNamingLayer(suite, stmt);
    return (await link.count()) > 0 || undefined;
  }, { timeoutMs: 60000, intervalMs: 500 });
  await screenshot(page, 'jumps-15-hover-pass-history');
  assert.ok(shown, 'the hover of a conv statement offers no pass history');
  await link.first().click();
  const pane = historyPane(page);
  const listed = await poll(async () => (new RegExp(`${layer.opcode} op ${layer.op_index}\\b`).test((await pane.textContent()) ?? '') || undefined),
    { timeoutMs: 60000, intervalMs: 300 });
  await screenshot(page, 'jumps-16-hover-opened-history');
  assert.ok(listed, `Layer History does not show ${layer.opcode} op ${layer.op_index} after the hover's link`);
});

test('Go to Symbol in Workspace (Ctrl+T) finds a layer by its TF name and opens its model entry', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const layer = bundle.cConv().layers[0];
  const entry = bundle.layerEntry(layer.id);
  const tfName = layer.name || entry.text.split(/\s+/)[3];
  await focusEditor(page);
  await page.keyboard.press('Control+T');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`#${tfName}`);
  const row = await poll(async () => {
    const rows = page.locator('.quick-input-list .monaco-list-row', { hasText: `op ${layer.op_index} ${layer.opcode}` });
    return (await rows.count()) > 0 ? rows.first() : undefined;
  }, { timeoutMs: 60000, intervalMs: 300 });
  await screenshot(page, 'jumps-11-workspace-symbol');
  assert.ok(row, `Ctrl+T "${tfName}" lists no op ${layer.op_index} ${layer.opcode}`);
  const text = ((await row.textContent()) ?? '').replace(/\u00a0/g, ' ');
  assert.ok(text.includes(tfName), `row "${text}" does not name ${tfName}`);
  await row.click();
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return (await activeTabTitle(page)).includes('model.tflgraph') && p?.line === entry.line + 1 ? p : undefined;
  }, { timeoutMs: 30000 });
  await screenshot(page, 'jumps-12-workspace-symbol-opened');
  assert.ok(pos, `the symbol did not open model.tflgraph at line ${entry.line + 1}`);
});

async function focusEditor(page) {
  await page.locator('.editor-instance .monaco-editor').first().click({ position: { x: 200, y: 60 } }).catch(() => {});
}

/** The lines of a bundle document (an empty side: one empty line). */
function linesOf(bundle, path) {
  return path ? bundle.codePoints(path).join('').split('\n') : [''];
}

/**
 * Runs `act`, then measures in the page, in every animation frame, how long after the step (the
 * key press, or the call when `act` presses no key) both sides of the diff show exactly the
 * text of `expected` ({left, right}: the lines of the two documents; `status`: the pass as the
 * status bar names it, updated once both sides hold their whole new text): every rendered line
 * of a side is the line of its new document at that place, nothing stale. Also counts the
 * frames in which a side showed no line at all (blank) and says whether the tab changed.
 */
async function shownAfter(page, expected, act) {
  const watch = page.evaluate(async (expected) => {
    let t0 = performance.now();
    let keyed = false;
    const onKey = () => { if (!keyed) { keyed = true; t0 = performance.now(); } };
    window.addEventListener('keydown', onKey, true);
    const tab = document.querySelector('.tab.active')?.textContent?.trim();
    const matches = (side, lines) => {
      const d = document.querySelector('.editor-instance .monaco-diff-editor');
      const rendered = [...(d?.querySelectorAll(`.editor.${side} .view-lines .view-line`) ?? [])]
        .map((el) => ({ top: parseFloat(el.style.top), text: el.textContent.replace(/\u00a0/g, ' ').trimEnd() }))
        .sort((a, b) => a.top - b.top)
        .map((l) => l.text);
      if (rendered.length === 0) return null;
      const want = lines.map((l) => l.trimEnd());
      for (let k = 0; k + rendered.length <= want.length; k++) {
        if (want[k] === rendered[0] && rendered.every((t, i) => want[k + i] === t)) return true;
      }
      return false;
    };
    let blankFrames = 0;
    try {
      while (performance.now() - t0 < 60000) {
        const left = matches('original', expected.left);
        const right = matches('modified', expected.right);
        if (keyed && (left === null || right === null)) blankFrames++;
        const named = [...document.querySelectorAll('.statusbar-item')].some((el) => el.textContent.includes(expected.status));
        if (left && right && named) {
          return { shown: Math.round(performance.now() - t0), blankFrames, newTab: document.querySelector('.tab.active')?.textContent?.trim() !== tab };
        }
        await new Promise((r) => requestAnimationFrame(r));
      }
      return null;
    } finally {
      window.removeEventListener('keydown', onKey, true);
    }
  }, expected);
  await sleep(50); // the watch is listening before the step
  await act();
  return watch;
}

// A step rewrites the text of the diff's two sides in place (stable virtual URIs): VS Code keeps
// the diff editor on screen and recomputes only its markings, where a diff with new URIs is a
// new input that VS Code clears and shows only once the new diff is computed and laid out
// (0.3-1.2 s on this loaded 2-core machine). Measured from the key press to the new text
// rendered on both sides, with no frame without text.
test('stepping pass diffs shows each new diff promptly, in place, with hover and definition', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  await runCommand(page, 'View: Close All Editors');
  const changed = bundle.manifest.passes.filter((p) => p.changed);
  const first = bundle.changedPass('relax');
  const expectedOf = (pass) => {
    const { left, right } = diffSides(bundle, pass);
    return { left, right, status: `${pass.name} · ${pass.stage} pass #${pass.index}` };
  };
  await runCommand(page, 'TVM Explorer: Focus on Passes View');
  const item = (pass) => page.getByRole('treeitem', { name: new RegExp(`^${pass.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`) }).first();
  await item(first).waitFor({ state: 'visible', timeout: 90000 });
  // Cold: a pass diff whose documents nothing has read yet (clicked in the pass view).
  const cold = await shownAfter(page, expectedOf(first), () => item(first).click());
  assert.ok(cold, 'the first diff did not show its documents');
  const diff = page.locator('.editor-instance .monaco-diff-editor');
  const tabTitle = await activeTabTitle(page);
  assert.match(tabTitle, /Pass Diff · small_cnn\.bundle/);
  assert.ok((await poll(() => passDiffStatus(page)))?.includes(first.name), `the status bar does not name ${first.name}`);
  await sleep(1500); // reading the diff, while its neighbours are read ahead
  const steps = [];
  let pass = first;
  for (let i = 0; i < 6; i++) {
    const next = changed.find((p) => p.index > pass.index);
    await diff.locator('.editor.modified .monaco-editor textarea').first().focus();
    const shown = await shownAfter(page, expectedOf(next), () => page.keyboard.press('Alt+BracketRight'));
    assert.ok(shown, `step ${i + 1} (to ${next.name}) did not show its documents`);
    const named = await poll(async () => ((await passDiffStatus(page)) ?? '').includes(`${next.name} · ${next.stage} pass #${next.index}`) || undefined, { timeoutMs: 10000, intervalMs: 100 });
    assert.ok(named, `the status bar does not name ${next.name} after step ${i + 1}: ${await passDiffStatus(page)}`);
    steps.push({ ...shown, to: next.name });
    // The step lands on the pass's first change: the cursor is on it and it is on screen.
    const { right, firstChange } = diffSides(bundle, next);
    const landed = await poll(async () => ((await cursorPosition(page))?.line === firstChange + 1 ? true : undefined), { timeoutMs: 5000, intervalMs: 100 });
    assert.ok(landed, `step ${i + 1} (${next.name}) left the cursor at ${JSON.stringify(await cursorPosition(page))}, not at the first change (line ${firstChange + 1})`);
    const rendered = (await diff.locator('.editor.modified .view-line').allTextContents()).map((t) => t.replace(/\u00a0/g, ' ').trimEnd());
    assert.ok(rendered.includes(right[firstChange].trimEnd()), `step ${i + 1} (${next.name}): the first change "${right[firstChange]}" is off screen`);
    pass = next;
    if (i === 0) {
      await sleep(800); // the diff markings, computed after the text
      await screenshot(page, 'jumps-11-stepped-diff');
    }
    await sleep(1000);
  }
  await screenshot(page, 'jumps-12-stepped-diff-last');
  const times = steps.map((s) => s.shown);
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  console.log(`pass diff text shown after: cold ${cold.shown} ms; stepped ${steps.map((s) => `${s.shown}${s.newTab ? ' (new tab)' : ''}${s.blankFrames ? ` (${s.blankFrames} blank frames)` : ''}`).join(', ')} ms; ${changed.length} changed passes`);
  // Steps within one stage keep the tab: no frame without text.
  const inPlace = steps.filter((s) => !s.newTab);
  assert.ok(inPlace.length >= 4, `steps opened new tabs: ${JSON.stringify(steps)}`);
  assert.deepEqual(inPlace.filter((s) => s.blankFrames > 0), [], 'a stepped diff went blank');
  assert.equal(await activeTabTitle(page), tabTitle);
  // Function-aligned sides change wholesale where a pass touches many functions (the sides of
  // whole documents changed by a few lines): measured here 90-350 ms typical, before 110-210.
  // Goals (bench/timing_goals.py): a median of 400 ms, at most one step over 1 s; asserted here:
  // each step within 10 s.
  recordGoal('editor: stepped pass diff text on screen (median of 6 steps)', median, 400);
  recordGoal('editor: slowest of 6 stepped pass diffs', sorted[sorted.length - 1], 1000);
  assert.ok(times.every((t) => t <= 10000), `stepped diffs showed their text after ${times.join(', ')} ms (median ${median} ms; cold diff ${cold.shown} ms)`);

  // FuseTIR turns each fused Relax function into a PrimFunc of the same name: the diff pairs
  // them, row by row (a diff of whole documents paired unrelated functions).
  pass = changed.find((p) => p.name === 'FuseTIR');
  await item(pass).click();
  await poll(async () => ((await passDiffStatus(page)) ?? '').includes('FuseTIR') || undefined, { timeoutMs: 10000 });
  await sleep(800); // the diff markings
  await screenshot(page, 'jumps-12b-fusetir-aligned-by-name');
  const fusedLines = diffSides(bundle, pass).right;
  const fusedAt = fusedLines.findIndex((l) => /^ {4}def fused_\w+\(/.test(l));
  const fused = fusedLines[fusedAt].match(/def (\w+)\(/)[1];
  // Bring it on screen (functions the pass removed come before it on the left).
  await diff.locator('.editor.modified .monaco-editor textarea').first().focus();
  await goToLineInFocused(page, fusedAt + 1);
  await sleep(500);
  const topOf = async (side) => {
    const row = diff.locator(`.editor.${side} .view-line`, { hasText: `def ${fused}(` }).first();
    await row.waitFor({ timeout: 10000 });
    return (await row.boundingBox()).y;
  };
  const [leftTop, rightTop] = [await topOf('original'), await topOf('modified')];
  assert.ok(Math.abs(leftTop - rightTop) < 40, `def ${fused} is at y=${leftTop} on the left but y=${rightTop} on the right`);

  // Hover and go to definition in the (virtual) right side: the server's answers for its file
  // (the side shows the changed functions; its lines map to lines of the file).
  const sides = diffSides(bundle, pass);
  const fileStmt = bundle.statementOf(pass.after, 'CONV_2D', { inLoop: false, accept: (p) => sides.toSide(p.line) !== undefined });
  const stmt = { ...fileStmt, line: sides.toSide(fileStmt.line) };
  /** Puts the cursor of the diff's right side at 1-based `line`, `column`. */
  const goToInDiff = async (line, column) => {
    await diff.locator('.editor.modified .monaco-editor textarea').first().focus();
    await goToLineInFocused(page, line, column);
  };
  await goToInDiff(stmt.line + 1, stmt.character + 1);
  const text = await hoverNamingLayer(suite, stmt);
  await screenshot(page, 'jumps-13-hover-in-pass-diff');
  assert.match(text, new RegExp(`${stmt.layers[0].opcode}.*op ${stmt.layers[0].op_index}`));
  // F12 on a use of a name defined in the same document (a loop variable read in the loop's
  // body) moves within the diff's side.
  const lines = sides.right;
  const defLine = lines.findIndex((l) => /^\s+for i0, /.test(l));
  const useLine = lines.findIndex((l, i) => i > defLine && l.includes('[i0, '));
  assert.ok(defLine >= 0 && useLine > defLine && useLine <= defLine + 3, `no loop over i0 read in its body in the diff of ${pass.after}`);
  await goToInDiff(useLine + 1, lines[useLine].indexOf('[i0, ') + 3);
  await page.keyboard.press('F12');
  const moved = await poll(async () => ((await cursorPosition(page))?.line === defLine + 1 ? true : undefined), { timeoutMs: 30000, intervalMs: 300 });
  await screenshot(page, 'jumps-14-definition-in-pass-diff');
  assert.ok(moved, `F12 on i0 (line ${useLine + 1}) did not go to line ${defLine + 1}: ${JSON.stringify(await cursorPosition(page))}`);
  assert.equal(await activeTabTitle(page), tabTitle, 'the definition left the diff');
  // Elsewhere, definition goes to the origin layer: the model document opens at its entry.
  await goToInDiff(stmt.line + 1, stmt.character + 1);
  const { target, pos } = await ctrlClickToModel(suite, stmt, 'Pass Diff');
  await screenshot(page, 'jumps-15-definition-from-pass-diff');
  assert.ok(pos, `go to definition from the pass diff did not reach the layer entry (line ${target.line + 1})`);
});
