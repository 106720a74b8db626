/**
 * Layout by elkjs (the Eclipse Layout Kernel's layered algorithm, hierarchical): nodes inside
 * their scope groups, a collapsed group one box, edges between what is visible. Nothing here
 * places a node by hand: ELK gives every position and every edge route.
 */
import ELK from 'elkjs/lib/elk.bundled.js';
import type { GraphDocument } from './types';

export interface Box {
  id: string;
  x: number;
  y: number;
  width: number;
  height: number;
}
export interface Route {
  source: string;
  target: string;
  tensors: string[];
  points: { x: number; y: number }[];
}
export interface Layout {
  width: number;
  height: number;
  nodes: Map<string, Box>;
  groups: Map<string, Box>;
  collapsed: Map<string, Box>;
  edges: Route[];
  ms: number;
}

export const NODE_HEIGHT = 44;
const IO_HEIGHT = 26;
const GROUP_HEADER = 22;

export function nodeWidth(label: string, detail: string): number {
  return Math.max(110, Math.min(240, 7 * Math.max(label.length, detail.length * 0.9) + 20));
}

/** Most scope groups drawn as boxes: ELK's layered layout of nested boxes grows fast with their
 * number (1000 layers in 351 groups took 4× as long as in 18), so a model with more scopes
 * boxes only its outer levels (bench/graph_paint.py). */
export const MAX_BOXED_GROUPS = 80;

/** The groups drawn as boxes: every level, from the outermost, while they stay few. */
export function boxedGroups(doc: GraphDocument): Set<string> {
  const parentOf = new Map(doc.groups.map((g) => [g.id, g.parent]));
  const depth = new Map<string, number>();
  const depthOf = (id: string): number => {
    let d = depth.get(id);
    if (d === undefined) {
      const parent = parentOf.get(id);
      d = parent ? depthOf(parent) + 1 : 0;
      depth.set(id, d);
    }
    return d;
  };
  const levels: string[][] = [];
  for (const g of doc.groups) {
    (levels[depthOf(g.id)] ??= []).push(g.id);
  }
  const out = new Set<string>();
  for (const level of levels) {
    if (out.size + (level?.length ?? 0) > MAX_BOXED_GROUPS) {
      break;
    }
    level?.forEach((id) => out.add(id));
  }
  return out;
}

let elk: InstanceType<typeof ELK> | undefined;

/** Lays out the graph with the groups in ``collapsed`` drawn as one box each. */
export async function layOut(doc: GraphDocument, collapsed: Set<string>, labels: Map<string, [string, string]>): Promise<Layout> {
  const t0 = performance.now();
  elk ??= new ELK();
  const boxed = boxedGroups(doc);
  const rawParent = new Map<string, string | null>(doc.groups.map((g) => [g.id, g.parent]));
  /** The innermost boxed group holding ``group`` (itself if boxed). */
  const boxOf = (group: string | null): string | null => {
    let g = group;
    while (g && !boxed.has(g)) {
      g = rawParent.get(g) ?? null;
    }
    return g;
  };
  const parentOf = new Map<string, string | null>(doc.groups.map((g) => [g.id, boxOf(g.parent)]));
  /** The visible box standing for a node or group: itself, or its outermost collapsed group. */
  const visibleGroup = (group: string | null): string | null => {
    let shown: string | null = null;
    for (let g = group; g; g = parentOf.get(g) ?? null) {
      if (collapsed.has(g)) {
        shown = g;
      }
    }
    return shown;
  };
  type ElkNode = { id: string; width?: number; height?: number; children?: ElkNode[]; layoutOptions?: Record<string, string>; labels?: { text: string }[] };
  const elkGroups = new Map<string, ElkNode>();
  const root: ElkNode = { id: '__root', children: [] };
  const containerOf = (group: string | null): ElkNode => (group ? elkGroups.get(group)! : root);
  const nodeOf = new Map<string, string>();
  const size = doc.nodes.length;
  for (const g of doc.groups) {
    if (!boxed.has(g.id)) {
      continue;
    }
    const shown = visibleGroup(parentOf.get(g.id) ?? null);
    if (shown) {
      continue; // inside a collapsed group
    }
    const box: ElkNode = collapsed.has(g.id)
      ? { id: `group:${g.id}`, width: nodeWidth(g.label, `${g.size} layers`), height: NODE_HEIGHT }
      : { id: `group:${g.id}`, children: [], layoutOptions: { 'elk.padding': `[top=${GROUP_HEADER + 6},left=10,bottom=10,right=10]` } };
    elkGroups.set(g.id, box);
  }
  for (const g of doc.groups) {
    const box = elkGroups.get(g.id);
    if (box) {
      containerOf(parentOf.get(g.id) ?? null).children!.push(box);
    }
  }
  for (const n of doc.nodes) {
    const group = boxOf(n.group);
    const shown = visibleGroup(group);
    if (shown) {
      nodeOf.set(n.id, `group:${shown}`);
      continue;
    }
    const [label, detail] = labels.get(n.id) ?? [n.opcode, ''];
    containerOf(group).children!.push({ id: n.id, width: nodeWidth(label, detail), height: NODE_HEIGHT });
    nodeOf.set(n.id, n.id);
  }
  for (const io of doc.io) {
    root.children!.push({ id: io.id, width: nodeWidth(io.name, io.type), height: IO_HEIGHT });
    nodeOf.set(io.id, io.id);
  }
  // One edge per pair of visible boxes (a collapsed group's many tensors are one line).
  const routes = new Map<string, { source: string; target: string; tensors: string[] }>();
  for (const e of doc.edges) {
    const s = nodeOf.get(e.source);
    const t = nodeOf.get(e.target);
    if (!s || !t || s === t) {
      continue;
    }
    const key = `${s}\u0000${t}`;
    const r = routes.get(key);
    if (r) {
      r.tensors.push(e.tensor);
    } else {
      routes.set(key, { source: s, target: t, tensors: [e.tensor] });
    }
  }
  const edgeList = [...routes.values()];
  const big = size > 150;
  const graph = {
    id: '__root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.json.edgeCoords': 'ROOT',
      'elk.json.shapeCoords': 'ROOT',
      'elk.layered.spacing.nodeNodeBetweenLayers': '28',
      'elk.spacing.nodeNode': '18',
      // A large model is layered by longest path (linear; network simplex grows much faster)
      // with one crossing-minimization sweep: 2.3× faster on 1000 layers (bench/graph_paint.py).
      // Longest path from the sinks keeps a weight's DEQUANTIZE right above its consumer.
      ...(big ? { 'elk.layered.thoroughness': '1', 'elk.layered.layering.strategy': 'LONGEST_PATH' } : {}),
    },
    children: root.children,
    edges: edgeList.map((e, i) => ({ id: `e${i}`, sources: [e.source], targets: [e.target] })),
  };
  const out = (await elk.layout(graph as never)) as unknown as {
    width: number;
    height: number;
    children?: (ElkNode & { x: number; y: number; width: number; height: number })[];
    edges?: { id: string; sections?: { startPoint: { x: number; y: number }; endPoint: { x: number; y: number }; bendPoints?: { x: number; y: number }[] }[] }[];
  };
  const layout: Layout = { width: out.width, height: out.height, nodes: new Map(), groups: new Map(), collapsed: new Map(), edges: [], ms: 0 };
  const visit = (items: (ElkNode & { x: number; y: number; width: number; height: number })[] | undefined): void => {
    for (const c of items ?? []) {
      const box = { id: c.id, x: c.x, y: c.y, width: c.width, height: c.height };
      if (c.id.startsWith('group:')) {
        const gid = c.id.slice('group:'.length);
        (collapsed.has(gid) ? layout.collapsed : layout.groups).set(gid, box);
        visit(c.children as typeof items);
      } else {
        layout.nodes.set(c.id, box);
      }
    }
  };
  visit(out.children);
  for (const [i, e] of (out.edges ?? []).entries()) {
    const route = edgeList[Number(e.id.slice(1))] ?? edgeList[i];
    const s = e.sections?.[0];
    if (!s) {
      continue;
    }
    layout.edges.push({ ...route, points: [s.startPoint, ...(s.bendPoints ?? []), s.endPoint] });
  }
  layout.ms = performance.now() - t0;
  return layout;
}
