/**
 * What is drawn, as a tree: the document's scope groups, plus parts of a container too large to
 * lay out at once (a model of thousands of layers with no scopes is cut into parts of at most
 * ``MAX_ITEMS`` boxes, in layer order), with each node's innermost group; and which nodes are
 * folded into the node they prepare a constant for (docs/graph.md, "Weights folded").
 */
import type { GraphDocument, GraphNode, Repeat } from './types';

/** At most this many boxes (nodes and groups) are laid out together: ELK's layered layout grows
 * faster than linearly with them, and its recursion overflowed the stack on a 4 500-layer graph. */
export const MAX_ITEMS = 240;
/** Repetitions in a row beyond which they are drawn in parts, and how many a part holds. */
export const REPEAT_RUN = 64;
export const REPEAT_PART = 32;

export interface ViewGroup {
  id: string;
  label: string;
  path: string;
  parent: string | null;
  /** Child groups and drawn nodes, in layer order (a container's boxes). */
  items: string[];
  /** Layers beneath it, folded ones included. */
  size: number;
  /** A part made to keep a container small (not a scope of the model). */
  part: boolean;
  repeat: Repeat | null;
  /** A part holding repetitions of this repeated module (``model.layers.{0..169}``), not made
   * for size. */
  run?: string | null;
}

export class ViewTree {
  readonly groups = new Map<string, ViewGroup>();
  /** The root's boxes: top-level groups, nodes outside every group, graph inputs and outputs. */
  readonly rootItems: string[] = [];
  /** Node (or graph input/output) -> its innermost group (null: the root). */
  readonly parentOf = new Map<string, string | null>();
  /** Folded node -> the drawn node it is folded into. */
  readonly foldedInto = new Map<string, string>();
  /** Drawn node -> the nodes folded into it. */
  readonly folded = new Map<string, string[]>();
  /** Containers that were cut into parts. */
  readonly partsMade: string[] = [];
  private readonly members = new Map<string, string[]>();
  private readonly order = new Map<string, number>();
  private readonly firsts = new Map<string, number>();

  constructor(
    readonly doc: GraphDocument,
    readonly fold: boolean,
  ) {
    doc.nodes.forEach((n, i) => this.order.set(n.id, i));
    const known = new Set(doc.nodes.map((n) => n.id));
    for (const g of doc.groups) {
      this.groups.set(g.id, {
        id: g.id,
        label: g.label,
        path: g.path,
        parent: g.parent,
        items: [],
        size: g.size,
        part: false,
        repeat: g.repeat ?? null,
      });
    }
    for (const g of doc.groups) {
      const parent = g.parent ? this.groups.get(g.parent) : undefined;
      (parent ? parent.items : this.rootItems).push(g.id);
    }
    for (const n of doc.nodes) {
      let into = fold && n.fold && known.has(n.fold) ? n.fold : null;
      // a chain of folds ends at a drawn node
      for (let hops = 0; into && hops < 64; hops++) {
        const next: GraphNode | undefined = doc.nodes[this.order.get(into)!];
        if (!next?.fold || !known.has(next.fold)) {
          break;
        }
        into = next.fold;
      }
      const group = n.group && this.groups.has(n.group) ? n.group : null;
      this.parentOf.set(n.id, group);
      if (into && into !== n.id) {
        this.foldedInto.set(n.id, into);
        (this.folded.get(into) ?? this.folded.set(into, []).get(into)!).push(n.id);
      } else {
        (group ? this.groups.get(group)!.items : this.rootItems).push(n.id);
      }
    }
    for (const io of doc.io) {
      this.parentOf.set(io.id, null);
      this.rootItems.push(io.id);
    }
    for (const g of this.groups.values()) {
      this.parentOf.set(g.id, g.parent);
    }
    // a group whose every layer is folded into nodes outside it has nothing to draw
    const empty = (gid: string): boolean => {
      const g = this.groups.get(gid)!;
      g.items = g.items.filter((i) => !this.groups.has(i) || !empty(i));
      return g.items.length === 0;
    };
    const top = this.rootItems.filter((i) => !this.groups.has(i) || !empty(i));
    this.rootItems.splice(0, this.rootItems.length, ...top);
    for (const g of [...this.groups.values()]) {
      g.items.sort((a, b) => this.first(a) - this.first(b));
      this.cut(g.id, g.items);
    }
    this.rootItems.sort((a, b) => this.first(a) - this.first(b));
    this.cut(null, this.rootItems);
  }

  /** Where an item stands in layer order: its own index, or its first layer's. */
  first(id: string): number {
    const o = this.order.get(id);
    if (o !== undefined) {
      return o;
    }
    const g = this.groups.get(id);
    if (g) {
      let best = this.firsts.get(id);
      if (best === undefined) {
        best = Infinity;
        for (const item of g.items) {
          best = Math.min(best, this.first(item));
        }
        this.firsts.set(id, best);
      }
      return best;
    }
    return id.startsWith('in:') ? -1 : this.doc.nodes.length; // graph inputs first, outputs last
  }

  /** Cuts a container of more than MAX_ITEMS boxes into parts of consecutive layers (parts of
   * parts when even those are too many). */
  private cut(container: string | null, items: string[]): void {
    if (items.length <= MAX_ITEMS) {
      this.cutRun(container, items);
      return;
    }
    const isIO = (i: string) => i.startsWith('in:') || i.startsWith('out:');
    const keep = items.filter(isIO);
    const rest = items.filter((i) => !isIO(i));
    const per = Math.ceil(rest.length / Math.ceil(rest.length / MAX_ITEMS));
    const parts: string[] = [];
    const base = container ? this.groups.get(container)! : null;
    for (let at = 0; at < rest.length; at += per) {
      const chunk = rest.slice(at, at + per);
      const id = `${container ?? 'root'}/part${parts.length}`;
      const lo = this.firstLayer(chunk[0]);
      const hi = this.lastLayer(chunk[chunk.length - 1]);
      this.makePart(container, id, `layers ${lo}–${hi}`, `${base ? `${base.path} ` : ''}layers ${lo}–${hi}`, chunk, null);
      parts.push(id);
    }
    this.partsMade.push(container ?? '');
    items.splice(0, items.length, ...keep.filter((i) => i.startsWith('in:')), ...parts, ...keep.filter((i) => i.startsWith('out:')));
    this.cut(container, items);
  }

  /** A run of more than REPEAT_RUN repetitions of a module (170 decoder layers) is drawn in parts
   * of REPEAT_PART (``layers.0–31``): parts of the same structure share one layout (layout.ts),
   * so ELK lays out 32 repetitions once instead of 170 in one container. */
  private cutRun(container: string | null, items: string[]): void {
    const isRep = (i: string) => !!this.groups.get(i)?.repeat;
    let first = items.findIndex(isRep);
    while (first >= 0 && first < items.length) {
      let end = first;
      while (end < items.length && isRep(items[end])) {
        end++;
      }
      if (end - first > REPEAT_RUN) {
        const run = items.slice(first, end);
        const parts: string[] = [];
        const base = container ? this.groups.get(container)! : null;
        for (let at = 0; at < run.length; at += REPEAT_PART) {
          const chunk = run.slice(at, at + REPEAT_PART);
          const lo = this.groups.get(chunk[0])!.repeat!.index;
          const hi = this.groups.get(chunk[chunk.length - 1])!.repeat!.index;
          const label = `${base && !base.part ? `${base.label}.` : ''}${lo}–${hi}`;
          const id = `${container ?? 'root'}/run${first}.${parts.length}`;
          this.makePart(container, id, label, `${base ? `${base.path} ` : ''}${label}`, chunk, this.groups.get(chunk[0])!.repeat!.pattern);
          parts.push(id);
        }
        items.splice(first, end - first, ...parts);
        end = first + parts.length;
      }
      const next = items.slice(end).findIndex(isRep);
      first = next < 0 ? -1 : end + next;
    }
  }

  /** A group made of consecutive boxes of a container (``run``: the repeated module whose
   * repetitions it holds). */
  private makePart(container: string | null, id: string, label: string, path: string, chunk: string[], run: string | null): void {
    const size = chunk.reduce((s, i) => s + this.sizeOf(i), 0);
    this.groups.set(id, { id, label, path, parent: container, items: chunk, size, part: true, repeat: null, run });
    this.parentOf.set(id, container);
    for (const i of chunk) {
      this.parentOf.set(i, id);
      const g = this.groups.get(i);
      if (g) {
        g.parent = id;
      }
      for (const f of this.folded.get(i) ?? []) {
        if (this.parentOf.get(f) === container) {
          this.parentOf.set(f, id); // a weight of the same scope goes with its consumer
        }
      }
    }
  }

  private firstLayer(id: string): number {
    const n = this.order.get(id);
    return n !== undefined ? this.doc.nodes[n].op_index : Math.min(...this.groups.get(id)!.items.map((i) => this.firstLayer(i)));
  }

  private lastLayer(id: string): number {
    const n = this.order.get(id);
    return n !== undefined ? this.doc.nodes[n].op_index : Math.max(...this.groups.get(id)!.items.map((i) => this.lastLayer(i)));
  }

  private sizeOf(id: string): number {
    return this.groups.get(id)?.size ?? 1 + (this.folded.get(id)?.length ?? 0);
  }

  /** The items of a container (null: the root). */
  itemsOf(container: string | null): string[] {
    return container === null ? this.rootItems : (this.groups.get(container)?.items ?? []);
  }

  /** Every layer of a group's scope (at any depth), folded ones included: what its rollups sum. */
  membersOf(gid: string): string[] {
    if (!this.members.size) {
      for (const n of this.doc.nodes) {
        for (let g = this.parentOf.get(n.id) ?? null; g; g = this.groups.get(g)?.parent ?? null) {
          (this.members.get(g) ?? this.members.set(g, []).get(g)!).push(n.id);
        }
      }
    }
    return this.members.get(gid) ?? [];
  }

  /** The groups holding a node or group, innermost first. */
  ancestors(id: string): string[] {
    const out: string[] = [];
    let g = this.parentOf.get(this.foldedInto.get(id) ?? id) ?? null;
    while (g) {
      out.push(g);
      g = this.groups.get(g)?.parent ?? null;
    }
    return out;
  }

  depth(gid: string): number {
    return this.ancestors(gid).length;
  }

  /** The shown name of a group: a repetition's index with its family (``layers.7``). */
  labelOf(gid: string): string {
    const g = this.groups.get(gid)!;
    let parent = g.parent ? this.groups.get(g.parent) : undefined;
    if (parent?.run) {
      parent = parent.parent ? this.groups.get(parent.parent) : undefined; // the module the run is of
    }
    return /^\d+$/.test(g.label) && parent && !parent.part ? `${parent.label}.${g.label}` : g.label;
  }

  /** The groups that start collapsed: every repetition (a decoder layer is one box until opened),
   * and, while the boxes shown would exceed ``budget``, the inner levels (outer levels are opened
   * first, in layer order). */
  initialCollapsed(budget: number): Set<string> {
    // the groups drawn (one whose every layer is folded elsewhere is not, and opens as it appears)
    const collapsed = new Set<string>();
    const walk = (items: string[]) =>
      items.forEach((i) => {
        if (this.groups.has(i)) {
          collapsed.add(i);
          walk(this.groups.get(i)!.items);
        }
      });
    walk(this.rootItems);
    this.openWithin(this.rootItems, collapsed, budget - this.rootItems.length);
    return collapsed;
  }

  /** Opens group ``gid`` and, outer levels first, the groups inside it (but repetitions) while
   * they add at most ``budget`` boxes: opening a decoder layer shows its attention and MLP. */
  openBelow(gid: string, collapsed: Set<string>, budget: number): void {
    collapsed.delete(gid);
    this.openWithin(this.groups.get(gid)?.items ?? [], collapsed, budget);
  }

  private openWithin(items: string[], collapsed: Set<string>, budget: number): void {
    let shown = 0;
    const queue = items.filter((i) => this.groups.has(i));
    while (queue.length) {
      const gid = queue.shift()!;
      const g = this.groups.get(gid)!;
      if (g.repeat) {
        continue;
      }
      const more = g.items.length - 1;
      if (shown + more > budget) {
        continue;
      }
      collapsed.delete(gid);
      shown += more;
      queue.push(...g.items.filter((i) => this.groups.has(i)));
    }
  }
}
