/**
 * The extension in a real VS Code (code-server + chromium), against the real language server,
 * on a bundle compiled from tests/models/small_cnn_fp32.tflite at test start. Each step leaves
 * a screenshot in test-artifacts/vscode/.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { bundleSuite, ctrlClickToModel, hoverNamingLayer, openAt as openIn, openOnLayerEntry } from './lib/suite.mjs';
import {
  activeTabTitle,
  cursorPosition,
  passDiffStatus,
  poll,
  runCommand,
  screenshot,
  wordRectOnCursorLine,
} from './lib/workbench.mjs';

const suite = bundleSuite(); // its session and bundle exist once its `before` hook ran

/** Opens a bundle document and puts the cursor on a 0-based line (and column). */
const openAt = (path, line, character) => openIn(suite, path, line, character);

test('ctrl-click in the conv loop of the generated C opens the model at CONV_2D', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const stmt = bundle.cConv();
  await openAt(stmt.path, stmt.line);
  await screenshot(page, '01-c-file-conv-loop');
  const { target, pos } = await ctrlClickToModel(suite, stmt, '.c');
  await screenshot(page, '02-model-at-conv2d');
  assert.ok(pos, `cursor not on the layer entry (line ${target.line + 1}): ${JSON.stringify(await cursorPosition(page))}`);
  assert.match(target.text, /CONV_2D/);
  const shown = await page.locator('.editor-instance .view-line', { hasText: 'CONV_2D' }).count();
  assert.ok(shown > 0, 'CONV_2D entry not visible');
});

/** Hovers the CONV_2D statement of the last TIR document until the hover names its layer;
 * returns the hover's text and the layer. */
async function hoverConvInTir(shot) {
  const { session, bundle } = suite;
  const tirPath = bundle.documents('tir').at(-1);
  const stmt = bundle.statementOf(tirPath, 'CONV_2D');
  await openAt(tirPath, stmt.line);
  const text = await hoverNamingLayer(suite, stmt);
  await screenshot(session.page, shot);
  return { text, layer: stmt.layers[0] };
}

test('hovering a TIR statement names its layer', async () => {
  const { text, layer } = await hoverConvInTir('03-tir-hover');
  assert.match(text, new RegExp(`${layer.opcode}.*op ${layer.op_index}`));
});

test('the pass view opens a before/after diff of a pass that changed the IR', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const pass = bundle.changedPass('relax');
  await runCommand(page, 'TVM Explorer: Focus on Passes View');
  const item = page.getByRole('treeitem', { name: new RegExp(`^${pass.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`) });
  await item.first().waitFor({ state: 'visible', timeout: 90000 });
  await screenshot(page, '04-pass-view');
  await item.first().click();
  const diff = page.locator('.editor-instance .monaco-diff-editor');
  await diff.waitFor({ state: 'visible' });
  await diff.locator('.editor.original .view-line').first().waitFor();
  await diff.locator('.editor.modified .view-line').first().waitFor();
  const title = await activeTabTitle(page);
  const status = await poll(() => passDiffStatus(page));
  await screenshot(page, '05-pass-diff');
  assert.match(title, /Pass Diff · /, `diff tab "${title}"`);
  assert.ok(status?.includes(`${pass.name} · relax pass #${pass.index}`), `the status bar names "${status}", not ${pass.name}`);
  const firstLine = (path) => bundle.codePoints(path).join('').split('\n')[0].trim();
  const sideText = async (side) =>
    (await diff.locator(`.editor.${side} .view-line`).allTextContents()).join('\n').replace(/\u00a0/g, ' ');
  assert.ok((await sideText('original')).includes(firstLine(pass.before)), 'left side is not the IR before the pass');
  assert.ok((await sideText('modified')).includes(firstLine(pass.after)), 'right side is not the IR after the pass');
});

test('next/previous pass steps the diff through the changed passes', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const shown = bundle.manifest.passes.filter((p) => p.changed);
  const first = bundle.changedPass('relax');
  const next = shown[shown.indexOf(shown.find((p) => p.index === first.index)) + 1];
  const shows = (pass) => async () => ((await passDiffStatus(page)) ?? '').includes(pass.name);
  await runCommand(page, 'TVM Explorer: Next Pass Diff');
  await poll(shows(next));
  await screenshot(page, '06-next-pass-diff');
  assert.ok(await shows(next)(), `next pass ${next.name} not shown`);
  await runCommand(page, 'TVM Explorer: Previous Pass Diff');
  await poll(shows(first));
  assert.ok(await shows(first)(), `previous pass ${first.name} not shown`);
  // The pass's own document (the right side's file) opens from the diff.
  await runCommand(page, "TVM Explorer: Open This Pass's Document");
  const file = first.after.split('/').pop();
  assert.ok(await poll(async () => (await activeTabTitle(page)).includes(file)), `${file} did not open: "${await activeTabTitle(page)}"`);
});

test('"Reveal in Model" goes from a TIR statement to its layer', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const tirPath = bundle.documents('tir').at(-1);
  const stmt = bundle.statementOf(tirPath, 'CONV_2D');
  const target = bundle.layerEntry(stmt.layers[0].id);
  await openAt(tirPath, stmt.line);
  const rect = await wordRectOnCursorLine(page, stmt.word, stmt.character);
  await page.mouse.click(rect.x + rect.width / 2, rect.y + rect.height / 2);
  await runCommand(page, 'TVM Explorer: Reveal in Model');
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return (await activeTabTitle(page)).includes('model.tflgraph') && p?.line === target.line + 1 ? p : undefined;
  });
  await screenshot(page, '07-reveal-in-model');
  assert.ok(pos, `not at the layer entry (line ${target.line + 1}) of the model document`);
});

test('"Show All Places" of a layer lists its places in the references peek', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const layer = bundle.cConv().layers[0];
  await openOnLayerEntry(suite, layer);
  await runCommand(page, 'TVM Explorer: Show All Places of This Layer');
  const peek = page.locator('.zone-widget .reference-zone-widget, .peekview-widget').first();
  await peek.waitFor({ state: 'visible' });
  const rows = page.locator('.reference-zone-widget .monaco-list-row');
  await rows.first().waitFor();
  await screenshot(page, '08-show-all-places');
  const files = (await rows.allTextContents()).join(' | ');
  assert.ok(files.includes('.tir') || files.includes('.c'), `no TIR or C place listed: ${files}`);
  await page.keyboard.press('Escape');
});

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('unchanged passes are listed only after "Show Unchanged Passes"', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const unchanged = bundle.manifest.passes.find((p) => !p.changed);
  assert.ok(unchanged, 'the bundle has no pass that changed nothing');
  await runCommand(page, 'TVM Explorer: Focus on Passes View');
  await page.getByRole('treeitem', { name: /, changed the IR$/ }).first().waitFor({ state: 'visible', timeout: 90000 });
  const anyUnchanged = page.getByRole('treeitem', { name: /, unchanged$/ });
  assert.equal(await anyUnchanged.count(), 0, 'unchanged passes listed before asking');
  await runCommand(page, 'TVM Explorer: Show Unchanged Passes');
  const row = page.getByRole('treeitem', {
    name: new RegExp(`^${escapeRegExp(unchanged.name)}, ${unchanged.stage} pass ${unchanged.index}, unchanged$`),
  });
  await row.first().waitFor({ state: 'visible', timeout: 30000 });
  await screenshot(page, '09-unchanged-passes-shown');
  await runCommand(page, 'TVM Explorer: Hide Unchanged Passes');
  const hidden = await poll(async () => ((await anyUnchanged.count()) === 0 ? true : undefined));
  await screenshot(page, '10-unchanged-passes-hidden');
  assert.ok(hidden, 'unchanged passes still listed after hiding them');
});

test('"Restart Language Server" brings a new server that answers', async () => {
  await runCommand(suite.session.page, 'TVM Explorer: Restart Language Server');
  const { text, layer } = await hoverConvInTir('11-hover-after-restart');
  assert.match(text, new RegExp(`${layer.opcode}.*op ${layer.op_index}`));
});

test('"Reveal in Model" on text from several layers asks which one, then goes there', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const relaxPath = bundle.documents('relax').at(-1);
  const main = bundle.ranges(relaxPath).find((r) => r.kind === 'function' && r.key === 'func:main');
  const layerIds = [...new Set(main.origins.map(([id]) => id))];
  assert.ok(layerIds.length >= 2, `main of ${relaxPath} serves ${layerIds.length} layer(s)`);
  const chosen = bundle.layer(layerIds.at(-1));
  const target = bundle.layerEntry(chosen.id);
  // On "def main": the innermost range there is the function, which serves every layer.
  const defAt = bundle.slice(relaxPath, main.start, main.end).indexOf('def main');
  const pos = bundle.position(relaxPath, main.start + defAt);
  await openAt(relaxPath, pos.line, pos.character + 4);
  const rect = await wordRectOnCursorLine(page, 'main', pos.character + 4);
  await page.mouse.click(rect.x + rect.width / 2, rect.y + rect.height / 2);
  await runCommand(page, 'TVM Explorer: Reveal in Model');
  const picker = page.locator('.quick-input-widget');
  await picker.getByText('several layers').waitFor({ state: 'visible', timeout: 30000 });
  const rows = picker.locator('.monaco-list-row');
  await screenshot(page, '12-reveal-picker');
  assert.equal(await rows.count(), layerIds.length, 'the picker does not list every layer');
  await rows.filter({ hasText: new RegExp(`operator ${chosen.op_index}(?!\\d)`) }).first().click();
  const at = await poll(async () => {
    const p = await cursorPosition(page);
    return (await activeTabTitle(page)).includes('model.tflgraph') && p?.line === target.line + 1 ? p : undefined;
  });
  await screenshot(page, '13-reveal-picked-layer');
  assert.ok(at, `not at the chosen layer's entry (line ${target.line + 1}) of the model document`);
});

test('the server imports nothing from the workspace (a planted tvm_explorer/ stays unrun)', async () => {
  // Every test above was answered by the server the extension started; the workspace holds a
  // `tvm_explorer/` package that leaves a marker when imported (lib/suite.mjs).
  const { session, bundle } = suite;
  const stmt = bundle.cConv();
  await openAt(stmt.path, stmt.line);
  const text = await hoverNamingLayer(suite, stmt);
  assert.match(text, /CONV_2D/, 'the server did not answer');
  assert.ok(!existsSync(suite.planted), 'the server imported the tvm_explorer package planted in the workspace');
  await screenshot(session.page, '14-planted-package-not-imported');
});
