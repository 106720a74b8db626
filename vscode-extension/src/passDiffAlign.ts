/**
 * The sides of a pass diff of two IR documents (Relax or TIR), aligned by function name: each
 * side shows the module header, one comment line counting the functions the pass left as they
 * were, then the functions it changed, added or removed, in the same order on both sides (the
 * after-document's order, removed functions last). A diff of whole documents pairs
 * whatever lines look alike — FuseOps' new fused functions against unrelated ones — and on a
 * multi-MB TIR document VS Code needs seconds to compute it; here both sides hold only what
 * changed, so the diff is small, paired by name, and its first change is near the top.
 *
 * A side's lines map back to its file by segments (`Segment`), so that hovers, definitions and
 * "Open This Pass's Document" answer for the file's own lines.
 */

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
}

interface Block {
  key: string;
  start: number;
  end: number;
}

/** A function starts at its decorator (`    @R.function`) or, without one, at `    def name(`. */
const DECORATOR = /^ {4}@/;
const DEF = /^ {4}def ([A-Za-z_][\w]*)\s*\(/;

/** The header's length and the functions of an IR document (lines split on '\n'). */
export function splitFunctions(lines: string[]): { header: number; blocks: Block[] } | undefined {
  const starts: { start: number; name: string }[] = [];
  let pending = -1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (DECORATOR.test(line)) {
      if (pending < 0) {
        pending = i;
      }
      continue;
    }
    const def = DEF.exec(line);
    if (def) {
      starts.push({ start: pending >= 0 ? pending : i, name: def[1] });
    }
    pending = -1;
  }
  if (!starts.length) {
    return undefined;
  }
  const seen = new Map<string, number>();
  const blocks = starts.map(({ start, name }, k) => {
    const n = seen.get(name) ?? 0;
    seen.set(name, n + 1);
    let end = k + 1 < starts.length ? starts[k + 1].start : lines.length;
    while (end > start + 1 && lines[end - 1].trim() === '') {
      end--; // the blank lines between functions are not part of either
    }
    return { key: n ? `${name}#${n}` : name, start, end };
  });
  return { header: starts[0].start, blocks };
}

function same(a: string[], x: Block, b: string[], y: Block): boolean {
  if (x.end - x.start !== y.end - y.start) {
    return false;
  }
  for (let i = 0; i < x.end - x.start; i++) {
    if (a[x.start + i] !== b[y.start + i]) {
      return false;
    }
  }
  return true;
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

/** The aligned sides of `before` → `after`, or undefined when either has no functions. */
export function alignByFunction(before: string, after: string): Aligned | undefined {
  const a = before.split('\n');
  const b = after.split('\n');
  const sa = splitFunctions(a);
  const sb = splitFunctions(b);
  if (!sa || !sb) {
    return undefined;
  }
  const inA = new Map(sa.blocks.map((x) => [x.key, x]));
  const inB = new Map(sb.blocks.map((y) => [y.key, y]));
  // The after-document's order, then the functions only before (removed). A removed function
  // left among the others would stand beside a new one, and VS Code's line diff would pair
  // their look-alike loops instead of the same-named pair next to them.
  const order = [...sb.blocks.map((y) => y.key), ...sa.blocks.filter((x) => !inB.has(x.key)).map((x) => x.key)];
  const left = new SideBuilder(a);
  const right = new SideBuilder(b);
  left.copy(0, sa.header);
  right.copy(0, sb.header);
  const shown = order.filter((key) => {
    const x = inA.get(key);
    const y = inB.get(key);
    return !(x && y && same(a, x, b, y));
  });
  const unchanged = order.length - shown.length;
  const note = `    # ${unchanged} function(s) this pass left unchanged are not shown; ${shown.length} changed, added or removed`
    + " (Open This Pass's Document shows the whole file)";
  left.note(note);
  right.note(note);
  for (const key of shown) {
    const x = inA.get(key);
    const y = inB.get(key);
    left.note('');
    right.note('');
    if (x) {
      left.copy(x.start, x.end);
    }
    if (y) {
      right.copy(y.start, y.end);
    }
  }
  const l = left.done();
  const rt = right.done();
  return { left: l, right: rt, unchanged, firstChange: firstDifference(left.lines, right.lines) };
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
