/**
 * The line edits that turn one text into another (a Myers diff over lines), for rewriting an
 * open document in place with small edits instead of replacing all of its text.
 */

/** Replace lines [start, end) of the old text by `lines` (all 0-based, old text's lines). */
export interface LineEdit {
  start: number;
  end: number;
  lines: string[];
}

/** Beyond this many differing lines the middle of the texts is replaced as one edit. */
const MAX_DIFFERENCES = 4000;

/** The edits from `before` to `after` (split on '\n'), in order, not overlapping. */
export function lineEdits(before: string[], after: string[]): LineEdit[] {
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) {
    head++;
  }
  let tail = 0;
  while (tail < before.length - head && tail < after.length - head && before[before.length - 1 - tail] === after[after.length - 1 - tail]) {
    tail++;
  }
  const a = before.slice(head, before.length - tail);
  const b = after.slice(head, after.length - tail);
  if (a.length === 0 && b.length === 0) {
    return [];
  }
  const hunks = myers(a, b) ?? [{ start: 0, end: a.length, lines: b }];
  return hunks.map((h) => ({ start: h.start + head, end: h.end + head, lines: h.lines }));
}

/** Myers' O(ND) diff of two line lists as hunks, or undefined past MAX_DIFFERENCES. */
function myers(a: string[], b: string[]): LineEdit[] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_DIFFERENCES);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) {
    return undefined;
  }
  // Walk back from (n, m): each step of d is one deleted or inserted line.
  const ops: { kind: 'del' | 'ins'; x: number; y: number }[] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const vd = trace[d];
    const k = x - y;
    const down = k === -d || (k !== d && vd[offset + k - 1] < vd[offset + k + 1]);
    const prevK = down ? k + 1 : k - 1;
    const prevX = vd[offset + prevK];
    const prevY = prevX - prevK;
    x = prevX;
    y = prevY;
    ops.push(down ? { kind: 'ins', x: prevX, y: prevY } : { kind: 'del', x: prevX, y: prevY });
  }
  ops.reverse();
  // Group adjacent deletions/insertions into hunks.
  const hunks: LineEdit[] = [];
  for (const op of ops) {
    const last = hunks[hunks.length - 1];
    const end = op.kind === 'del' ? op.x + 1 : op.x;
    const line = op.kind === 'ins' ? [b[op.y]] : [];
    if (last && last.end === op.x && (last as LineEdit & { y: number }).y === op.y) {
      last.end = end;
      last.lines.push(...line);
      (last as LineEdit & { y: number }).y = op.kind === 'ins' ? op.y + 1 : op.y;
    } else {
      hunks.push(Object.assign({ start: op.x, end, lines: line }, { y: op.kind === 'ins' ? op.y + 1 : op.y }));
    }
  }
  return hunks.map(({ start, end, lines }) => ({ start, end, lines }));
}

/** `before` with `edits` applied (what a document shows after them). */
export function applyLineEdits(before: string[], edits: LineEdit[]): string[] {
  const out: string[] = [];
  let at = 0;
  for (const e of edits) {
    out.push(...before.slice(at, e.start), ...e.lines);
    at = e.end;
  }
  out.push(...before.slice(at));
  return out;
}
