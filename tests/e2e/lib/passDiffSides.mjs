/**
 * What the two sides of a pass diff hold, worked out by the extension's own passDiffAlign.ts
 * (built here with esbuild) from the server's alignment (tests/pass_diff_alignment.py: the
 * answer of tvmExplorer/passDiffAlignment, without a server): between two IR documents the
 * functions the pass changed, aligned by name; otherwise the whole documents. Tests compare what
 * VS Code renders against it.
 */
import { execFileSync } from 'node:child_process';
import { buildSync } from 'esbuild';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PYTHON, REPO } from './paths.mjs';

const out = join(mkdtempSync(join(tmpdir(), 'tvmx-align-')), 'passDiffAlign.mjs');
buildSync({ entryPoints: [join(REPO, 'vscode-extension', 'src', 'passDiffAlign.ts')], bundle: true, format: 'esm', platform: 'node', outfile: out, logLevel: 'error' });
const align = await import(pathToFileURL(out).href);

/** The server's alignments of a bundle's passes, by `<before>|<after>` (asked once a bundle). */
const alignments = new Map();
function alignmentOf(bundle, pass) {
  if (!alignments.has(bundle.root)) {
    const out = execFileSync(PYTHON, ['-m', 'tests.pass_diff_alignment', bundle.root], { cwd: REPO, encoding: 'utf8', maxBuffer: 1 << 30 });
    alignments.set(bundle.root, JSON.parse(out));
  }
  return alignments.get(bundle.root)[`${pass.before}|${pass.after}`] ?? null;
}

/** `{left, right}` (lines), the right side's line map (`toSide(fileLine)` → side line or
 * undefined), `firstChange` and `firstColumn` (0-based), `page` and `pages` of page `page` of
 * the diff of `pass` in `bundle` (a BundleView). */
export function diffSides(bundle, pass, page = 0) {
  const text = (p) => (p ? bundle.codePoints(p).join('') : '');
  const before = text(pass.before);
  const after = text(pass.after);
  const alignment = pass.before ? alignmentOf(bundle, pass) : null;
  const aligned = alignment ? align.alignByFunction(before, after, alignment, { page }) : undefined;
  if (!aligned) {
    const left = before.split('\n');
    const right = after.split('\n');
    const firstChange = align.firstDifference(left, right);
    const firstColumn = firstChange >= 0 ? align.firstColumnOf(left[firstChange] ?? '', right[firstChange] ?? '') : 0;
    return { left, right, toSide: (l) => l, firstChange, firstColumn, page: 0, pages: 1, aligned: false };
  }
  return {
    left: aligned.left.text.split('\n'),
    right: aligned.right.text.split('\n'),
    toSide: (l) => align.toSideLine(aligned.right.segments, l),
    firstChange: aligned.firstChange,
    firstColumn: aligned.firstColumn,
    page: aligned.page,
    pages: aligned.pages,
    aligned: true,
  };
}
