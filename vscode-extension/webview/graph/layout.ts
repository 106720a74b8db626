/**
 * Layout, one container at a time: each open group (and the root) is laid out by elkjs (the
 * Eclipse Layout Kernel's layered algorithm) on its own, its boxes being its nodes, its collapsed
 * groups and its open groups at their size; the containers are then put together. Nothing here
 * places a node by hand: ELK gives every position and every edge route.
 *
 * - Incremental: a container's layout is kept (its *base*); opening a group lays out that group
 *   alone (and the groups open inside it).
 * - Stable: when a box changes size (a group opened or closed), its container is not laid out
 *   again: what lies below the box moves down by its growth, what lies beside it (to its right)
 *   moves right, everything else stays where it was; closing it again moves them back.
 * - Bounded: no container holds more than MAX_ITEMS boxes (tree.ts cuts larger ones into parts),
 *   so no single ELK run grows past what it handles in a fraction of a second.
 * - An edge between two containers is drawn through each container's entry (top) or exit
 *   (bottom): ELK lays out an invisible entry node above and an exit node below the boxes.
 */
import type { ElkGraph, ElkResult, ElkRunner } from './elk';
import type { ViewTree } from './tree';
import type { SavedLayouts } from './types';

export interface Box {
  id: string;
  x: number;
  y: number;
  width: number;
  height: number;
}
export interface Point {
  x: number;
  y: number;
}
export interface Route {
  source: string;
  target: string;
  tensors: string[];
  points: Point[];
}
export interface Layout {
  width: number;
  height: number;
  /** Drawn nodes and graph inputs/outputs. */
  nodes: Map<string, Box>;
  /** Open groups (a frame around their boxes). */
  groups: Map<string, Box>;
  /** Collapsed groups (one box each). */
  collapsed: Map<string, Box>;
  edges: Route[];
  /** Wall time of this layout, and of its ELK runs alone. */
  ms: number;
  elkMs: number;
  /** Containers ELK laid out this time (0: every one was kept). */
  laidOut: number;
  /** Containers ELK could not lay out (packed as a grid instead). */
  failed: string[];
}

export const NODE_HEIGHT = 44;
export const IO_HEIGHT = 26;
export const COLLAPSED_HEIGHT = 58;
export const GROUP_HEADER = 24;
const IN = '__in';
const OUT = '__out';
const key = (a: string, b: string) => `${a}\u0000${b}`;

export function nodeWidth(label: string, detail: string): number {
  return Math.max(120, Math.min(260, 7.6 * Math.max(label.length, detail.length * 0.92) + 22));
}

interface Placed {
  x: number;
  y: number;
  w: number;
  h: number;
}
interface Arranged {
  pos: Map<string, Placed>;
  edges: Map<string, Point[]>;
  width: number;
  height: number;
}

/** One container's boxes and the edges between them (and through its entry and exit). */
interface Level {
  items: string[];
  edges: Map<string, string[]>;
  entries: Set<string>;
  exits: Set<string>;
}

/** A container's layout by the place of its boxes (``IN`` and ``OUT`` after them), shared by every
 * container of the same structure: the 32 decoder layers of an LLM are laid out once. */
interface Shape {
  pos: Placed[];
  edges: Map<string, Point[]>;
  width: number;
  height: number;
}

/** Bumped whenever what ELK is asked (options, sizes, the entry and exit) changes: a saved layout
 * of another version is not used. */
export const LAYOUT_VERSION = 1;

export class Layouter {
  /** Container (by its boxes) -> the structure its kept layout was made for. */
  private readonly pinned = new Map<string, string>();
  private readonly shapes = new Map<string, Shape>();
  /** Structures being laid out now (by signature): another container of the same waits for it. */
  private readonly making = new Map<string, Promise<void>>();

  constructor(private readonly runner: ElkRunner) {}

  /** Forget every kept layout (Tidy, a different model). */
  forget(): void {
    this.pinned.clear();
    this.shapes.clear();
  }

  /** How many container structures have a kept layout. */
  get shapeCount(): number {
    return this.shapes.size;
  }

  /** Every kept layout, for a cache (the host keeps it by the graph's identity). */
  save(): SavedLayouts {
    return {
      version: LAYOUT_VERSION,
      shapes: [...this.shapes].map(([sig, s]) => ({
        sig,
        pos: Array.from(s.pos, (p) => p ?? null),
        edges: [...s.edges],
        width: s.width,
        height: s.height,
      })),
    };
  }

  /** Layouts kept before (by ELK, in an earlier session of the same graph): a container whose
   * structure has one is drawn at once, without ELK. Shapes are found by structure, never by
   * name, so a layout saved for another graph cannot misplace a box; sizes that differ are moved
   * around as when a group opens. */
  restore(saved: SavedLayouts | null | undefined): number {
    if (!saved || saved.version !== LAYOUT_VERSION || !Array.isArray(saved.shapes)) {
      return 0;
    }
    for (const s of saved.shapes) {
      if (!this.shapes.has(s.sig)) {
        const pos: Placed[] = [];
        s.pos.forEach((p, i) => p && (pos[i] = p));
        this.shapes.set(s.sig, { pos, edges: new Map(s.edges), width: s.width, height: s.height });
      }
    }
    return saved.shapes.length;
  }

  /** A container's kept layout (by its boxes' ids), or undefined. */
  private kept(c: string | null, level: Level, open: (id: string) => boolean): Arranged | undefined {
    const sig = this.pinned.get(baseKey(c, level)) ?? signature(level, open);
    const shape = this.shapes.get(sig);
    if (!shape) {
      return undefined;
    }
    this.pinned.set(baseKey(c, level), sig);
    const ids = [...level.items, IN, OUT];
    const pos = new Map<string, Placed>();
    shape.pos.forEach((p, i) => p && pos.set(ids[i], p));
    const edges = new Map<string, Point[]>();
    for (const [k, pts] of shape.edges) {
      const [i, j] = k.split('\u0000').map(Number);
      edges.set(key(ids[i], ids[j]), pts);
    }
    return { pos, edges, width: shape.width, height: shape.height };
  }

  private keep(c: string | null, level: Level, open: (id: string) => boolean, arranged: Arranged): void {
    const sig = signature(level, open);
    const index = new Map([...level.items, IN, OUT].map((id, i) => [id, i]));
    const pos: Placed[] = [];
    for (const [id, p] of arranged.pos) {
      pos[index.get(id)!] = p;
    }
    const edges = new Map<string, Point[]>();
    for (const [k, pts] of arranged.edges) {
      const [a, b] = k.split('\u0000');
      edges.set(`${index.get(a)}\u0000${index.get(b)}`, pts);
    }
    this.shapes.set(sig, { pos, edges, width: arranged.width, height: arranged.height });
    this.pinned.set(baseKey(c, level), sig);
  }

  /** Lays out, in the background, the groups a click on ``gid`` would open (a repetition's
   * layout then serves every other repetition: opening any decoder layer is immediate). */
  async warm(tree: ViewTree, gid: string, collapsed: Set<string>, leafSize: (id: string) => [number, number]): Promise<void> {
    const open = (id: string) => tree.groups.has(id) && !collapsed.has(id);
    const containers: string[] = [gid];
    for (let i = 0; i < containers.length; i++) {
      containers.push(...tree.itemsOf(containers[i]).filter(open));
    }
    const shown = new Set([...containers, ...tree.ancestors(gid)]);
    const { levels } = levelsOf(tree, containers, shown);
    const current = new Map<string | null, Arranged>();
    const sizeOf = this.sizer(current, leafSize);
    for (const c of containers.reverse()) {
      const level = levels.get(c)!;
      let base = this.kept(c, level, open);
      if (!base) {
        base = await this.arrange(level, sizeOf, () => undefined);
        this.keep(c, level, open, base);
      }
      current.set(c, shifted(base, level.items, sizeOf));
    }
  }

  private sizer(current: Map<string | null, Arranged>, leafSize: (id: string) => [number, number]): (id: string) => [number, number] {
    return (id: string) => {
      const arranged = current.get(id);
      // an open group is as wide as its boxes, and at least as its collapsed box (its name)
      return arranged ? [Math.max(arranged.width, leafSize(id)[0] + 70), arranged.height + GROUP_HEADER] : leafSize(id);
    };
  }

  /**
   * Lays out what ``tree`` shows with the groups of ``collapsed`` closed. ``leafSize`` gives the
   * size of a node, graph input/output or collapsed group; ``progress`` hears how many
   * containers are laid out of how many.
   */
  async layout(
    tree: ViewTree,
    collapsed: Set<string>,
    leafSize: (id: string) => [number, number],
    progress?: (done: number, of: number) => void,
  ): Promise<Layout> {
    const t0 = performance.now();
    const open = (id: string) => tree.groups.has(id) && !collapsed.has(id);
    // The containers shown: the root and every open group whose ancestors are open.
    const containers: (string | null)[] = [null];
    for (let i = 0; i < containers.length; i++) {
      for (const item of tree.itemsOf(containers[i])) {
        if (open(item)) {
          containers.push(item);
        }
      }
    }
    const shown = new Set(containers.filter((c): c is string => c !== null));
    const { levels, visible } = levelsOf(tree, containers, shown);
    const chain = (x: string): (string | null)[] => chainOf(tree, x);
    // Bottom-up: the deepest open groups first (their size is their parent's box).
    const depth = (c: string | null) => (c === null ? 0 : tree.depth(c) + 1);
    const byDepth = [...containers].sort((x, y) => depth(y) - depth(x));
    const current = new Map<string | null, Arranged>();
    const sizeOf = this.sizer(current, leafSize);
    let laidOut = 0;
    let elkMs = 0;
    const failed: string[] = [];
    const todo = containers.filter((c) => !this.shapes.has(this.pinned.get(baseKey(c, levels.get(c)!)) ?? signature(levels.get(c)!, open)));
    let done = 0;
    for (let i = 0; i < byDepth.length;) {
      const d = depth(byDepth[i]);
      const same: (string | null)[] = [];
      while (i < byDepth.length && depth(byDepth[i]) === d) {
        same.push(byDepth[i++]);
      }
      await Promise.all(
        same.map(async (c) => {
          const level = levels.get(c)!;
          let base = this.kept(c, level, open);
          const sig = signature(level, open);
          const other = base ? undefined : this.making.get(sig);
          if (other) {
            // a container of the same structure is being laid out: its layout serves this one
            await other;
            base = this.kept(c, level, open);
          }
          if (!base) {
            let made!: () => void;
            this.making.set(sig, new Promise<void>((r) => (made = r)));
            try {
              const t = performance.now();
              base = await this.arrange(level, sizeOf, (why) => failed.push(`${c === null ? 'the top level' : tree.labelOf(c)} (${why})`));
              elkMs += performance.now() - t;
              this.keep(c, level, open, base);
            } finally {
              this.making.delete(sig);
              made();
            }
            laidOut++;
            progress?.(++done, todo.length);
          }
          current.set(c, shifted(base, level.items, sizeOf));
        }),
      );
    }
    // Top-down: absolute positions.
    const layout: Layout = {
      width: 0,
      height: 0,
      nodes: new Map(),
      groups: new Map(),
      collapsed: new Map(),
      edges: [],
      ms: 0,
      elkMs,
      laidOut,
      failed,
    };
    const origin = new Map<string | null, Point>([[null, { x: 0, y: 0 }]]);
    for (const c of containers) {
      const o = origin.get(c)!;
      const arranged = current.get(c)!;
      for (const item of levels.get(c)!.items) {
        const p = arranged.pos.get(item);
        if (!p) {
          continue;
        }
        const box = { id: item, x: o.x + p.x, y: o.y + p.y, width: p.w, height: p.h };
        if (shown.has(item)) {
          layout.groups.set(item, box);
          origin.set(item, { x: box.x, y: box.y + GROUP_HEADER });
        } else if (tree.groups.has(item)) {
          layout.collapsed.set(item, box);
        } else {
          layout.nodes.set(item, box);
        }
      }
    }
    const root = current.get(null)!;
    layout.width = root.width;
    layout.height = root.height;
    const abs = (c: string | null, k: string): Point[] => {
      const o = origin.get(c)!;
      return (current.get(c)!.edges.get(k) ?? []).map((p) => ({ x: o.x + p.x, y: o.y + p.y }));
    };
    for (const { a, b, tensors } of visible.values()) {
      const ca = chain(a);
      const cb = chain(b);
      const inB = new Set(cb);
      const li = ca.findIndex((c) => inB.has(c));
      const lj = cb.indexOf(ca[li]);
      const points: Point[] = [];
      for (let i = 0; i < li; i++) {
        points.push(...abs(ca[i], key(i === 0 ? a : (ca[i - 1] as string), OUT)));
      }
      points.push(...abs(ca[li], key(li === 0 ? a : (ca[li - 1] as string), lj === 0 ? b : (cb[lj - 1] as string))));
      for (let j = lj - 1; j >= 0; j--) {
        points.push(...abs(cb[j], key(IN, j === 0 ? b : (cb[j - 1] as string))));
      }
      const ends = [layout.nodes.get(a) ?? layout.collapsed.get(a), layout.nodes.get(b) ?? layout.collapsed.get(b)];
      if (points.length < 2 && ends[0] && ends[1]) {
        // no route (a container packed without ELK's edge routing): a straight line
        points.splice(
          0,
          points.length,
          { x: ends[0].x + ends[0].width / 2, y: ends[0].y + ends[0].height },
          { x: ends[1].x + ends[1].width / 2, y: ends[1].y },
        );
      }
      layout.edges.push({
        source: a,
        target: b,
        tensors,
        points: points.filter((p, i) => i === 0 || p.x !== points[i - 1].x || p.y !== points[i - 1].y),
      });
    }
    layout.ms = performance.now() - t0;
    return layout;
  }

  /** One container laid out by ELK (packed as a grid, with a reason, if ELK fails twice). */
  private async arrange(level: Level, sizeOf: (id: string) => [number, number], fail: (why: string) => void): Promise<Arranged> {
    const children: ElkGraph['children'] = level.items.map((id) => {
      const [width, height] = sizeOf(id);
      return { id, width, height };
    });
    const edges: ElkGraph['edges'] = [];
    for (const k of level.edges.keys()) {
      const [s, t] = k.split('\u0000');
      edges.push({ id: `e${edges.length}`, sources: [s], targets: [t] });
    }
    if (level.entries.size) {
      children.push({ id: IN, width: 1, height: 1, layoutOptions: { 'elk.layered.layering.layerConstraint': 'FIRST_SEPARATE' } });
      level.entries.forEach((t) => edges.push({ id: `e${edges.length}`, sources: [IN], targets: [t] }));
    }
    if (level.exits.size) {
      children.push({ id: OUT, width: 1, height: 1, layoutOptions: { 'elk.layered.layering.layerConstraint': 'LAST_SEPARATE' } });
      level.exits.forEach((s) => edges.push({ id: `e${edges.length}`, sources: [s], targets: [OUT] }));
    }
    const options: Record<string, string> = {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.padding': '[top=10,left=12,bottom=12,right=12]',
      'elk.layered.spacing.nodeNodeBetweenLayers': '30',
      'elk.spacing.nodeNode': '20',
      'elk.layered.spacing.edgeNodeBetweenLayers': '12',
      // Beyond a few dozen boxes: one crossing-minimization sweep and no greedy switching, which
      // halve ELK's time on a 120-box container (bench/graph_paint.py, docs/benchmarks.md).
      ...(children.length > 40 ? { 'elk.layered.thoroughness': '1', 'elk.layered.crossingMinimization.greedySwitch.type': 'OFF' } : {}),
    };
    const graph: ElkGraph = { id: 'c', layoutOptions: options, children, edges };
    let out: ElkResult | undefined;
    let why = '';
    for (const attempt of [
      options,
      {
        ...options,
        'elk.layered.thoroughness': '1',
        'elk.layered.layering.strategy': 'LONGEST_PATH',
        'elk.layered.nodePlacement.strategy': 'SIMPLE',
      },
    ]) {
      try {
        out = await this.runner.layout({ ...graph, layoutOptions: attempt });
        break;
      } catch (err) {
        why = String((err as Error)?.message ?? err).slice(0, 120);
      }
    }
    if (!out) {
      fail(why || 'ELK failed');
      out = await this.runner.layout({
        id: 'c',
        layoutOptions: {
          'elk.algorithm': 'rectpacking',
          'elk.padding': '[top=10,left=12,bottom=12,right=12]',
          'elk.spacing.nodeNode': '20',
        },
        children: children.filter((c) => c.id !== IN && c.id !== OUT),
        edges: [],
      });
    }
    const pos = new Map<string, Placed>();
    for (const c of out.children ?? []) {
      pos.set(c.id, { x: c.x, y: c.y, w: c.width, h: c.height });
    }
    const routes = new Map<string, Point[]>();
    for (const e of out.edges ?? []) {
      const s = e.sections?.[0];
      if (s) {
        routes.set(key(e.sources[0], e.targets[0]), [s.startPoint, ...(s.bendPoints ?? []), s.endPoint]);
      }
    }
    return { pos, edges: routes, width: out.width, height: out.height };
  }
}

/** The boxes of each container shown and the edges between them, through its entry and exit;
 * and the edges drawn, between the boxes standing for their ends. ``shown``: the open groups. */
function levelsOf(
  tree: ViewTree,
  containers: (string | null)[],
  shown: Set<string>,
): { levels: Map<string | null, Level>; visible: Map<string, { a: string; b: string; tensors: string[] }> } {
  const parentOf = (id: string): string | null => tree.parentOf.get(id) ?? null;
  // The box standing for a node: itself, its host when folded, or its outermost collapsed group.
  const repOf = new Map<string, string | null>();
  const rep = (id: string): string | null => {
    let r = repOf.get(id);
    if (r === undefined) {
      r = tree.foldedInto.get(id) ?? id;
      if (!tree.parentOf.has(r)) {
        r = null;
      } else {
        for (let g = parentOf(r); g; g = parentOf(g)) {
          if (!shown.has(g)) {
            r = g; // ends at the outermost group not open
          }
        }
      }
      repOf.set(id, r);
    }
    return r;
  };
  const levels = new Map<string | null, Level>(
    containers.map((c) => [c, { items: tree.itemsOf(c), edges: new Map(), entries: new Set(), exits: new Set() }]),
  );
  const visible = new Map<string, { a: string; b: string; tensors: string[] }>();
  for (const e of tree.doc.edges) {
    if (tree.foldedInto.has(e.source) || tree.foldedInto.has(e.target)) {
      continue; // a constant goes with each node it is folded into: no edge of its own
    }
    const a = rep(e.source);
    const b = rep(e.target);
    if (!a || !b || a === b) {
      continue;
    }
    const k = key(a, b);
    const seen = visible.get(k);
    if (seen) {
      seen.tensors.push(e.tensor);
      continue;
    }
    visible.set(k, { a, b, tensors: [e.tensor] });
    const ca = chainOf(tree, a);
    const cb = chainOf(tree, b);
    const inB = new Set(cb);
    const li = ca.findIndex((c) => inB.has(c));
    const lca = ca[li];
    const lj = cb.indexOf(lca);
    const itemA = li === 0 ? a : (ca[li - 1] as string);
    const itemB = lj === 0 ? b : (cb[lj - 1] as string);
    const at = levels.get(lca);
    if (at) {
      const ek = key(itemA, itemB);
      (at.edges.get(ek) ?? at.edges.set(ek, []).get(ek)!).push(e.tensor);
    }
    for (let i = 0; i < li; i++) {
      levels.get(ca[i])?.exits.add(i === 0 ? a : (ca[i - 1] as string));
    }
    for (let j = 0; j < lj; j++) {
      levels.get(cb[j])?.entries.add(j === 0 ? b : (cb[j - 1] as string));
    }
  }
  return { levels, visible };
}

/** The containers holding an item, innermost first, ending with the root (null). */
function chainOf(tree: ViewTree, x: string): (string | null)[] {
  const out: (string | null)[] = [];
  for (let c = tree.parentOf.get(x) ?? null; ; c = tree.parentOf.get(c) ?? null) {
    out.push(c);
    if (c === null) {
      return out;
    }
  }
}

/** A container's boxes, as its kept layout is found again. */
function baseKey(c: string | null, level: Level): string {
  return `${c ?? ''}\u0001${level.items.join('\u0002')}`;
}

/** What a container's layout depends on, its boxes named by their place: the kind of each box
 * (node, graph input/output, open or collapsed group), the edges between them, which boxes an
 * edge enters or leaves by. Sizes are not part of it (a box of another size is moved around). */
function signature(level: Level, open: (id: string) => boolean): string {
  const index = new Map(level.items.map((id, i) => [id, i]));
  const kinds = level.items
    .map((id) => (id.startsWith('in:') ? 'i' : id.startsWith('out:') ? 'o' : open(id) ? 'G' : /^\d+$/.test(id) ? 'n' : 'g'))
    .join('');
  const edges = [...level.edges.keys()]
    .map((k) =>
      k
        .split('\u0000')
        .map((id) => index.get(id))
        .join('>'),
    )
    .sort()
    .join(',');
  const entries = [...level.entries]
    .map((id) => index.get(id))
    .sort()
    .join(',');
  const exits = [...level.exits]
    .map((id) => index.get(id))
    .sort()
    .join(',');
  return `${kinds}|${edges}|${entries}|${exits}`;
}

/**
 * A container's base layout with its boxes at their current sizes: each box that grew (or shrank)
 * pushes what lies below it down and what lies beside it to the right by as much, lowest boxes
 * first, so that every other box keeps its place relative to its neighbours.
 */
function shifted(base: Arranged, items: string[], sizeOf: (id: string) => [number, number]): Arranged {
  const changed = items.filter((id) => {
    const p = base.pos.get(id);
    const [w, h] = sizeOf(id);
    return p && (Math.abs(p.w - w) > 0.5 || Math.abs(p.h - h) > 0.5);
  });
  if (!changed.length) {
    return base;
  }
  const pos = new Map([...base.pos].map(([k, p]) => [k, { ...p }]));
  const edges = new Map([...base.edges].map(([k, pts]) => [k, pts.map((p) => ({ ...p }))]));
  changed.sort((a, b) => base.pos.get(b)!.y - base.pos.get(a)!.y || base.pos.get(b)!.x - base.pos.get(a)!.x);
  for (const id of changed) {
    const box = pos.get(id)!;
    const [w, h] = sizeOf(id);
    const dw = w - box.w;
    const dh = h - box.h;
    const bottom = box.y + box.h - 0.5;
    const right = box.x + box.w - 0.5;
    for (const [other, p] of pos) {
      if (other === id) {
        continue;
      }
      if (p.y >= bottom) {
        p.y += dh;
      } else if (p.x >= right && p.y + p.h > box.y) {
        p.x += dw;
      }
    }
    for (const pts of edges.values()) {
      for (const p of pts) {
        if (p.y >= bottom) {
          p.y += dh;
        } else if (p.x >= right && p.y >= box.y - 0.5) {
          p.x += dw;
        }
      }
    }
    box.w = w;
    box.h = h;
  }
  let width = 0;
  let height = 0;
  for (const p of pos.values()) {
    width = Math.max(width, p.x + p.w + 12);
    height = Math.max(height, p.y + p.h + 12);
  }
  return { pos, edges, width, height };
}
