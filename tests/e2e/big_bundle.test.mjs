/**
 * The first answer on a big bundle, in a real VS Code: tests/models/mobilenet_v3_small_int8.tflite
 * compiled for CUDA (tens of MB of IR and code; compiled once and kept in
 * test-artifacts/bundle-cache). The time from opening the generated CUDA source to the first
 * hover naming its layer is measured, and must stay under 10 s beyond what the test's own
 * keystrokes take on a small file (the goal, 1 s, is judged by bench/timing_goals.py).
 * Where the time went on this machine: the server answers in ~10 ms once asked; VS Code's C++
 * TextMate grammar tokenizing the 3.5 MB device.cu held the editor for 3-4 s, and even a light
 * grammar of our own still cost ~1.3 s of the browser's CPU on it (the document reached the
 * extension host, and so the server, 1-2 s after the tab showed). Generated code now has no
 * grammar: the server colors the lines on screen (semanticTokens/range), which is checked here too.
 * Its pass diffs come in pages VS Code's diff handles within its 5 s limit (tirx.MakePackedAPI
 * stopped it as one page), stepped with Alt+PageDown, and land on the changed column.
 * TVMX_TRACE=1 logs every LSP message with its time (kept with TVM_EXPLORER_E2E_KEEP=1);
 * TVMX_SETTINGS='{…}' adds user settings, for experiments.
 * Screenshots in test-artifacts/vscode/big-*.png.
 */
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { diffSides } from './lib/passDiffSides.mjs';
import { bundleSuite } from './lib/suite.mjs';
import { recordGoal } from './lib/timingGoals.mjs';
import { cursorPosition, goToLine, openFile, passDiffStatus, poll, runCommand, screenshot } from './lib/workbench.mjs';

const suite = bundleSuite({
  compile: { model: 'mobilenet_v3_small_int8.tflite', name: 'mnv3_int8_cuda', target: 'cuda', cache: true },
  shots: 'big-',
  // Every message between the extension and the server, timed, in the output channel's log.
  settings: {
    ...(process.env.TVMX_TRACE ? { 'tvmExplorer.trace.server': 'verbose' } : {}),
    ...JSON.parse(process.env.TVMX_SETTINGS || '{}'),
  },
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Bytes of the bundle's files, in MB. */
function bundleMegabytes(root) {
  let total = 0;
  const walk = (p) => {
    const st = statSync(p);
    if (st.isDirectory()) {
      for (const name of readdirSync(p)) walk(join(p, name));
    } else total += st.size;
  };
  walk(root);
  return total / 2 ** 20;
}

test('on a big CUDA bundle the first hover answers about 1 s after opening the file', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  const mb = bundleMegabytes(bundle.root);
  assert.ok(mb > 20, `the bundle is only ${mb.toFixed(1)} MB`);
  // The server has started and listed the bundle (what a user sees before opening a file).
  await runCommand(page, 'TVM Explorer: Focus on Passes View');
  await page.getByRole('treeitem', { name: /mnv3_int8_cuda/ }).first().waitFor({ timeout: 120000 });
  await sleep(3000); // the workbench settles, as when a person picks the file
  // What the test's own keystrokes take here (quick open, go to line) on a small document.
  await openFile(page, relative(suite.folder, join(bundle.root, 'manifest.json')));
  const b0 = Date.now();
  await goToLine(page, 3, 1);
  const baseline = Date.now() - b0;
  await runCommand(page, 'View: Close All Editors');
  const cu = bundle.documents('code').find((p) => p.endsWith('.cu'));
  const stmt = bundle.statementOf(cu, 'CONV_2D', { inLoop: false });
  const size = statSync(join(bundle.root, cu)).size / 2 ** 20;
  await openFile(page, relative(suite.folder, join(bundle.root, cu)));
  const t0 = Date.now(); // the tab shows the file: VS Code has sent didOpen
  console.log(`opened at ${new Date(t0).toISOString()}`); // to line up with TVMX_TRACE=1's log
  await goToLine(page, stmt.line + 1, stmt.character + 1);
  const moved = Date.now() - t0; // longer than `baseline` while the editor is busy with the file
  // Ask for the hover at the cursor again and again (Ctrl+K Ctrl+I) until it names the layer.
  const hover = page.locator('.monaco-hover:visible');
  const layer = stmt.layers[0];
  const answered = await poll(async () => {
    await page.keyboard.press('Control+K');
    await page.keyboard.press('Control+I');
    // The hover shows "Loading…" until the server answers: wait for the answer, not the box.
    const named = hover.filter({ hasText: layer.opcode }).first();
    if (await named.waitFor({ state: 'visible', timeout: 400 }).then(() => true, () => false)) return Date.now() - t0;
    await page.keyboard.press('Escape');
    return undefined;
  }, { timeoutMs: 60000, intervalMs: 50 });
  await screenshot(page, 'big-01-first-hover');
  console.log(`bundle ${mb.toFixed(1)} MB, ${cu} ${size.toFixed(1)} MB: first hover ${answered} ms after the tab showed (${moved} ms of it moving the cursor; ${baseline} ms on a small file)`);
  assert.ok(answered, `no hover naming ${layer.opcode} within 60 s`);
  const status = (await page.locator('.statusbar-item').allTextContents()).join(' | ');
  assert.match(status, /TVM Generated C \/ CUDA/);
  // Goal: 1 s beyond the keystrokes (bench/timing_goals.py). Measured here (2 cores shared with
  // other work): 0.1-0.5 s; with a light TextMate grammar 0.8-3.3 s, with VS Code's C++ one
  // 4.2-12.4 s. The test asserts the order of magnitude only.
  recordGoal('editor: first hover on a 3.5 MB device.cu, beyond the keystrokes', answered - baseline, 1000);
  assert.ok(answered - baseline <= 10000, `the first hover came ${answered} ms after ${cu} opened (moving the cursor took ${moved} ms there, ${baseline} ms on a small file)`);
  // Still colored: the server's tokens paint types and numbers apart from plain names.
  const painted = await poll(async () => {
    const colors = await page.evaluate(() => {
      const editor = document.querySelector('.editor-instance .monaco-editor');
      const plain = getComputedStyle(editor.querySelector('.view-lines')).color;
      const out = { plain, types: [], numbers: [] };
      for (const span of editor.querySelectorAll('.view-line span span')) {
        const text = span.textContent.trim();
        if (text === 'int') out.types.push(getComputedStyle(span).color);
        if (/^\d+$/.test(text)) out.numbers.push(getComputedStyle(span).color);
      }
      return out;
    });
    const colored = (list) => list.length > 0 && list.every((c) => c !== colors.plain);
    return colored(colors.types) && colored(colors.numbers) && colors.types[0] !== colors.numbers[0] ? colors : undefined;
  }, { timeoutMs: 10000, intervalMs: 200 });
  await screenshot(page, 'big-01b-colored');
  assert.ok(painted, `the visible CUDA lines are not colored by type and number`);
});

// Not reached here: tirx.LowerIntrin rewrites nearly every function, so the aligned sides are
// still 8.7 k lines (1.5 MB) of a 4.4 MB document. Its first change showed 2.7-3.8 s after the
// click when each side was written whole; with the sides' first lines written first (read and
// aligned, ~0.1 s, while the tab opens) 0.65-0.9 s (up to 2.2 s under heavy load). Most of that
// is VS Code's own, before the extension can paint (logged in the extension host on this 2-core
// machine, 2026-12-02): the click reaches the extension's command 120-180 ms later, and opening
// the diff editor on empty sides takes 260-300 ms more; the tab is then blank until the first
// lines are written (0.35-0.55 s, printed below). Opening the tab on the sides' first lines
// instead was slower (0.87-1.5 s: VS Code diffs a new input's texts before it shows them).
// Goal 300 ms from the click, judged by bench/timing_goals.py; the test asserts 10 s.
test('the pass diff of a multi-MB TIR document shows its first change promptly', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  await runCommand(page, 'View: Close All Editors');
  // The changed TIR pass with the largest document after it (4.6 MB here).
  const size = (p) => statSync(join(bundle.root, p)).size;
  const pass = bundle.manifest.passes.filter((p) => p.stage === 'tir' && p.changed && p.before && p.after.endsWith('.tir'))
    .sort((a, b) => size(b.after) - size(a.after))[0];
  const sides = diffSides(bundle, pass);
  assert.ok(sides.aligned && sides.firstChange >= 0, `${pass.name}: no function-aligned diff`);
  const item = await scrollToPass(page, pass);
  const change = sides.right[sides.firstChange].trimEnd();
  const t0 = Date.now();
  await item.click();
  let opened; // when the diff editor is first there (blank until the sides get their text)
  const shown = await poll(async () => {
    if (opened === undefined && (await page.locator('.editor-instance .monaco-diff-editor').count()) > 0) opened = Date.now() - t0;
    const lines = (await page.locator('.editor-instance .monaco-diff-editor .editor.modified .view-line').allTextContents())
      .map((t) => t.replace(/\u00a0/g, ' ').trimEnd());
    return lines.includes(change) ? Date.now() - t0 : undefined;
  }, { timeoutMs: 30000, intervalMs: 20 });
  await sleep(500);
  await screenshot(page, 'big-02-tir-pass-diff');
  // The sides get their first lines first and the rest after: the whole aligned text arrives.
  await page.locator('.editor-instance .monaco-diff-editor .editor.modified textarea').first().focus();
  const whole = await poll(async () => {
    await page.keyboard.press('Control+End');
    const p = await cursorPosition(page);
    return p && p.line === sides.right.length ? p : undefined;
  }, { timeoutMs: 30000 });
  assert.ok(whole, `the right side does not end at line ${sides.right.length}: ${JSON.stringify(await cursorPosition(page))}`);
  console.log(`${pass.name} (${(size(pass.after) / 2 ** 20).toFixed(1)} MB after, ${sides.right.length} aligned lines): first change on screen ${shown} ms after the click (the diff editor there after ${opened} ms)`);
  assert.ok(shown, `the first change of ${pass.name} ("${change.trim()}") never showed`);
  // Goal 300 ms (measured from the click, the tree's own handling included; bench/
  // timing_goals.py); a diff of the whole 4.6 MB documents stayed blank for 2.9 s.
  recordGoal('editor: first change of a 4.6 MB TIR pass diff on screen, from the click', shown, 300);
  assert.ok(shown <= 10000, `the first change of ${pass.name} showed ${shown} ms after the click`);
});

/** Shows `pass` in the Passes view, scrolling the tree until its row is in view: that row. */
async function scrollToPass(page, pass) {
  await runCommand(page, 'TVM Explorer: Focus on Passes View');
  const item = page.getByRole('treeitem', { name: new RegExp(`^${pass.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}, ${pass.stage} pass ${pass.index},`) }).first();
  // The tree shows only the rows in view: scroll it until the pass is there.
  const tree = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Passes' }) }).locator('.pane-body').first();
  const box = await tree.boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  for (let i = 0; i < 40; i++) await page.mouse.wheel(0, -600); // from the top
  await sleep(200);
  for (let i = 0; i < 80 && !(await item.isVisible().catch(() => false)); i++) {
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.wheel(0, 120);
    await sleep(100);
  }
  return item;
}

/** Clicks `pass` in the Passes view. */
async function clickPass(page, pass) {
  await (await scrollToPass(page, pass)).click();
}

/** The modified side's rendered lines (spaces as spaces). */
const modifiedLines = async (page) => (await page.locator('.editor-instance .monaco-diff-editor .editor.modified .view-line').allTextContents())
  .map((t) => t.replace(/\u00a0/g, ' ').trimEnd());

/** Waits until the modified side renders `line` (trimmed of its end). */
const showsLine = (page, line) => poll(async () => (await modifiedLines(page)).includes(line.trimEnd()) || undefined, { timeoutMs: 60000, intervalMs: 100 });

test('a big pass diff comes in pages VS Code diffs within its time limit, and lands on the changed column', async () => {
  const { session, bundle } = suite;
  const { page } = session;
  await runCommand(page, 'View: Close All Editors');
  // tirx.MakePackedAPI replaces each function's 7 lines with 95 lines of argument checks: as one
  // page, VS Code's diff of it stopped at its 5 s limit on any machine ("The diff algorithm was
  // stopped early"). Now: its changed functions on pages, each big change shown as a deletion
  // and an insertion.
  const pass = bundle.manifest.passes.find((p) => p.name === 'tirx.MakePackedAPI' && p.changed);
  const first = diffSides(bundle, pass, 0);
  assert.ok(first.aligned && first.pages > 1, `${pass.name}: ${first.pages} page(s)`);
  await clickPass(page, pass);
  assert.ok(await showsLine(page, first.right[first.firstChange]), `page 1 of ${pass.name} never showed its first change`);
  const status = await poll(async () => ((await passDiffStatus(page)) ?? '').includes(`page 1/${first.pages}`) || undefined, { timeoutMs: 10000 });
  assert.ok(status, `the status bar does not say page 1/${first.pages}: ${await passDiffStatus(page)}`);
  assert.ok(first.right.some((l) => l.includes('too big a change to compare character by character')), 'no change shown as a deletion and an insertion');
  await sleep(1000);
  await screenshot(page, 'big-03-packed-api-page-1');
  // The next page, in the same tab.
  await page.locator('.editor-instance .monaco-diff-editor .editor.modified textarea').first().focus();
  await page.keyboard.press('Alt+PageDown');
  const second = diffSides(bundle, pass, 1);
  assert.ok(await showsLine(page, second.right[second.firstChange]), `page 2 of ${pass.name} never showed its first change`);
  const paged = await poll(async () => ((await passDiffStatus(page)) ?? '').includes(`page 2/${first.pages}`) || undefined, { timeoutMs: 10000 });
  assert.ok(paged, `Alt+PageDown: the status bar says ${await passDiffStatus(page)}`);
  // VS Code says so when its diff gives up: it must not, past its 5 s limit (the diff of a
  // page takes it 0.1-0.4 s here; of the whole pass it stopped at 5 s).
  await sleep(6000);
  const toasts = (await page.locator('.notifications-toasts, .notifications-center').allTextContents()).join(' | ');
  assert.ok(!/stopped early/.test(toasts), `VS Code: ${toasts}`);
  await screenshot(page, 'big-04-packed-api-page-2');

  // s_tir.CompactBufferAllocation's first change lies 124 characters into its line: the landing
  // scrolls the side sideways to it.
  await runCommand(page, 'View: Close All Editors');
  const compact = bundle.manifest.passes.find((p) => p.name === 's_tir.CompactBufferAllocation' && p.changed);
  const sides = diffSides(bundle, compact, 0);
  assert.ok(sides.firstColumn > 100, `${compact.name}: first change at column ${sides.firstColumn}`);
  await clickPass(page, compact);
  const line = sides.right[sides.firstChange];
  assert.ok(await showsLine(page, line), `${compact.name}: the first change never showed`);
  const inView = await poll(async () => {
    const got = await page.evaluate(([text, column]) => {
      const editor = document.querySelector('.editor-instance .monaco-diff-editor .editor.modified');
      const row = [...editor.querySelectorAll('.view-line')].find((el) => el.textContent.replace(/\u00a0/g, ' ').trimEnd() === text);
      if (!row) return undefined;
      const nodes = [];
      const walker = document.createTreeWalker(row, NodeFilter.SHOW_TEXT);
      while (walker.nextNode()) nodes.push(walker.currentNode);
      let offset = column;
      for (const n of nodes) {
        if (offset < n.data.length) {
          const range = document.createRange();
          range.setStart(n, offset);
          range.setEnd(n, offset + 1);
          const r = range.getBoundingClientRect();
          const view = editor.querySelector('.monaco-scrollable-element').getBoundingClientRect();
          return { left: r.left, right: r.right, viewLeft: view.left, viewRight: view.right };
        }
        offset -= n.data.length;
      }
      return undefined;
    }, [line.trimEnd(), sides.firstColumn]);
    return got && got.left >= got.viewLeft && got.right <= got.viewRight ? got : undefined;
  }, { timeoutMs: 10000, intervalMs: 200 });
  await screenshot(page, 'big-05-landing-at-changed-column');
  assert.ok(inView, `${compact.name}: column ${sides.firstColumn} of its first change is not in view`);
});
