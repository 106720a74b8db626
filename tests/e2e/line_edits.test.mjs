/**
 * The line edits a stepped pass diff applies to its sides (vscode-extension/src/lineEdits.ts),
 * checked outside the editor: applied to the old text they give the new text exactly, in order
 * and without overlap, and they are small when little changed. The module is bundled with the
 * extension's own esbuild, so the code tested is the code shipped.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(REPO, 'package.json'));

async function loadLineEdits() {
  const esbuild = require('esbuild');
  const out = join(mkdtempSync(join(tmpdir(), 'tvmx-line-edits-')), 'lineEdits.mjs');
  await esbuild.build({
    entryPoints: [join(REPO, 'vscode-extension', 'src', 'lineEdits.ts')],
    outfile: out, format: 'esm', bundle: true, platform: 'node', logLevel: 'silent',
  });
  return import(pathToFileURL(out).href);
}

function seeded(seed) {
  return () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
}

function check({ lineEdits, applyLineEdits }, before, after) {
  const edits = lineEdits(before, after);
  assert.deepEqual(applyLineEdits(before, edits), after);
  let at = 0;
  for (const e of edits) {
    assert.ok(e.start >= at && e.end >= e.start && e.end <= before.length, JSON.stringify(e));
    at = e.end;
  }
  return edits;
}

test('line edits turn one text into another, in order and without overlap', async () => {
  const m = await loadLineEdits();
  const random = seeded(7);
  const pick = (n) => Math.floor(random() * n);
  for (let round = 0; round < 2000; round++) {
    const before = Array.from({ length: pick(30) }, () => 'abcde'[pick(5)]);
    const after = before.slice();
    for (let k = pick(6); k > 0; k--) {
      const where = pick(after.length + 1);
      if (random() < 0.5 && after.length) {
        after.splice(where, 1 + pick(3));
      } else {
        after.splice(where, 0, ...Array.from({ length: 1 + pick(3) }, () => 'abcxy'[pick(5)]));
      }
    }
    check(m, before, after);
  }
  assert.deepEqual(m.lineEdits(['a', 'b'], ['a', 'b']), []);
  assert.deepEqual(check(m, [], ['x']), [{ start: 0, end: 0, lines: ['x'] }]);
});

test('a small change to a real IR document is a small edit; a wholly new text is still exact', async () => {
  const m = await loadLineEdits();
  const text = readFileSync(join(REPO, 'vscode-extension', 'src', 'passDiff.ts'), 'utf8').split('\n');
  const changed = text.slice();
  changed.splice(40, 1, '    // one changed line');
  changed.splice(10, 0, 'one added line');
  const edits = check(m, text, changed);
  assert.ok(edits.length <= 2, JSON.stringify(edits));
  assert.equal(edits.reduce((n, e) => n + e.lines.length + (e.end - e.start), 0), 3);
  // Past the diff's limit of differing lines the middle is replaced as one edit: still exact.
  const big = Array.from({ length: 9000 }, (_, i) => `line ${i}`);
  const other = Array.from({ length: 9000 }, (_, i) => `other ${i}`);
  check(m, big, other);
});
