/**
 * What the suites on a compiled bundle share: one session per suite (code-server + chromium on
 * a workspace holding a bundle compiled at start), a screenshot of the state each test ends in,
 * the check that nothing is left running, and the gestures the tests repeat.
 */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { after, afterEach, before } from 'node:test';
import { BundleView, compileBundle } from './bundle.mjs';
import { PYTHON } from './paths.mjs';
import { emptyWorkspace, Session } from './session.mjs';
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
} from './workbench.mjs';

/** The suites of this test file by what they asked for (bundleSuite). */
const SHARED = new Map();

/**
 * Registers the suite's hooks and returns its state: `session`, `bundle` and `folder` are set
 * once the session runs. `compile` options go to compileBundle (by default small_cnn for c,
 * through the cache); `shots` prefixes the names of the end-of-test screenshots;
 * `prepare(folder)` may add more to the workspace; `settings` are added to the user settings.
 * A second call in the same test file with the same `compile` and `settings` (and no
 * `prepare`) returns the first call's state: both suites run in one session.
 */
export function bundleSuite({ compile = { cache: true }, shots = '', prepare = undefined, settings = {} } = {}) {
  // Suites of one test file asking for the same bundle and settings share one session (see
  // small_cnn.test.mjs): the first registers the hooks, the others get its state.
  const shareKey = prepare ? undefined : JSON.stringify({ compile, settings });
  if (shareKey !== undefined && SHARED.has(shareKey)) return SHARED.get(shareKey);
  const suite = workspaceSuite({
    fill: (folder, runDir, state) => {
      state.bundle = new BundleView(compileBundle(folder, compile));
      state.planted = plantPackage(folder, runDir);
      prepare?.(folder); // more content for the workspace (e.g. a second bundle)
    },
    shots,
    settings,
  });
  if (shareKey !== undefined) SHARED.set(shareKey, suite);
  return suite;
}

/**
 * Registers the hooks of a suite on a workspace of its own and returns its state: `session` and
 * `folder` are set once the session runs. `fill(folder, runDir, state)` puts what the tests need
 * into the empty workspace (and may keep more in the state: node:test may run the hook before
 * this returns); `settings` are added to the user settings; with `shots`, each test ends
 * with a screenshot named after it (`shots` prefixes the name). At the end, nothing may be left
 * running.
 */
export function workspaceSuite({ fill, shots = undefined, settings = {} }) {
  const suite = { session: undefined, folder: undefined };
  before(async () => {
    suite.session = await Session.start({
      workspace: (runDir) => {
        suite.folder = emptyWorkspace(runDir);
        fill(suite.folder, runDir, suite);
        return suite.folder;
      },
      settings: { 'tvmExplorer.pythonPath': PYTHON, ...settings },
    });
  });

  if (shots !== undefined) {
    let step = 0;
    afterEach(async (t) => {
      // The state each test ends in (also on failure), for a person to look at.
      step += 1;
      const name = t.name.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 40);
      await screenshot(suite.session.page, `${shots}end-${step}-${name}`).catch(() => {});
    });
  }

  after(async () => {
    const leftovers = await suite.session?.close();
    assert.deepEqual(leftovers ?? [], [], 'processes left behind');
  });

  return suite;
}

/**
 * Plants a `tvm_explorer/` package in the workspace that leaves a marker file (outside the
 * workspace) if anything imports it: the server must import the installed package, never one
 * lying in the workspace (issue 18). Returns the marker's path.
 */
function plantPackage(folder, runDir) {
  const marker = join(runDir, 'PLANTED-CODE-RAN');
  const pkg = join(folder, 'tvm_explorer');
  mkdirSync(pkg, { recursive: true });
  const plant = `open(${JSON.stringify(marker)}, 'w').write('ran')\n`;
  writeFileSync(join(pkg, '__init__.py'), plant);
  writeFileSync(join(pkg, '__main__.py'), plant);
  return marker;
}

/** Opens a bundle document of the suite and puts the cursor on a 0-based line (and column). */
export async function openAt(suite, path, line, character) {
  await openFile(suite.session.page, relative(suite.folder, join(suite.bundle.root, path)));
  await goToLine(suite.session.page, line + 1, character === undefined ? undefined : character + 1);
}

/** Opens the model document on the opcode of `layer`'s entry (whitespace answers nothing). */
export async function openOnLayerEntry(suite, layer) {
  const entry = suite.bundle.layerEntry(layer.id);
  await openAt(suite, entry.path, entry.line, entry.character + entry.text.indexOf(layer.opcode) + 1);
}

/**
 * Ctrl-clicks `stmt` (a BundleView.statementOf result, in the open document `tab`) until the
 * model document opens (the server may still be starting); then waits for the cursor on the
 * entry of the statement's first layer. Returns that entry and the cursor position (undefined
 * if it never got there).
 */
export async function ctrlClickToModel(suite, stmt, tab) {
  const { page } = suite.session;
  const target = suite.bundle.layerEntry(stmt.layers[0].id);
  const opened = await poll(async () => {
    if (!(await activeTabTitle(page)).includes(tab)) return true;
    await ctrlClickRect(page, await wordRectOnCursorLine(page, stmt.word, stmt.character));
    return poll(async () => (await activeTabTitle(page)).includes('model.tflgraph'), { timeoutMs: 3000 });
  }, { timeoutMs: 90000, intervalMs: 1000 });
  assert.ok(opened, `ctrl-click on "${stmt.lineText.trim()}" did not open the model document`);
  const pos = await poll(async () => {
    const p = await cursorPosition(page);
    return p && p.line === target.line + 1 ? p : undefined;
  });
  return { target, pos };
}

/**
 * Hovers `stmt` (on the cursor line) until the hover names its first layer's opcode; returns
 * the hover's text (asserts that it came).
 */
export async function hoverNamingLayer(suite, stmt) {
  const { page } = suite.session;
  const layer = stmt.layers[0];
  const hover = page.locator('.monaco-hover:visible');
  const text = await poll(async () => {
    await hoverRect(page, await wordRectOnCursorLine(page, stmt.word, stmt.character));
    await hover.first().waitFor({ state: 'visible', timeout: 4000 }).catch(() => {});
    const t = (await hover.allTextContents()).join('\n');
    return t.includes(layer.opcode) ? t : undefined;
  }, { timeoutMs: 90000, intervalMs: 1000 });
  assert.ok(text, `no hover naming ${layer.opcode} over "${stmt.lineText.trim()}"`);
  return text;
}
