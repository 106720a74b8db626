/**
 * Pass diffs against VS Code's own diff: for every pass of a bundle whose diff the extension
 * aligns by function (the server's tvmExplorer/passDiffAlignment, worked out without a server by
 * tests/pass_diff_alignment.py, laid out by passDiffAlign.ts), the time VS Code's diff algorithm (the one its diff
 * editor runs, taken from code-server's source map, with its 5 s limit and default options:
 * whitespace at the ends of lines ignored) takes on
 *   - "one page": every changed function on one page, no change split (what a pass diff
 *     showed before pages), and
 *   - each page as the extension shows it now (PAGE_COST, PAGE_LINES, SMALL_LINES,
 *     SPLIT_COST),
 * measured side by side in one process (median of --repeat runs each), with the ratio.
 *
 *   node bench/pass_diff_pages.mjs BUNDLE [--repeat 3] [--passes NAME,NAME] [--json FILE]
 */
import { execFileSync } from 'node:child_process';
import { buildSync } from 'esbuild';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MAP = join(REPO, 'node_modules', 'code-server', 'lib', 'vscode', 'out', 'vs', 'code', 'browser', 'workbench', 'workbench.js.map');

function args() {
  const out = { bundle: undefined, repeat: 3, passes: undefined, json: undefined };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--repeat') out.repeat = Number(argv[++i]);
    else if (argv[i] === '--passes') out.passes = argv[++i].split(',');
    else if (argv[i] === '--json') out.json = argv[++i];
    else out.bundle = argv[i];
  }
  if (!out.bundle) throw new Error('usage: node bench/pass_diff_pages.mjs BUNDLE [--repeat N] [--passes A,B] [--json FILE]');
  return out;
}

/** VS Code's diff computer and the extension's aligner, built into one module. */
async function load() {
  const dir = mkdtempSync(join(tmpdir(), 'tvmx-vscode-diff-'));
  const map = JSON.parse(readFileSync(MAP, 'utf8'));
  const names = new Set();
  map.sources.forEach((source, i) => {
    const m = /(vs\/(?:base|editor)\/common\/.*\.ts)$/.exec(source);
    const text = map.sourcesContent[i];
    if (!m || text == null) return;
    mkdirSync(dirname(join(dir, m[1])), { recursive: true });
    writeFileSync(join(dir, m[1]), text);
    for (const used of text.matchAll(/CharCode\.(\w+)/g)) names.add(used[1]);
  });
  // The const enum CharCode and nls are inlined in the build, so not in the map: the members used.
  const codes = { Null: 0, Tab: 9, LineFeed: 10, CarriageReturn: 13, Space: 32, ExclamationMark: 33, DoubleQuote: 34, Hash: 35,
    DollarSign: 36, PercentSign: 37, Ampersand: 38, SingleQuote: 39, OpenParen: 40, CloseParen: 41, Asterisk: 42, Plus: 43,
    Comma: 44, Dash: 45, Period: 46, Slash: 47, Colon: 58, Semicolon: 59, LessThan: 60, Equals: 61, GreaterThan: 62,
    QuestionMark: 63, AtSign: 64, OpenSquareBracket: 91, Backslash: 92, CloseSquareBracket: 93, Caret: 94, Underline: 95,
    BackTick: 96, OpenCurlyBrace: 123, Pipe: 124, CloseCurlyBrace: 125, Tilde: 126, LINE_SEPARATOR_2028: 8232, UTF8_BOM: 65279 };
  for (let i = 0; i < 10; i++) codes[`Digit${i}`] = 48 + i;
  for (let i = 0; i < 26; i++) Object.assign(codes, { [String.fromCharCode(65 + i)]: 65 + i, [String.fromCharCode(97 + i)]: 97 + i });
  let other = 0x10000;
  const members = [...names].sort().map((n) => `  ${n} = ${codes[n] ?? other++},`);
  writeFileSync(join(dir, 'vs/base/common/charCode.ts'), `export const enum CharCode {\n${members.join('\n')}\n}\n`);
  writeFileSync(join(dir, 'vs/nls.ts'), 'export function localize(_k: unknown, m: string) { return m; }\nexport function localize2(_k: unknown, m: string) { return { value: m, original: m }; }\n');
  writeFileSync(join(dir, 'entry.ts'), [
    "export { DefaultLinesDiffComputer } from './vs/editor/common/diff/defaultLinesDiffComputer/defaultLinesDiffComputer';",
    `export { alignByFunction } from ${JSON.stringify(join(REPO, 'vscode-extension', 'src', 'passDiffAlign.ts'))};`,
  ].join('\n'));
  const out = join(dir, 'built.mjs');
  buildSync({ entryPoints: [join(dir, 'entry.ts')], bundle: true, format: 'esm', platform: 'node', outfile: out, logLevel: 'error' });
  return import(pathToFileURL(out).href);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const opts = args();
  const { DefaultLinesDiffComputer, alignByFunction } = await load();
  const manifest = JSON.parse(readFileSync(join(opts.bundle, 'manifest.json'), 'utf8'));
  const read = (p) => readFileSync(join(opts.bundle, p), 'utf8');
  const diff = (aligned) => {
    const [a, b] = [aligned.left.text.split('\n'), aligned.right.text.split('\n')];
    const t = performance.now();
    const got = new DefaultLinesDiffComputer().computeDiff(a, b, { ignoreTrimWhitespace: true, maxComputationTimeMs: 5000, computeMoves: false, extendToSubwords: false });
    return { ms: performance.now() - t, stopped: got.hitTimeout, lines: b.length };
  };
  const python = process.env.TVM_EXPLORER_PYTHON || join(REPO, '.venv', 'bin', 'python');
  const alignments = JSON.parse(
    execFileSync(python, ['-m', 'tests.pass_diff_alignment', resolve(opts.bundle)], { cwd: REPO, encoding: 'utf8', maxBuffer: 1 << 30 }),
  );
  const rows = [];
  const wholeOptions = { cost: Infinity, pageLines: Infinity, smallLines: Infinity, split: Infinity };
  for (const pass of manifest.passes) {
    const alignment = pass.before ? alignments[`${pass.before}|${pass.after}`] : null;
    if (!pass.changed || !alignment) continue;
    if (opts.passes && !opts.passes.includes(pass.name)) continue;
    const [before, after] = [read(pass.before), read(pass.after)];
    const first = alignByFunction(before, after, alignment);
    if (!first) continue;
    const whole = alignByFunction(before, after, alignment, wholeOptions);
    const pages = Array.from({ length: first.pages }, (_, page) => alignByFunction(before, after, alignment, { page }));
    const runs = { whole: [], pages: pages.map(() => []) };
    let stoppedWhole = false;
    let stoppedPages = 0;
    for (let r = 0; r < opts.repeat; r++) { // interleaved, so that load falls on both alike
      const w = diff(whole);
      runs.whole.push(w.ms);
      stoppedWhole ||= w.stopped;
      pages.forEach((p, k) => {
        const got = diff(p);
        runs.pages[k].push(got.ms);
        if (got.stopped && r === 0) stoppedPages++;
      });
    }
    const slowest = Math.max(...runs.pages.map(median));
    rows.push({ index: pass.index, name: pass.name, cost: first.cost, lines: whole.right.text.split('\n').length, whole_ms: median(runs.whole), whole_stopped: stoppedWhole,
      pages: first.pages, slowest_page_ms: slowest, pages_stopped: stoppedPages, ratio: median(runs.whole) / slowest });
    const r = rows.at(-1);
    console.log(`#${String(r.index).padStart(3)} ${r.name.padEnd(34)} one page: ${String(r.lines).padStart(6)} lines ${r.whole_ms.toFixed(0).padStart(5)} ms${r.whole_stopped ? ' STOPPED' : '        '}`
      + ` (cost ${(r.cost / 1e6).toFixed(1)} M) | ${String(r.pages).padStart(2)} page(s): slowest ${r.slowest_page_ms.toFixed(0).padStart(4)} ms${r.pages_stopped ? ` ${r.pages_stopped} STOPPED` : ''} | ${r.ratio.toFixed(1)}x`);
  }
  if (opts.json) writeFileSync(opts.json, JSON.stringify(rows, null, 2));
}

await main();
