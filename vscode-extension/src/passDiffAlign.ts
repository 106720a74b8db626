/**
 * The sides of a pass diff of two IR documents (Relax or TIR), aligned by function name: each
 * side shows the module header, one comment line counting the functions the pass left as they
 * were, then the functions it changed, added or removed, in the same order on both sides (the
 * after-document's order, removed functions last). A diff of whole documents pairs
 * whatever lines look alike — FuseOps' new fused functions against unrelated ones — and on a
 * multi-MB TIR document VS Code needs seconds to compute it; here both sides hold only what
 * changed, so the diff is small, paired by name, and its first change is near the top.
 *
 * Which functions there are, where each lies and which the pass changed is the server's answer
 * (`tvmExplorer/passDiffAlignment`, from its index of the documents); this module only lays the
 * sides out for VS Code's diff: pages, notes, changes too big to compare character by character.
 *
 * A side's lines map back to its file by segments (`Segment`), so that hovers, definitions and
 * "Open This Pass's Document" answer for the file's own lines.
 */
import { lineEdits } from './lineEdits';
import type { PassDiffAlignmentResult } from './lsp_ext';

/** Lines [side, side + count) of a side are lines [file, file + count) of its file. */
export interface Segment {
  side: number;
  file: number;
  count: number;
}

export interface AlignedSide {
  text: string;
  segments: Segment[];
}

export interface Aligned {
  left: AlignedSide;
  right: AlignedSide;
  /** Functions the same on both sides, not shown. */
  unchanged: number;
  /** The first line (0-based, on both sides) where the sides differ; -1 when they do not. */
  firstChange: number;
  /** The first character (0-based) of that line where they differ (0 when they do not). */
  firstColumn: number;
  /** The page shown (0-based) and how many there are (see `PAGE_COST`). */
  page: number;
  pages: number;
  /** The changed, added or removed functions, each with the first page showing it. */
  functions: { name: string; page: number }[];
  /** What one page of every change would cost (see `PAGE_COST`). */
  cost: number;
}

/**
 * What VS Code's diff of one page may cost, in the units of `changeCost`. Its diff editor lines
 * the two texts up, then works out the characters that differ within every change, and gives
 * up after 5 s ("the diff algorithm was stopped early"); the characters are most of the work:
 * a change costs about its characters times the characters that differ. A pass diff over
 * this, or longer than `SMALL_LINES`, is shown in pages (Pass Diff: Page Forward / Back): its
 * changed functions, then the functions it added, then those it removed, each on pages of
 * their own (lines of a function on one side only, beside another function's, were paired
 * with them: FuseOps' new fused functions hold the very bindings it took out of `main`), and
 * a change costing more than `SPLIT_COST` is shown as a deletion and an insertion, not
 * compared character by character. `bench/pass_diff_pages.mjs` measures VS Code's own diff on
 * the pages against one page of it all (tirx.MakePackedAPI replaces each function's 7 lines
 * by 95 lines of argument checks: one page took VS Code past its 5 s limit, each page ~0.2 s).
 */
export const PAGE_COST = 40_000_000;

/** Most lines of a side of one page (VS Code lines the sides up in time growing with both). */
export const PAGE_LINES = 4000;

/** A pass diff this short, and within `PAGE_COST`, is one page, unless it holds functions the pass
 * removed beside others (see `alignByFunction`). */
export const SMALL_LINES = 1000;

/** A change costing more than this is split when the diff is paged (see `PAGE_COST`). */
export const SPLIT_COST = 2_000_000;

/** A cell of VS Code's dynamic-programming comparison of short texts, in `changeCost` units. */
const DP_CELL = 5;

/**
 * What VS Code's diff spends on comparing the characters of old text `a` with new text `b` (see
 * `PAGE_COST`): their length times the characters that differ, counted as the characters one
 * holds more of than the other (a lower bound of the edit that turns one into the other, close
 * to it for code: `T.round(` → `T.call_llvm_pure_intrin("float32", "llvm.nearbyint", ` differs
 * by 45 characters of a 280-character line). A pure insertion or deletion costs nothing.
 */
export function changeCost(a: string, b: string): number {
  if (!a.length || !b.length) {
    return 0;
  }
  if (a.length + b.length < 500) {
    // VS Code compares short texts cell by cell (dynamic programming, the clock read at each):
    // every pair of characters, whatever differs.
    return a.length * b.length * DP_CELL;
  }
  const counts = new Map<number, number>();
  for (let i = 0; i < a.length; i++) {
    const c = a.charCodeAt(i);
    counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  for (let i = 0; i < b.length; i++) {
    const c = b.charCodeAt(i);
    counts.set(c, (counts.get(c) ?? 0) - 1);
  }
  let differ = 0;
  for (const n of counts.values()) {
    differ += Math.abs(n);
  }
  return (a.length + b.length) * Math.max(differ, 1);
}

interface Block {
  key: string;
  start: number;
  end: number;
}

/** Lines [start, end) of a range of the server's (its last line whole, ending mid-line). */
function linesOf(range: { start: { line: number }; end: { line: number; character: number } }): { start: number; end: number } {
  return { start: range.start.line, end: range.end.line + (range.end.character > 0 ? 1 : 0) };
}

/** The functions of each side as line blocks by name, and the lines of each side's header;
 * undefined when either side has no function or the alignment does not fit the texts (a file
 * changed since the server read it). */
function blocksOf(
  alignment: PassDiffAlignmentResult,
  a: string[],
  b: string[],
): { inA: Map<string, Block>; inB: Map<string, Block>; headers: [number, number] } | undefined {
  const inA = new Map<string, Block>();
  const inB = new Map<string, Block>();
  for (const f of alignment.functions) {
    if (f.before) {
      inA.set(f.name, { key: f.name, ...linesOf(f.before) });
    }
    if (f.after) {
      inB.set(f.name, { key: f.name, ...linesOf(f.after) });
    }
  }
  const fits = (blocks: Map<string, Block>, lines: string[]) => [...blocks.values()].every((x) => x.end <= lines.length);
  if (!inA.size || !inB.size || !fits(inA, a) || !fits(inB, b)) {
    return undefined;
  }
  return { inA, inB, headers: [alignment.before_header.end.line, alignment.after_header.end.line] };
}

class SideBuilder {
  readonly lines: string[] = [];
  readonly segments: Segment[] = [];

  constructor(private readonly file: string[]) {}

  copy(start: number, end: number): void {
    if (end > start) {
      this.segments.push({ side: this.lines.length, file: start, count: end - start });
      for (let i = start; i < end; i++) {
        this.lines.push(this.file[i]);
      }
    }
  }

  note(text: string): void {
    this.lines.push(text);
  }

  done(): AlignedSide {
    return { text: this.lines.join('\n'), segments: this.segments };
  }
}

/** Which page of a pass diff, and the limits pages are cut by (benchmarks and tests change them;
 * `Infinity` turns paging or the splitting of big changes off). */
export interface AlignOptions {
  page?: number;
  cost?: number;
  pageLines?: number;
  smallLines?: number;
  split?: number;
}

/** A run of lines of a function on each side: copied as they are, or (`split`) a change too
 * costly to compare character by character, shown as its old lines, then a note line on both
 * sides, then its new lines (a deletion and an insertion). */
interface Piece {
  x: [number, number];
  y: [number, number];
  split?: boolean;
}

type Kind = 'changed' | 'added' | 'removed';

/** Some pieces of one function, what they cost VS Code's diff and how many lines they hold. */
interface Part {
  key: string;
  kind: Kind;
  pieces: Piece[];
  cost: number;
  lines: number;
  /** Part `index` of `of` of a function cut between its changes (`of` 1: whole). */
  index: number;
  of: number;
}

interface Hunk {
  aStart: number;
  aEnd: number;
  bStart: number;
  bEnd: number;
  cost: number;
}

/** The changes of function `x` into `y` as VS Code's diff finds them (relative lines): lines
 * compared without their indentation, and two changes with only a few characters of unchanged
 * text between them (a blank line, a closing bracket) joined, as its
 * removeVeryShortMatchingLinesBetweenDiffs does. */
function hunksOf(a: string[], x: Block, b: string[], y: Block): Hunk[] {
  const trim = (l: string) => l.trim();
  let shift = 0;
  const found = lineEdits(a.slice(x.start, x.end).map(trim), b.slice(y.start, y.end).map(trim)).map((e) => {
    const h = { aStart: e.start, aEnd: e.end, bStart: e.start + shift, bEnd: e.start + shift + e.lines.length };
    shift += e.lines.length - (e.end - e.start);
    return h;
  });
  const joined: typeof found = [];
  const big = (g: (typeof found)[number]) => g.aEnd - g.aStart + g.bEnd - g.bStart > 5;
  for (const h of found) {
    const last = joined[joined.length - 1];
    const between = last
      ? a
          .slice(x.start + last.aEnd, x.start + h.aStart)
          .join('')
          .replace(/\s/g, '').length
      : Infinity;
    if (last && between <= 4 && (big(last) || big(h))) {
      joined[joined.length - 1] = { aStart: last.aStart, aEnd: h.aEnd, bStart: last.bStart, bEnd: h.bEnd };
    } else {
      joined.push(h);
    }
  }
  // Lines that differ only in their indentation cost nothing: VS Code's diff editor ignores
  // leading and trailing whitespace by default (diffEditor.ignoreTrimWhitespace).
  return joined.map((h) => {
    const [ta, tb] = [a.slice(x.start + h.aStart, x.start + h.aEnd), b.slice(y.start + h.bStart, y.start + h.bEnd)];
    return { ...h, cost: changeCost(ta.map(trim).join('\n'), tb.map(trim).join('\n')) };
  });
}

/**
 * A changed, added or removed function as parts: whole, or, when `paged`, cut between two
 * changes (in the middle of the same lines between them) where its cost reaches `budget`,
 * its changes costing more than `split` shown as a deletion and an insertion.
 */
function partsOf(
  key: string,
  a: string[],
  x: Block | undefined,
  b: string[],
  y: Block | undefined,
  paged: boolean,
  budget: number,
  split: number,
): Part[] {
  if (!x || !y) {
    const piece: Piece = x ? { x: [x.start, x.end], y: [0, 0] } : { x: [0, 0], y: [y!.start, y!.end] };
    const block = (x ?? y)!;
    return [{ key, kind: x ? 'removed' : 'added', pieces: [piece], cost: 0, lines: block.end - block.start, index: 1, of: 1 }];
  }
  const hunks = hunksOf(a, x, b, y).map((h) => ({ ...h, split: paged && h.cost > split }));
  const cuts: [number, number][] = [[0, 0]];
  let cost = 0;
  for (let i = 0; i < hunks.length; i++) {
    const own = hunks[i].split ? 0 : hunks[i].cost;
    if (paged && i > 0 && cost + own > budget) {
      const prev = hunks[i - 1];
      const gap = Math.floor((hunks[i].aStart - prev.aEnd) / 2); // the same lines on both sides
      cuts.push([prev.aEnd + gap, prev.bEnd + gap]);
      cost = 0;
    }
    cost += own;
  }
  cuts.push([x.end - x.start, y.end - y.start]);
  const parts: Part[] = [];
  for (let k = 0; k + 1 < cuts.length; k++) {
    const [[fromA, fromB], [toA, toB]] = [cuts[k], cuts[k + 1]];
    const inside = hunks.filter((h) => h.aStart >= fromA && h.aStart < Math.max(toA, fromA + 1) && h.aEnd <= toA);
    const pieces: Piece[] = [];
    let [atA, atB] = [fromA, fromB];
    for (const h of inside.filter((g) => g.split)) {
      pieces.push({ x: [x.start + atA, x.start + h.aStart], y: [y.start + atB, y.start + h.bStart] });
      pieces.push({ x: [x.start + h.aStart, x.start + h.aEnd], y: [y.start + h.bStart, y.start + h.bEnd], split: true });
      [atA, atB] = [h.aEnd, h.bEnd];
    }
    pieces.push({ x: [x.start + atA, x.start + toA], y: [y.start + atB, y.start + toB] });
    parts.push({
      key,
      kind: 'changed',
      pieces,
      cost: inside.reduce((n, h) => n + (h.split ? 0 : h.cost), 0),
      lines: Math.max(toA - fromA, toB - fromB),
      index: k + 1,
      of: cuts.length - 1,
    });
  }
  return parts;
}

/** The aligned sides of `before` → `after` as the server aligned their functions
 * (`alignment`), or undefined when either has no functions; one page of them when they hold
 * more than a page (`PAGE_COST`). */
export function alignByFunction(
  before: string,
  after: string,
  alignment: PassDiffAlignmentResult,
  options: AlignOptions = {},
): Aligned | undefined {
  const { page = 0, cost: budget = PAGE_COST, pageLines = PAGE_LINES, smallLines = SMALL_LINES, split = SPLIT_COST } = options;
  const a = before.split('\n');
  const b = after.split('\n');
  const blocks = blocksOf(alignment, a, b);
  if (!blocks) {
    return undefined;
  }
  const { inA, inB, headers } = blocks;
  // The server's order: the after-document's, then the functions only before (removed). A
  // removed function left among the others would stand beside a new one, and VS Code's line
  // diff would pair their look-alike loops instead of the same-named pair next to them.
  const shown = alignment.functions.filter((f) => f.change !== 'unchanged').map((f) => f.name);
  const unchanged = alignment.unchanged;
  const partsIn = (paged: boolean) => shown.flatMap((key) => partsOf(key, a, inA.get(key), b, inB.get(key), paged, budget, split));
  const whole = partsIn(false);
  const wholeCost = whole.reduce((n, p) => n + p.cost, 0);
  const wholeLines = whole.reduce((n, p) => n + p.lines, 0);
  // Functions the pass removed beside functions on both sides: VS Code's line diff pairs the
  // removed ones' lines with whatever looks alike on the other side (FuseTIR's new PrimFuncs hold
  // the very blocks of the PrimFuncs it removed, and their lines outnumber the `# ── name ──`
  // lines that pair a fused Relax function with its PrimFunc): the removed go on a page of their own.
  const kindsOf = new Set(whole.map((p) => p.kind));
  const removedBeside = kindsOf.has('removed') && kindsOf.size > 1 && Number.isFinite(pageLines);
  let pages: Part[][];
  const small = wholeCost <= budget && wholeLines <= smallLines;
  if (small && !removedBeside) {
    pages = [whole];
  } else {
    // Changed functions, then added ones, then removed ones, each kind on pages of its own (a
    // small diff paged for its removed functions only: its changes whole, compared as they are).
    const parts = small ? whole : partsIn(true);
    const kinds: Kind[] = ['changed', 'added', 'removed'];
    pages = [];
    for (const kind of kinds) {
      let cost = Infinity;
      let lines = Infinity;
      for (const part of parts.filter((p) => p.kind === kind)) {
        if (cost + part.cost > budget || lines + part.lines > pageLines) {
          pages.push([]);
          cost = 0;
          lines = 0;
        }
        pages[pages.length - 1].push(part);
        cost += part.cost;
        lines += part.lines;
      }
    }
    if (!pages.length) {
      pages = [[]];
    }
  }
  const at = Math.max(0, Math.min(page, pages.length - 1));
  const functions: { name: string; page: number }[] = [];
  pages.forEach((parts, k) => parts.forEach((p) => p.index === 1 && functions.push({ name: p.key, page: k })));
  let note = `    # ${unchanged} function(s) this pass left unchanged are not shown; ${shown.length} changed, added or removed`;
  if (pages.length > 1) {
    const names = new Set(pages[at].map((p) => p.key));
    const kind = pages[at][0]?.kind ?? 'changed';
    note += `; page ${at + 1} of ${pages.length} shows ${names.size} ${kind} (Alt+PageDown / Alt+PageUp: Pass Diff: Page Forward / Back)`;
  }
  note += " (Open This Pass's Document shows the whole file)";
  const left = new SideBuilder(a);
  const right = new SideBuilder(b);
  left.copy(0, headers[0]);
  right.copy(0, headers[1]);
  left.note(note);
  right.note(note);
  for (const part of pages[at]) {
    // A line of its own before each function, the same on both sides: VS Code's diff pairs it,
    // so that what it finds changed stays within a function.
    const kind = part.kind === 'changed' ? '' : ` (${part.kind})`;
    const head = `    # ── ${part.key}${kind}${part.of > 1 ? `, part ${part.index} of ${part.of}` : ''} ──`;
    left.note(head);
    right.note(head);
    for (const piece of part.pieces) {
      left.copy(...piece.x);
      if (piece.split) {
        const lines = `${piece.x[1] - piece.x[0]} line(s) replaced by ${piece.y[1] - piece.y[0]}`;
        const note = `        # ↑ ${lines} ↓ (too big a change to compare character by character)`;
        left.note(note);
        right.note(note);
      }
      right.copy(...piece.y);
    }
  }
  const l = left.done();
  const rt = right.done();
  const firstChange = firstDifference(left.lines, right.lines);
  return {
    left: l,
    right: rt,
    unchanged,
    firstChange,
    firstColumn: firstChange >= 0 ? firstColumnOf(left.lines[firstChange] ?? '', right.lines[firstChange] ?? '') : 0,
    page: at,
    pages: pages.length,
    functions,
    cost: wholeCost,
  };
}

/** The first character where two lines differ (their common length when one extends the other). */
export function firstColumnOf(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) {
    i++;
  }
  return i;
}

/** The first line where two texts' lines differ; -1 when they are the same. */
export function firstDifference(a: string[], b: string[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) {
      return i;
    }
  }
  return a.length === b.length ? -1 : n;
}

/** The file line of a side line (undefined on a line of its own: a note, a separator). */
export function toFileLine(segments: Segment[] | undefined, line: number): number | undefined {
  if (!segments) {
    return line;
  }
  const s = segments.find((g) => line >= g.side && line < g.side + g.count);
  return s ? s.file + (line - s.side) : undefined;
}

/** The side line of a file line (undefined when the side does not show it). */
export function toSideLine(segments: Segment[] | undefined, line: number): number | undefined {
  if (!segments) {
    return line;
  }
  const s = segments.find((g) => line >= g.file && line < g.file + g.count);
  return s ? s.side + (line - s.file) : undefined;
}
