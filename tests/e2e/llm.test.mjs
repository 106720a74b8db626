/**
 * The extension on a Hugging Face language model: a tiny Llama (tests/llm_models.py, random
 * weights, 2 decoder layers) exported with torch.export and compiled for target c at test
 * start. The hover of a C statement of the shared projection kernel names the repeated layers
 * once (m.model.layers.{0..1}.self_attn.q_proj) and the call chain from the wrapper to the
 * model line; go to definition opens that line of modeling_llama.py first, read-only; the Hot
 * Layers view toggles to one row per module; the model graph opens with the decoder layers
 * collapsed (each box the sum of its layers), and the cursor on a C line of a kernel shared by
 * several layers brings them all on screen; the graph opened again draws from the layouts the
 * extension kept (no ELK run, each box where ELK puts it), and another model's bundle put in the
 * Llama's place is laid out afresh. Screenshots in test-artifacts/vscode/ (llm-).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { test } from 'node:test';
import { BundleView, compileBundle } from './lib/bundle.mjs';
import { PYTHON, REPO } from './lib/paths.mjs';
import { bundleSuite, hoverNamingLayer, openAt } from './lib/suite.mjs';
import {
  activeTabTitle,
  actUntilTab,
  ctrlClickRect,
  cursorPosition,
  poll,
  runCommand,
  screenshot,
  wordRectOnCursorLine,
} from './lib/workbench.mjs';

/** The exported program: the one the pytest session exported (tests/e2e/test_vscode.py), or
 * exported here. */
function llamaProgram() {
  if (process.env.TVM_EXPLORER_E2E_LLAMA_PT2) return process.env.TVM_EXPLORER_E2E_LLAMA_PT2;
  const path = join(mkdtempSync(join(tmpdir(), 'tvmx-llm-')), 'llama.pt2');
  execFileSync(PYTHON, ['-c', 'import sys, pathlib; from tests import llm_models;'
    + ' llm_models.export("llama", pathlib.Path(sys.argv[1]))', path],
  { cwd: REPO, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300000 });
  return path;
}
const pt2 = llamaProgram();

const suite = bundleSuite({ compile: { model: pt2, name: 'llama' }, shots: 'llm-' });

/** A store of the projection kernel (q/k/v/o_proj of both decoder layers share it). */
function projectionStatement() {
  return suite.bundle.statementOf('code/module.c', 'aten.mm.default', {
    accept: (pos) => /^\s+matmul\[/.test(suite.bundle.codePoints('code/module.c').join('').split('\n')[pos.line]),
  });
}

test('the hover of a projection kernel line names the repeated layers once and the call chain', async () => {
  const stmt = projectionStatement();
  await openAt(suite, 'code/module.c', stmt.line);
  const text = await hoverNamingLayer(suite, stmt);
  await screenshot(suite.session.page, 'llm-01-hover');
  assert.match(text, /m\.model\.layers\.\{0\.\.1\}\.self_attn\.q_proj \(Linear\) — modeling_llama\.py:\d+ ×2/);
  assert.match(text, /called from llm_models\.py:24 → modeling_llama\.py:\d+ → :\d+/);
  assert.doesNotMatch(text, /layers\.0\.self_attn/);
});

test('ctrl-click opens the model line in modeling_llama.py first, read-only', async () => {
  const { page } = suite.session;
  const stmt = projectionStatement();
  await openAt(suite, 'code/module.c', stmt.line);
  const ctrlClick = async () => ctrlClickRect(page, await wordRectOnCursorLine(page, stmt.word, stmt.character));
  const opened = await actUntilTab(page, 'modeling_llama.py', ctrlClick, { timeoutMs: 90000, intervalMs: 1000, settleMs: 3000 });
  assert.ok(opened, `ctrl-click did not open modeling_llama.py (active tab: ${await activeTabTitle(page)})`);
  const line = await poll(async () => {
    const text = await page.locator('.monaco-editor .view-line').allTextContents().catch(() => []);
    const pos = await cursorPosition(page);
    return pos && text.some((t) => t.includes('self.q_proj(')) ? pos : undefined;
  });
  assert.ok(line, 'the cursor is not at the q_proj line');
  await page.keyboard.type('x');
  const refused = page.locator('.monaco-editor-overlaymessage', { hasText: /read-only/i });
  await refused.first().waitFor({ state: 'visible', timeout: 10000 });
  await screenshot(page, 'llm-02-model-line-read-only');
  assert.ok(!(await page.locator('.tab.active.dirty').count()), 'the site-packages file was edited');
});

test('Hot Layers grouped by module: the repeated decoder layers are one row', async () => {
  const { page } = suite.session;
  await runCommand(page, 'TVM Explorer: Focus on Hot Layers View');
  for (const title of ['Passes', 'Layer Places']) { // room for the rows
    const header = page.locator('[id="workbench.view.extension.tvmExplorer"] .pane-header[aria-expanded="true"]', { hasText: title });
    if (await header.count()) await header.first().click();
  }
  await runCommand(page, 'TVM Explorer: Hot Layers: Group by Module');
  const rows = page.locator('[id="workbench.view.extension.tvmExplorer"] .monaco-list-row[aria-label^="rank "]');
  const grouped = rows.filter({ hasText: 'm.model.layers.{0..1}.self_attn.q_proj' });
  await grouped.first().waitFor({ state: 'visible', timeout: 90000 });
  await screenshot(page, 'llm-03-hot-layers-by-module');
  const labels = await rows.evaluateAll((els) => els.map((e) => e.getAttribute('aria-label')));
  assert.ok(labels.every((l) => l.includes(': module ')), `a row is not a module: ${labels.join(' | ')}`);
  assert.ok(!labels.some((l) => /layers\.[01]\.self_attn\.q_proj/.test(l)), labels.join(' | '));
  // A click opens the first layer of the group in the model document, where the module's
  // heading has a lens summing all its repeats.
  await grouped.first().click();
  const opened = await poll(async () => (await activeTabTitle(page)).includes('model.fxgraph'), { timeoutMs: 30000 });
  assert.ok(opened, 'the model document did not open');
  await page.keyboard.press('Escape');
  const lens = page.locator('.codelens-decoration', { hasText: 'all 2 repeats (m.model.layers.{0..1}.self_attn.q_proj)' });
  await lens.first().waitFor({ state: 'visible', timeout: 30000 });
  await screenshot(page, 'llm-04-module-lens');
  await runCommand(page, 'TVM Explorer: Hot Layers: One Row per Layer');
  await rows.filter({ hasText: 'layers.0.mlp.down_proj' }).first().waitFor({ state: 'visible', timeout: 30000 });
});

test('Hot Layers names each layer by its module path, its figures in view at the default width', async () => {
  const { page } = suite.session;
  const rows = page.locator('[id="workbench.view.extension.tvmExplorer"] .monaco-list-row[aria-label^="rank "]');
  const down = rows.filter({ hasText: 'layers.0.mlp.down_proj' }).first();
  await down.waitFor({ state: 'visible', timeout: 30000 });
  await screenshot(page, 'llm-05-hot-layers-module-paths');
  // Module paths first, the scope most share (m.model.) left out; no FX name leads a row.
  const texts = await rows.evaluateAll((els) => els.map((e) => e.querySelector('.label-name')?.textContent ?? ''));
  assert.ok(texts.length > 10 && texts.every((t) => !t.startsWith('aten.')), texts.join(' | '));
  assert.ok(texts.includes('layers.0.mlp.down_proj') && texts.includes('m.lm_head'), texts.join(' | '));
  // The row's first figure (time, or code lines without a profile) lies within the row as the
  // side bar shows it, and its graph node comes after the figures.
  const fit = await down.evaluate((row) => {
    const description = row.querySelector('.label-description');
    const clip = row.querySelector('.monaco-icon-label-container') ?? row;
    const walker = document.createTreeWalker(description, NodeFilter.SHOW_TEXT);
    const node = walker.nextNode();
    const at = node.data.indexOf(' · ');
    const range = document.createRange();
    range.setStart(node, 0);
    range.setEnd(node, at);
    return { text: description.textContent, right: range.getBoundingClientRect().right, clip: clip.getBoundingClientRect().right };
  });
  assert.match(fit.text, /^(?:[\d.]+ ms · \d+ % · )?\d+ C lines · .*mm_\d+$/);
  assert.ok(fit.right <= fit.clip, `"${fit.text}": the first figure ends at ${fit.right}px, past the row's visible end at ${fit.clip}px`);
  const message = await page.locator('[id="workbench.view.extension.tvmExplorer"] .pane', { has: page.locator('.pane-header', { hasText: 'Hot Layers' }) }).locator('.message').textContent();
  assert.match(message ?? '', / · module paths leave out m\.model\.$/);
});

test('a click on a node of the graph shows its Layer Places (no "no layer is known")', async () => {
  const { page } = suite.session;
  await openAt(suite, 'code/module.c', projectionStatement().line);
  await runCommand(page, 'TVM Explorer: Show Model Graph');
  const graph = page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');
  await graph.locator('[data-layer]').first().waitFor({ state: 'visible', timeout: 120000 });
  // A node the user can see: the graph opens on the cursor's kernel, not on the first layer.
  const onScreen = await poll(() => graph.locator('body').evaluate(() => {
    const view = document.querySelector('svg.graph').getBoundingClientRect();
    const seen = [...document.querySelectorAll('[data-layer]')].find((e) => {
      const b = e.getBoundingClientRect();
      return b.width > 0 && b.left >= view.left && b.right <= view.right && b.top >= view.top && b.bottom <= view.bottom;
    });
    return seen?.getAttribute('data-layer') ?? undefined;
  }), { timeoutMs: 30000 });
  assert.ok(onScreen, 'no layer node of the graph is on screen');
  const node = graph.locator(`[data-layer="${onScreen}"]`).first();
  const id = Number(onScreen);
  const layer = suite.bundle.layer(id);
  await node.click();
  const places = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Layer Places' }) });
  const titled = await poll(async () => {
    const text = (await places.locator('.message').first().textContent().catch(() => '')) ?? '';
    return text.includes(layer.opcode) ? text : undefined;
  }, { timeoutMs: 30000 });
  await screenshot(page, 'llm-06-graph-node-clicked');
  const toasts = await page.locator('.notifications-toasts').allTextContents();
  assert.ok(!toasts.some((t) => t.includes('no layer is known')), `a click said: ${toasts.join(' | ')}`);
  assert.ok(titled, `Layer Places does not show ${layer.opcode} (node ${id})`);
  // Whose layer it is: several bundles can be loaded, and the graph can switch between them.
  const whose = (await places.locator('.pane-header .description').first().textContent().catch(() => '')) ?? '';
  assert.equal(whose.trim(), basename(suite.bundle.root), 'Layer Places does not name the bundle of its layer');
});

/** The graph app inside the webview (code-server nests it in two iframes). */
const graphFrame = (page) => page.frameLocator('iframe.webview.ready').frameLocator('iframe#active-frame');

test('the model graph: decoder layers collapsed with their sums, a shared kernel line shows its layers', async () => {
  const { page } = suite.session;
  const code = 'code/module.c';
  const layersOf = (r) => new Set(r.origins.map(([id]) => String(id))).size;
  // the statement of a kernel computing the fewest layers, three or more (shared by both decoder layers)
  const stmt = suite.bundle.ranges(code).filter((r) => r.kind === 'stmt' && layersOf(r) >= 3).sort((a, b) => layersOf(a) - layersOf(b))[0];
  assert.ok(stmt, 'no statement of the generated C computes three layers or more');
  await openAt(suite, code, 0, 0);
  await runCommand(page, 'TVM Explorer: Show Model Graph');
  const graph = graphFrame(page);
  await graph.locator('[data-layer]').first().waitFor({ state: 'visible', timeout: 120000 });
  const app = graph.locator('body');
  assert.equal(await app.evaluate(() => window.tvmxGraph.layoutMode()), 'worker');
  // Each decoder layer is one collapsed box carrying the sum of its layers' code lines.
  const costs = JSON.parse(readFileSync(join(suite.bundle.root, 'costs.json'), 'utf8'));
  await graph.locator('select.overlay').selectOption('code');
  const boxes = await graph.locator('.group.collapsed.repeat').evaluateAll((els) => els.map((e) => [e.getAttribute('data-group'), Number(e.getAttribute('data-value')), e.querySelector('.op').textContent]));
  await screenshot(page, 'llm-05-graph-decoder-layers');
  assert.equal(boxes.length, 2, `decoder layers collapsed: ${JSON.stringify(boxes)}`);
  for (const [gid, value, label] of boxes) {
    const index = /layers\.(\d+)/.exec(label)[1];
    const scope = new RegExp(`^m\\.model\\.layers\\.${index}[./]`);
    const expected = costs.layers.filter((l) => scope.test(l.name)).reduce((s, l) => s + l.code_lines + (l.shared_code_lines ?? 0), 0);
    assert.equal(value, expected, `${gid} (${label}): rollup ${value}, its layers' code lines sum to ${expected}`);
  }
  // The cursor on the kernel's statement: its layers (or the nodes they are folded into) are
  // highlighted and all on screen, the decoder layers holding them opened.
  const at = suite.bundle.position(code, stmt.start);
  await openAt(suite, code, at.line, at.character);
  const ids = [...new Set(stmt.origins.map(([id]) => String(id)))];
  const shown = await poll(() => app.evaluate((_, want) => {
    const view = document.querySelector('svg.graph').getBoundingClientRect();
    const boxes = want.map((id) => document.querySelector(window.tvmxGraph.drawnAs(id) ?? 'none'));
    const on = (e) => { const b = e.getBoundingClientRect(); return b.left >= view.left && b.right <= view.right && b.top >= view.top && b.bottom <= view.bottom; };
    return boxes.every((e) => e && e.matches('[data-layer].highlight') && on(e)) ? boxes.map((e) => e.getAttribute('data-layer')) : undefined;
  }, ids), { timeoutMs: 60000 });
  await screenshot(page, 'llm-06-graph-kernel-highlight');
  assert.ok(shown, `the layers ${ids} of "${suite.bundle.slice(code, stmt.start, stmt.end).split('\n')[0]}" are not all highlighted on screen`);
});

test('the pass slider scrubs the Llama through its pipeline: touched layers marked, fused ones framed, nothing moves', async () => {
  const { page } = suite.session;
  const graph = graphFrame(page);
  await graph.locator('[data-layer]').first().waitFor({ state: 'visible', timeout: 120000 });
  const app = graph.locator('body');
  const before = await app.evaluate(() => JSON.stringify(window.tvmxGraph.geometry()));
  const slider = graph.locator('input.pass-slider');
  await slider.focus();
  await page.keyboard.press('Home');
  const caption = () => graph.locator('.pass-caption').textContent();
  // → until FuseOps, as a user scrubs
  let fuse;
  for (let i = 0; i < 200 && !fuse; i++) {
    const text = (await caption()) ?? '';
    if (/ FuseOps \(relax\)/.test(text)) fuse = text;
    else await page.keyboard.press('ArrowRight');
  }
  assert.ok(fuse, `the slider never reached FuseOps: ${await caption()}`);
  const marks = await app.evaluate(() => ({
    touched: document.querySelectorAll('.pass-touched').length,
    frames: document.querySelectorAll('rect.fusion').length,
    dashed: document.querySelectorAll('svg.scrubbing [data-layer]:not(.pass-lowered)').length,
  }));
  await screenshot(page, 'llm-07-pass-slider-fuseops');
  const groups = Number(/(\d+) fused groups?/.exec(fuse)[1]);
  assert.ok(groups > 0 && marks.touched > 0, `FuseOps: ${fuse}; ${JSON.stringify(marks)}`);
  assert.ok(marks.frames > 0, `no fused layers framed at FuseOps: ${JSON.stringify(marks)}`);
  await page.keyboard.press('End');
  assert.match((await caption()) ?? '', /codegen/);
  assert.equal(await app.evaluate(() => JSON.stringify(window.tvmxGraph.geometry())), before, 'a box moved while scrubbing');
  await graph.locator('.passes .pass-off').click();
  assert.equal(await app.evaluate(() => document.querySelectorAll('.pass-touched, rect.fusion').length), 0);
});

/** The drawn boxes (layers, open and collapsed groups) where the graph has them. */
const boxesOf = (app) => app.evaluate(() => {
  const { nodes, collapsed, groups } = window.tvmxGraph.geometry();
  return { nodes, collapsed, groups };
});

/** Closes every editor (the graph's webview with them), opens the generated C at its first line
 * and the model graph on it again: a new page, given what the extension kept. */
async function reopenGraph(page) {
  await runCommand(page, 'View: Close All Editors');
  await openAt(suite, 'code/module.c', 0, 0);
  await runCommand(page, 'TVM Explorer: Show Model Graph');
  const graph = graphFrame(page);
  await graph.locator('[data-layer]').first().waitFor({ state: 'visible', timeout: 120000 });
  return graph;
}

// Last: it puts another model's bundle in place of the Llama's.
test('the graph opened again draws from the kept layouts, a different graph in the bundle is laid out afresh', async () => {
  const { page } = suite.session;
  // The open graph has handed its layouts (every container ELK laid out so far) to the extension.
  const handed = await poll(() => graphFrame(page).locator('body').evaluate(() => {
    const k = window.tvmxGraph.keptLayouts();
    return k.kept > 0 && k.kept === k.shapes ? k : undefined;
  }), { timeoutMs: 60000 });
  assert.ok(handed, 'the graph never handed its layouts to the extension');
  // Opened again: every container of the opening view from the workspace state, none by ELK, and
  // every box where ELK puts it (Tidy lays them all out afresh).
  let graph = await reopenGraph(page);
  let app = graph.locator('body');
  const reopened = await app.evaluate(async () => ({ laidOut: (await window.tvmxGraph.painted).laidOut, ...window.tvmxGraph.keptLayouts() }));
  const kept = await boxesOf(app);
  await screenshot(page, 'llm-08-graph-reopened-kept-layouts');
  assert.equal(reopened.laidOut, 0, `ELK laid out ${reopened.laidOut} containers of a graph whose layouts were kept`);
  assert.equal(reopened.kept, handed.kept, 'the reopened page was not given every kept layout');
  assert.ok(Object.keys(kept.collapsed).length >= 2, `the decoder layers are not drawn collapsed: ${Object.keys(kept.collapsed)}`);
  // A decoder layer opened by a click (from the kept layouts too): its boxes come on screen,
  // though it opens wider than its box was; closed again, every box is back.
  const gid = await graph.locator('.group.collapsed.repeat').nth(1).getAttribute('data-group');
  await graph.locator(`.group.collapsed[data-group="${gid}"]`).click();
  const inView = await poll(() => app.evaluate((_, gid) => {
    const { nodes, groups } = window.tvmxGraph.geometry();
    const f = groups[gid];
    const view = document.querySelector('svg.graph').getBoundingClientRect();
    const members = Object.entries(nodes).filter(([, b]) => f && b.x >= f.x && b.y >= f.y && b.x + b.width <= f.x + f.width && b.y + b.height <= f.y + f.height);
    const on = members.filter(([id]) => {
      const b = document.querySelector(`[data-layer="${id}"]`)?.getBoundingClientRect();
      return b && b.left >= view.left && b.right <= view.right && b.top >= view.top && b.bottom <= view.bottom;
    });
    return on.length ? on.map(([id]) => id) : undefined;
  }, gid), { timeoutMs: 30000 });
  await screenshot(page, 'llm-08b-graph-decoder-layer-opened');
  assert.ok(inView, `no box of the opened decoder layer ${gid} is on screen`);
  assert.equal(await app.evaluate(async () => (await window.tvmxGraph.painted).laidOut), 0, 'ELK laid out a decoder layer whose layout was kept');
  await app.evaluate((_, gid) => window.tvmxGraph.setCollapsed(gid, true), gid);
  assert.deepEqual(await boxesOf(app), kept, 'closing the decoder layer again did not put every box back');
  await graph.locator('button.tidy').click();
  const tidied = await app.evaluate(async () => (await window.tvmxGraph.painted).laidOut);
  assert.ok(tidied > 0, 'Tidy did not lay the graph out again');
  assert.deepEqual(await boxesOf(app), kept, 'a box drawn from the kept layouts is not where ELK puts it');

  // Another model compiled into the same bundle (small_cnn's bundle put in its place, as
  // `compile -o` swaps it): a different identity, so the Llama's layouts are of no use.
  const other = join(suite.session.runDir, 'other');
  const small = new BundleView(compileBundle(other, { cache: true }));
  renameSync(suite.bundle.root, join(other, 'llama.bundle'));
  renameSync(small.root, suite.bundle.root);
  const want = small.index.layers.map((l) => l.id).sort((a, b) => a - b);
  const drawn = () => app.evaluate(() => [...document.querySelectorAll('[data-layer]')].map((e) => Number(e.getAttribute('data-layer'))).sort((a, b) => a - b));
  graph = await reopenGraph(page);
  app = graph.locator('body');
  const redrawn = await poll(async () => JSON.stringify(await drawn().catch(() => [])) === JSON.stringify(want), { timeoutMs: 90000, intervalMs: 1000 });
  assert.ok(redrawn, `the graph does not show the new model's layers ${want}: ${await drawn()}`);
  const fresh = await app.evaluate(async () => (await window.tvmxGraph.painted).laidOut);
  const boxes = await boxesOf(app);
  await screenshot(page, 'llm-09-graph-other-model-same-bundle');
  assert.ok(fresh > 0, 'the Llama\'s kept layouts were used for another graph (ELK laid out nothing)');
  await graph.locator('button.tidy').click();
  await app.evaluate(() => window.tvmxGraph.painted);
  assert.deepEqual(await boxesOf(app), boxes, 'a box of the new graph is not where ELK puts it');
});
