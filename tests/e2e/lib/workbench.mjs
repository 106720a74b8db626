/**
 * Driving the VS Code workbench in the page like a person: command palette, quick open, go to
 * line, hovering and ctrl-clicking words, reading tabs and the status bar, screenshots.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ARTIFACTS } from './paths.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Opens the workbench on `folder` and waits until it is interactive. */
export async function openWorkbench(page, url, folder) {
  await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`);
  await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60000 });
  await page.locator('.statusbar').waitFor({ state: 'visible' });
  // The explorer lists the folder once the workbench has connected to the server.
  await page.locator('.explorer-folders-view .monaco-list-row').first().waitFor({ timeout: 60000 });
}

/** Saves a screenshot as test-artifacts/vscode/<name>.png and returns its path. */
export async function screenshot(page, name) {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path, animations: 'disabled' });
  return path;
}

async function pickInQuickInput(page, text, rowText = text) {
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(text);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: rowText }).first();
  await row.waitFor({ state: 'visible', timeout: 30000 });
  await sleep(150);
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
}

/** Runs a command by its palette title, e.g. "TVM Explorer: Restart Language Server". */
export async function runCommand(page, title, { timeoutMs = 120000 } = {}) {
  // A view's "Focus on … View" command appears only once the extension registered the view:
  // try again (closing the palette) until it is there.
  const end = Date.now() + timeoutMs;
  for (;;) {
    await focusEditorArea(page);
    await page.keyboard.press('F1');
    try {
      await pickInQuickInput(page, `>${title}`, title);
      return;
    } catch (err) {
      if (Date.now() > end) throw err;
      await page.keyboard.press('Escape');
    }
  }
}

/** Opens a workspace file by relative path with Quick Open and waits for its tab. */
export async function openFile(page, relPath) {
  const name = relPath.split('/').pop();
  for (let attempt = 0; ; attempt++) {
    await focusEditorArea(page);
    await page.keyboard.press('Control+P');
    await pickInQuickInput(page, relPath, name);
    try {
      // Quick Open right after a jump into a preview editor sometimes opens nothing: again.
      await page.locator('.tab.active', { hasText: name }).waitFor({ timeout: attempt ? 30000 : 15000 });
      break;
    } catch (err) {
      if (attempt) throw err;
    }
  }
  await page.locator('.editor-instance .view-line').first().waitFor();
}

async function focusEditorArea(page) {
  await page.keyboard.press('Escape');
}

/** Moves the cursor to a 1-based line (and column) with Ctrl+G. */
export async function goToLine(page, line, column) {
  await page.locator('.editor-instance .monaco-editor textarea').first().focus();
  await goToLineInFocused(page, line, column);
  await sleep(200);
}

/** Moves the cursor of the editor that has the focus (a diff's side, an editor column) to a
 * 1-based line (and column) with Ctrl+G. */
export async function goToLineInFocused(page, line, column) {
  await page.keyboard.press('Control+G');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(column ? `:${line}:${column}` : `:${line}`);
  await sleep(150);
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden' });
}

/**
 * Client rectangle of `word` on the editor line that holds the cursor (after goToLine),
 * found with a DOM Range over the line's text nodes.
 */
export async function wordRectOnCursorLine(page, word, from = 0) {
  const rect = await page.evaluate(([word, from]) => {
    const editor = document.querySelector('.editor-instance .monaco-editor.focused') ||
      document.querySelector('.editor-instance .monaco-editor');
    const cursor = editor.querySelector('.cursors-layer .cursor');
    const cy = cursor.getBoundingClientRect().top + 2;
    const line = [...editor.querySelectorAll('.view-line')].find((el) => {
      const r = el.getBoundingClientRect();
      return r.top <= cy && cy < r.bottom;
    });
    if (!line) return null;
    const nodes = [];
    const walker = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) nodes.push(walker.currentNode);
    const text = nodes.map((n) => n.data).join('').replace(/\u00a0/g, ' ');
    const re = new RegExp(`(?<![A-Za-z0-9_])${word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![A-Za-z0-9_])`, 'g');
    re.lastIndex = from;
    const m = re.exec(text) ?? ((re.lastIndex = 0), re.exec(text));
    if (!m) return { error: `"${word}" not on line "${text}"` };
    const at = (offset) => {
      for (const n of nodes) {
        if (offset <= n.data.length) return [n, offset];
        offset -= n.data.length;
      }
      return [nodes[nodes.length - 1], nodes[nodes.length - 1].data.length];
    };
    const range = document.createRange();
    range.setStart(...at(m.index));
    range.setEnd(...at(m.index + word.length));
    const r = range.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width, height: r.height, line: text };
  }, [word, from]);
  if (!rect || rect.error) throw new Error(rect ? rect.error : 'cursor line not rendered');
  return rect;
}

/** Moves the mouse away, then onto the middle of `rect` in small steps (to trigger a hover). */
export async function hoverRect(page, rect) {
  await page.mouse.move(5, 5);
  await sleep(100);
  await page.mouse.move(rect.x + rect.width / 2, rect.y + rect.height / 2, { steps: 8 });
}

/** Ctrl+click on the middle of `rect`. */
export async function ctrlClickRect(page, rect) {
  await page.mouse.move(rect.x + rect.width / 2, rect.y + rect.height / 2, { steps: 4 });
  await page.keyboard.down('Control');
  try {
    await sleep(150);
    await page.mouse.click(rect.x + rect.width / 2, rect.y + rect.height / 2);
  } finally {
    await page.keyboard.up('Control');
  }
}

/** Text of the active editor tab. */
export async function activeTabTitle(page) {
  return ((await page.locator('.tab.active').first().textContent()) ?? '').trim();
}

/**
 * Does `act` (a ctrl-click, F12) until the active tab's title holds `title`, waiting up to
 * `settleMs` after each for the tab to open: true once it has, a falsy value if it never did.
 */
export async function actUntilTab(page, title, act, { timeoutMs, intervalMs, settleMs }) {
  return poll(async () => {
    if ((await activeTabTitle(page)).includes(title)) return true;
    await act();
    return poll(async () => (await activeTabTitle(page)).includes(title), { timeoutMs: settleMs });
  }, { timeoutMs, intervalMs });
}

/** The pass the pass diff's status bar item names ("FuseOps · relax pass #12"), or undefined. */
export async function passDiffStatus(page) {
  const items = await page.locator('.statusbar-item').allTextContents();
  return items.map((t) => t.trim()).find((t) => /· (relax|tir) pass #\d+/.test(t));
}

/** The status bar's "Ln X, Col Y" as numbers, or null. */
export async function cursorPosition(page) {
  const items = await page.locator('.statusbar-item').allTextContents();
  for (const t of items) {
    const m = /Ln (\d+), Col (\d+)/.exec(t);
    if (m) return { line: Number(m[1]), column: Number(m[2]) };
  }
  return null;
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes; returns the last value. */
export async function poll(fn, { timeoutMs = 30000, intervalMs = 500 } = {}) {
  const deadline = Date.now() + timeoutMs;
  let value;
  for (;;) {
    try {
      value = await fn();
    } catch (err) {
      value = undefined;
      if (Date.now() >= deadline) throw err;
    }
    if (value || Date.now() >= deadline) return value;
    await sleep(intervalMs);
  }
}
