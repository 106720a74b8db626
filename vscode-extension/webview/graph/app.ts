/**
 * The model graph view: one app for both hosts (a VS Code webview, the static report). It lays
 * the graph document out with elkjs (layout.ts: one container at a time, in a web worker), draws
 * it as SVG (pan with the mouse, zoom with the wheel; labels fade out when too small to read),
 * colors it by an overlay with a legend (a collapsed group by its layers' rollup), finds layers
 * by name (opening the groups that hold them), folds weight-only nodes into their consumer, and
 * shows a layer's (or a group's) panel; the pass slider (passSlider.ts) scrubs the pipeline over
 * the same layout. Every drawn node's element carries
 * ``data-layer="<layer id>"``, every group's ``data-group``.
 */
import { ElkRunner } from './elk';
import { colorBy, formatValue, rollup, textOn, value, type Coloring } from './overlays';
import { cut, el, svg } from './dom';
import { COLLAPSED_HEIGHT, IO_HEIGHT, Layouter, NODE_HEIGHT, nodeWidth, type Box, type Layout } from './layout';
import { renderGroupPanel, renderPanel } from './panel';
import { PassSlider, type PassState } from './passSlider';
import { MAX_ITEMS, ViewTree } from './tree';
import type { GraphDocument, GraphNode, Host, SavedLayouts } from './types';

const MIN_SCALE = 0.02;
const MAX_SCALE = 4;
/** Boxes shown when a graph opens: beyond, inner groups start collapsed. */
export const OPEN_BUDGET = 300;
/** Elements drawn beyond which zooming and panning move the painted picture until the mouse rests. */
const HEAVY = 2500;
/** At most this many layers highlighted open the collapsed groups that hold them. */
const HIGHLIGHT_OPENS = 16;
/** The opening zoom when the whole graph does not fit readable: labels at 13 px and 11 px. */
const READABLE = 1;

function shortName(name: string): string {
  const first = name.split(';')[0];
  return (
    first
      .split('/')
      .filter((p) => p)
      .pop() ?? first
  );
}
/** An operator as a node shows it: PyTorch's ``aten.expand.default`` as ``expand`` (the panel
 * and the tooltip keep the full name). */
function opLabel(opcode: string): string {
  return opcode.replace(/^aten\./, '').replace(/\.default$/, '');
}
function shapeOf(node: GraphNode): string {
  const t = node.outputs[0]?.type ?? '';
  const i = t.indexOf('[');
  return i >= 0 ? t.slice(i) : t;
}
/** A graph's identity for the layout cache: its model file (hash), compile and size. */
function layoutKey(doc: GraphDocument): string {
  const m = doc.model;
  return [m.file, m.sha256, m.created, m.target, doc.nodes.length, doc.edges.length, doc.groups.length].join('|');
}
function plural(n: number, word: string): string {
  return `${n.toLocaleString('en-US')} ${word}${n === 1 ? '' : 's'}`;
}

export class GraphApp {
  readonly root: HTMLElement;
  private doc!: GraphDocument;
  private tree!: ViewTree;
  private byId = new Map<string, GraphNode>();
  private labels = new Map<string, [string, string]>();
  private collapsed = new Set<string>();
  private fold = true;
  private layout: Layout | undefined;
  private layouter: Layouter | undefined;
  /** The graph's identity for the host's layout cache, and how many layouts it was last given. */
  private layoutKey = '';
  private savedShapes = 0;
  private readonly runner: Promise<ElkRunner>;
  private overlay = '';
  private coloring: Coloring | undefined;
  private values = new Map<string, number | string | null>();
  private view = { x: 0, y: 0, k: 1 };
  /** The view the SVG was last drawn at (the compositor moves that picture while zooming). */
  private committed = { x: 0, y: 0, k: 1 };
  private settle: ReturnType<typeof setTimeout> | undefined;
  private selected: string | null = null;
  private selectedGroup: string | null = null;
  private highlighted = new Set<string>();
  private matches: string[] = [];
  private matchAt = -1;
  private frame = 0;
  private layoutRun = 0;
  private panelWidth = 340;
  private panelOpen: boolean | null = null; // null: not chosen by the user
  private firstPaint = true;
  /** True until the user opens or closes a group after a graph is shown. */
  private opening = true;
  /** Resolved after each finished layout and paint (tests and the bench wait on it). */
  painted: Promise<Layout> = new Promise(() => undefined);
  lastPaintMs = 0;

  private readonly svgEl: SVGSVGElement;
  private readonly viewport: SVGGElement;
  private readonly layers: { groups: SVGGElement; edges: SVGGElement; nodes: SVGGElement };
  private readonly canvas: HTMLElement;
  private readonly panel: HTMLElement;
  private readonly resizer: HTMLElement;
  private readonly legend: HTMLElement;
  private readonly status: HTMLElement;
  private readonly notice: HTMLElement;
  private readonly tip: HTMLElement;
  private readonly search: HTMLInputElement;
  private readonly overlaySelect: HTMLSelectElement;
  private readonly foldBox: HTMLInputElement;
  private readonly panelButton: HTMLButtonElement;
  private readonly nodeEls = new Map<string, SVGGElement>();
  private readonly groupEls = new Map<string, SVGGElement>();
  private readonly edgeEls = new Map<string, SVGPathElement>();
  private readonly slider: PassSlider;
  private passState: PassState | null = null;

  constructor(
    container: HTMLElement,
    private readonly host: Host,
  ) {
    this.runner = host.elkScript.then(
      (script) => new ElkRunner(script, host.nonce),
      () => new ElkRunner(null),
    );
    this.search = el('input', { type: 'search', class: 'search', placeholder: 'Find layer by name or op…', 'aria-label': 'Find layer' });
    this.overlaySelect = el('select', { class: 'overlay', 'aria-label': 'Overlay' });
    const fit = el('button', { class: 'fit', title: 'Fit the graph in the view' }, 'Fit');
    const collapseAll = el('button', { class: 'collapse-all', title: 'Collapse every group' }, 'Collapse all');
    const expandAll = el('button', { class: 'expand-all', title: 'Expand every group (slow on thousands of layers)' }, 'Expand all');
    const tidy = el(
      'button',
      {
        class: 'tidy',
        title: 'Lay the open groups out afresh (opening and closing groups keeps everything else in place; this tidies up)',
      },
      'Tidy',
    );
    this.foldBox = el('input', { type: 'checkbox', class: 'show-weights' });
    const foldLabel = el(
      'label',
      {
        class: 'weights',
        title:
          'Show the nodes that only prepare weights and constants (DEQUANTIZE of a weight, shape plumbing), folded into their consumer by default',
      },
      this.foldBox,
      ' weights',
    );
    this.panelButton = el('button', { class: 'panel-toggle', title: 'Show or hide the layer panel' }, 'Details');
    this.status = el('span', { class: 'status', role: 'status' });
    this.svgEl = svg('svg', { class: 'graph', role: 'img', 'aria-label': 'Model graph' });
    this.viewport = svg('g', { class: 'viewport' });
    this.layers = { groups: svg('g', { class: 'groups' }), edges: svg('g', { class: 'edges' }), nodes: svg('g', { class: 'nodes' }) };
    const defs = svg(
      'defs',
      {},
      svg(
        'marker',
        { id: 'tvmx-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
        svg('path', { d: 'M0,0L10,5L0,10z', class: 'arrow' }),
      ),
    );
    this.slider = new PassSlider((state) => {
      this.passState = state;
      this.markPass();
    });
    this.viewport.append(defs, this.layers.groups, this.slider.frames, this.layers.edges, this.layers.nodes);
    this.svgEl.append(this.viewport);
    this.legend = el('div', { class: 'legend' });
    this.notice = el('div', { class: 'notice', role: 'alert' });
    this.tip = el('div', { class: 'tip' });
    this.canvas = el('div', { class: 'canvas' }, this.notice, this.svgEl, this.legend, this.tip);
    this.panel = el('aside', { class: 'panel' });
    this.resizer = el('div', { class: 'resizer', title: 'Drag to resize the panel', role: 'separator', 'aria-orientation': 'vertical' });
    this.root = el(
      'div',
      { class: 'tvmx-graph' },
      el(
        'div',
        { class: 'toolbar' },
        this.search,
        el('label', {}, 'Overlay ', this.overlaySelect),
        fit,
        collapseAll,
        expandAll,
        tidy,
        foldLabel,
        this.panelButton,
        this.slider.control,
        this.status,
      ),
      el('div', { class: 'main' }, this.canvas, this.resizer, this.panel),
    );
    container.append(this.root);
    fit.addEventListener('click', () => this.fit());
    collapseAll.addEventListener('click', () => {
      this.collapsed = new Set(this.tree.groups.keys());
      void this.relayout();
    });
    expandAll.addEventListener('click', () => {
      this.collapsed.clear();
      void this.relayout();
    });
    tidy.addEventListener('click', () => {
      this.layouter?.forget();
      void this.relayout({ fit: true });
    });
    this.foldBox.addEventListener('change', () => {
      this.fold = !this.foldBox.checked;
      this.tree = new ViewTree(this.doc, this.fold);
      this.collapsed = new Set([...this.collapsed].filter((g) => this.tree.groups.has(g)));
      void this.relayout();
    });
    this.panelButton.addEventListener('click', () => {
      this.panelOpen = !this.isPanelOpen();
      this.applyPanel();
    });
    this.search.addEventListener('input', () => this.find(this.search.value));
    this.search.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        void this.nextMatch(ev.shiftKey ? -1 : 1);
      }
    });
    this.overlaySelect.addEventListener('change', () => {
      this.setOverlay(this.overlaySelect.value);
      this.host.overlayChanged(this.overlay);
    });
    this.bindPanZoom();
    this.bindPanel();
    this.bindTips();
  }

  /** Shows a graph document (again: a recompiled bundle keeps the view, the overlay, the groups
   * and every position). */
  async show(doc: GraphDocument, overlay?: string): Promise<Layout> {
    const known = !!this.doc && this.doc.model.sha256 === doc.model.sha256 && this.doc.nodes.length === doc.nodes.length;
    this.doc = doc;
    this.byId = new Map(doc.nodes.map((n) => [n.id, n]));
    this.labels = new Map(doc.nodes.map((n) => [n.id, [opLabel(n.opcode), cut(`${shortName(n.name)} ${shapeOf(n)}`.trim(), 34)]]));
    this.tree = new ViewTree(doc, this.fold);
    performance.mark('tvmx:tree');
    // A new model forgets the old one's selection before waiting for the layout worker: the
    // editor's highlight may arrive during that wait, and is kept.
    if (!known) {
      this.selected = null;
      this.selectedGroup = null;
      this.highlighted.clear();
    }
    if (!this.layouter || !known) {
      this.layouter = new Layouter(await this.runner);
      // layouts ELK made in an earlier session of this graph: drawn without waiting for ELK
      this.layoutKey = layoutKey(doc);
      this.layouter.restore(this.loadLayouts(this.layoutKey));
      this.savedShapes = this.layouter.shapeCount;
    }
    this.collapsed = known ? new Set([...this.collapsed].filter((g) => this.tree.groups.has(g))) : this.tree.initialCollapsed(OPEN_BUDGET);
    this.overlaySelect.replaceChildren(
      el('option', { value: '' }, 'None'),
      ...doc.overlays.map((o) => el('option', { value: o.id }, o.available ? o.label : `${o.label} (no data)`)),
    );
    const wanted = overlay ?? this.overlay ?? '';
    // The overlay chosen last (in another bundle, maybe) when this bundle has its data; else
    // measured time or code size, rather than a grey graph whose legend says what is missing.
    const first =
      doc.overlays.find((o) => o.available && o.id === wanted) ??
      doc.overlays.find((o) => o.available && o.id === 'time') ??
      doc.overlays.find((o) => o.available && o.id === 'code') ??
      doc.overlays.find((o) => o.id === wanted);
    this.overlay = first?.id ?? '';
    this.overlaySelect.value = this.overlay;
    this.opening = !known || this.opening;
    const shown = this.relayout({ opening: !known });
    this.slider.load(doc.pipeline?.passes);
    if (!known) {
      // a highlight that came while the worker started: revealed (groups opened) now it is drawn
      void shown.then(() => (this.highlighted.size ? this.highlight([...this.highlighted]) : undefined)).catch(() => undefined);
    }
    return shown;
  }

  private async relayout(opts: { opening?: boolean; fit?: boolean } = {}): Promise<Layout> {
    const run = ++this.layoutRun;
    const t0 = performance.now();
    this.status.textContent = 'Laying out…';
    let resolve!: (l: Layout) => void;
    this.painted = new Promise((r) => (resolve = r));
    let layout: Layout;
    try {
      layout = await this.layouter!.layout(
        this.tree,
        this.collapsed,
        (id) => this.leafSize(id),
        (done, of) => {
          if (run === this.layoutRun && of > 3) {
            this.status.textContent = `Laying out ${done} of ${of} groups…`;
          }
        },
      );
    } catch (err) {
      // Never a blank page: say what failed, keep whatever was drawn before.
      this.say(
        `The graph could not be laid out: ${String((err as Error)?.message ?? err)}. Collapse groups (Collapse all) or use the layer tables.`,
        true,
      );
      this.status.textContent = 'layout failed';
      throw err;
    }
    if (run !== this.layoutRun) {
      return layout;
    }
    performance.mark('tvmx:laid-out');
    this.layout = layout;
    this.draw();
    this.setOverlay(this.overlay);
    if (opts.opening) {
      this.openingView();
    } else if (opts.fit) {
      this.fit();
    } else {
      this.applyView();
    }
    this.renderPanel();
    this.applyPanel();
    performance.mark('tvmx:drawn');
    await new Promise((r) => requestAnimationFrame(() => r(undefined)));
    this.lastPaintMs = performance.now() - t0;
    if (this.firstPaint) {
      this.firstPaint = false;
      // milliseconds since navigation start: a bench or a test reads when the graph was first painted
      document.documentElement.dataset.painted = String(Math.round(performance.now()));
    }
    this.describe(layout);
    resolve(layout);
    void this.warmRepetitions(run).then(() => this.saveLayouts());
    return layout;
  }

  private loadLayouts(key: string): SavedLayouts | null {
    try {
      return this.host.layouts?.load(key) ?? null;
    } catch {
      return null; // no storage here (a sandboxed page): ELK lays out as usual
    }
  }

  /** Hands the layouts made so far to the host (when ELK made new ones), to be kept for the next
   * session of this graph. */
  private saveLayouts(): void {
    const layouter = this.layouter;
    if (!layouter || !this.host.layouts || layouter.shapeCount === this.savedShapes) {
      return;
    }
    this.savedShapes = layouter.shapeCount;
    try {
      this.host.layouts.save(this.layoutKey, layouter.save());
    } catch {
      // storage full or refused: nothing is kept, nothing else changes
    }
  }

  /** In the background, lays out one collapsed repetition of each repeated module as a click would
   * open it: its layout then serves all of them, and opening any decoder layer is immediate. */
  private async warmRepetitions(run: number): Promise<void> {
    const seen = new Set<string>();
    for (const gid of this.layout?.collapsed.keys() ?? []) {
      const pattern = this.tree.groups.get(gid)?.repeat?.pattern;
      if (!pattern || seen.has(pattern) || run !== this.layoutRun) {
        continue;
      }
      seen.add(pattern);
      const opened = new Set(this.collapsed);
      this.tree.openBelow(gid, opened, OPEN_BUDGET / 2);
      await this.layouter!.warm(this.tree, gid, opened, (id) => this.leafSize(id)).catch(() => undefined);
    }
  }

  /** The status line, and the notice when the graph is shown reduced (parts, collapsed groups, a
   * failed layout): never a silent degradation. */
  private describe(layout: Layout): void {
    const n = this.doc.nodes.length;
    const drawn = layout.nodes.size - this.doc.io.length;
    const folded = this.tree.foldedInto.size;
    const parts = [...this.tree.groups.values()].filter((g) => g.part && !g.run).length;
    const hidden = [...layout.collapsed.keys()].reduce((s, g) => s + this.tree.membersOf(g).length, 0);
    this.status.textContent =
      `${plural(n, 'layer')} · ${drawn} drawn` +
      (hidden ? ` · ${hidden} in ${plural(layout.collapsed.size, 'collapsed group')}` : '') +
      (folded ? ` · ${folded} weight-only folded` : '') +
      ` · layout ${Math.round(layout.ms)} ms`;
    const notes: string[] = [];
    if (parts) {
      const where = this.tree.partsMade
        .map((c) => (c ? `"${this.tree.labelOf(c)}"` : 'the top level'))
        .slice(0, 3)
        .join(', ');
      notes.push(
        `${plural(n, 'layer')}: ${where} held too many boxes to lay out at once, so it is drawn in ${plural(parts, 'part')} of at most ${MAX_ITEMS}; click a part to open it.`,
      );
    } else if (hidden && this.opening) {
      const families = new Map<string, number>();
      for (const gid of layout.collapsed.keys()) {
        const r = this.tree.groups.get(gid)?.repeat;
        if (r) {
          families.set(r.pattern, r.count);
        }
      }
      const byBudget = [...layout.collapsed.keys()].some((g) => !this.tree.groups.get(g)?.repeat);
      const repeated = [...families].map(([p, c]) => `${p} (${c})`).join(', ');
      notes.push(
        (repeated ? `Repeated modules start collapsed, one box each: ${repeated}; ×N compares them. ` : '') +
          (byBudget ? `Beyond ${OPEN_BUDGET} boxes, inner groups start collapsed. ` : '') +
          'Click a box to open it.',
      );
    }
    if (layout.failed.length) {
      notes.push(`ELK could not lay out ${layout.failed.join('; ')}: packed as a grid.`);
    }
    void this.runner.then((r) => {
      if (r.mode === 'page' && r.note && n > 1000) {
        this.say([...notes, `Layout runs on the page (${r.note}).`].join(' '));
      }
    });
    this.say(notes.join(' '));
  }

  private say(text: string, error = false): void {
    this.notice.textContent = text;
    this.notice.classList.toggle('error', error);
  }

  private leafSize(id: string): [number, number] {
    const g = this.tree.groups.get(id);
    if (g) {
      return [nodeWidth(this.tree.labelOf(id), `${this.tree.membersOf(id).length} layers · 00.00 ms`), COLLAPSED_HEIGHT];
    }
    const io = this.doc.io.find((x) => x.id === id);
    if (io) {
      return [nodeWidth(io.name, io.type), IO_HEIGHT];
    }
    const [label, detail] = this.labels.get(id) ?? [id, ''];
    const folded = this.tree.folded.get(id)?.length;
    return [nodeWidth(folded ? `${label} +${folded}` : label, detail), NODE_HEIGHT];
  }

  // -- drawing ------------------------------------------------------------------------------
  /** Brings the SVG in line with the layout: elements are kept per node, group and edge, and
   * only moved, added or removed (opening a group of a large graph touches what changed). */
  private draw(): void {
    const layout = this.layout!;
    const keepNodes = new Set<string>();
    for (const [id, box] of layout.nodes) {
      keepNodes.add(id);
      let g = this.nodeEls.get(id);
      if (!g) {
        g = this.byId.has(id) ? this.nodeElement(id) : this.ioElement(id);
        this.nodeEls.set(id, g);
        this.layers.nodes.append(g);
      }
      const badge = g.querySelector('.badge');
      const folded = this.tree.folded.get(id)?.length ?? 0;
      if (badge) {
        badge.textContent = folded ? `+${folded}` : '';
      }
      g.setAttribute('transform', `translate(${box.x},${box.y})`);
    }
    for (const [id, g] of this.nodeEls) {
      if (!keepNodes.has(id)) {
        g.remove();
        this.nodeEls.delete(id);
      }
    }
    const keepGroups = new Set<string>();
    for (const [gid, box] of layout.groups) {
      keepGroups.add(gid);
      this.placeGroup(gid, box, false);
    }
    for (const [gid, box] of layout.collapsed) {
      keepGroups.add(gid);
      this.placeGroup(gid, box, true);
    }
    for (const [gid, g] of this.groupEls) {
      if (!keepGroups.has(gid)) {
        g.remove();
        this.groupEls.delete(gid);
      }
    }
    // outer frames first, so that inner ones are drawn over them
    const frames = [...layout.groups.keys()].sort((a, b) => this.tree.depth(a) - this.tree.depth(b));
    frames.forEach((gid) => this.layers.groups.append(this.groupEls.get(gid)!));
    const keepEdges = new Set<string>();
    for (const e of layout.edges) {
      const k = `${e.source}\u0000${e.target}`;
      keepEdges.add(k);
      const d = e.points.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join('');
      let path = this.edgeEls.get(k);
      if (!path) {
        path = svg('path', { class: 'edge', 'marker-end': 'url(#tvmx-arrow)', 'data-edge': k });
        this.edgeEls.set(k, path);
        this.layers.edges.append(path);
      }
      if (path.getAttribute('d') !== d) {
        path.setAttribute('d', d);
      }
    }
    for (const [k, p] of this.edgeEls) {
      if (!keepEdges.has(k)) {
        p.remove();
        this.edgeEls.delete(k);
      }
    }
    this.markSelection();
    if (this.matches.length) {
      this.markMatches();
    }
    this.markPass();
  }

  /** The pass slider's marks on what is drawn: touched and lowered layers, fusion frames
   * (a collapsed group shows what any of its layers has). */
  private markPass(): void {
    const s = this.passState;
    const host = (id: string) => this.tree.foldedInto.get(id) ?? id;
    const touched = new Set([...(s?.touched ?? [])].map(host));
    const lowered = new Set([...(s?.lowered ?? [])].map(host));
    for (const [id, g] of this.nodeEls) {
      g.classList.toggle('pass-touched', touched.has(id));
      g.classList.toggle('pass-lowered', lowered.has(id));
    }
    const inGroups = (ids: Set<string>) => {
      const out = new Set<string>();
      for (const id of ids) {
        if (!this.nodeEls.has(id)) {
          this.tree.ancestors(id).forEach((g) => out.add(g));
        }
      }
      return out;
    };
    const touchedIn = inGroups(touched);
    for (const [gid, g] of this.groupEls) {
      g.classList.toggle('pass-touched', g.classList.contains('collapsed') && touchedIn.has(gid));
    }
    this.svgEl.classList.toggle('scrubbing', s !== null);
    if (this.layout) {
      this.slider.drawFrames(s, (id) => this.boxOf(id));
    }
  }

  private nodeElement(id: string): SVGGElement {
    const node = this.byId.get(id)!;
    const [label, detail] = this.labels.get(id)!;
    const [width] = this.leafSize(id);
    const g = svg(
      'g',
      { class: node.numerics?.diverges ? 'node diverges' : 'node', 'data-layer': id, tabindex: 0 },
      svg('rect', { width, height: NODE_HEIGHT, rx: 5 }),
      svg('text', { class: 'op', x: 9, y: 18 }, cut(label, Math.floor((width - 30) / 7.6))),
      svg('text', { class: 'detail', x: 9, y: 35 }, detail),
      svg('text', { class: 'badge', x: width - 6, y: 14, 'text-anchor': 'end' }),
    );
    g.addEventListener('click', (ev) => {
      ev.stopPropagation();
      this.select(id, true);
    });
    g.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        this.select(id, true);
      }
    });
    return g;
  }

  private ioElement(id: string): SVGGElement {
    const io = this.doc.io.find((x) => x.id === id)!;
    const [width, height] = this.leafSize(id);
    return svg(
      'g',
      { class: `io ${io.kind}`, 'data-io': io.id },
      svg('rect', { width, height, rx: height / 2 }),
      svg('text', { class: 'detail', x: width / 2, y: 17, 'text-anchor': 'middle' }, `${io.kind}: ${cut(io.name, 28)}`),
    );
  }

  /** A group's element: an open group's frame (its name closes it) or a collapsed group's box. */
  private placeGroup(gid: string, box: Box, collapsed: boolean): void {
    let g = this.groupEls.get(gid);
    if (g && g.classList.contains('collapsed') !== collapsed) {
      g.remove();
      g = undefined;
    }
    const info = this.tree.groups.get(gid)!;
    const label = this.tree.labelOf(gid);
    const count = this.tree.membersOf(gid).length;
    if (!g) {
      if (collapsed) {
        g = svg(
          'g',
          { class: `group collapsed${info.repeat ? ' repeat' : ''}${info.part ? ' part' : ''}`, 'data-group': gid, tabindex: 0 },
          svg('rect', { rx: 8 }),
          svg('text', { class: 'op', x: 10, y: 19 }, `▸ ${cut(label, 30)}`),
          svg('text', { class: 'detail count', x: 10, y: 36 }, `${count} layers`),
          svg('text', { class: 'detail rollup', x: 10, y: 51 }),
        );
        if (info.repeat) {
          g.append(svg('text', { class: 'compare', y: 19, 'text-anchor': 'end' }, `×${info.repeat.count}`));
        }
        g.addEventListener('click', (ev) => {
          ev.stopPropagation();
          if ((ev.target as Element).classList.contains('compare')) {
            this.selectGroup(gid);
          } else {
            this.toggle(gid);
          }
        });
        g.addEventListener('keydown', (ev) => ev.key === 'Enter' && this.toggle(gid));
        this.layers.nodes.append(g);
      } else {
        const header = svg('text', { class: 'group-label', x: 8, y: 16 }, `▾ ${label}`);
        g = svg(
          'g',
          { class: `group${info.repeat ? ' repeat' : ''}${info.part ? ' part' : ''}`, 'data-group': gid },
          svg('rect', { rx: 6 }),
          header,
        );
        header.addEventListener('click', (ev) => {
          ev.stopPropagation();
          this.toggle(gid);
        });
        const about = svg('text', { class: 'compare', y: 16, 'text-anchor': 'end' }, info.repeat ? `compare ×${info.repeat.count}` : 'Σ');
        about.addEventListener('click', (ev) => {
          ev.stopPropagation();
          this.selectGroup(gid);
        });
        g.append(about);
        this.layers.groups.append(g);
      }
      this.groupEls.set(gid, g);
    }
    g.setAttribute('transform', `translate(${box.x},${box.y})`);
    const rect = g.querySelector('rect')!;
    rect.setAttribute('width', String(box.width));
    rect.setAttribute('height', String(box.height));
    const compare = g.querySelector('.compare');
    compare?.setAttribute('x', String(box.width - 8));
    const header = g.querySelector('.group-label');
    if (header) {
      const full = `▾ ${label} · ${count} layers`;
      header.textContent = full.length * 7.5 < box.width - 80 ? full : `▾ ${cut(label, Math.max(4, Math.floor((box.width - 80) / 7.5)))}`;
    }
  }

  setOverlay(id: string): void {
    this.overlay = id;
    this.overlaySelect.value = id;
    const overlay = this.doc.overlays.find((o) => o.id === id);
    const layout = this.layout;
    this.values = new Map();
    if (overlay && layout) {
      for (const nid of layout.nodes.keys()) {
        const node = this.byId.get(nid);
        if (node) {
          this.values.set(nid, value(node, overlay));
        }
      }
      for (const gid of layout.collapsed.keys()) {
        this.values.set(
          gid,
          rollup(
            this.tree.membersOf(gid).map((m) => this.byId.get(m)!),
            overlay,
          ),
        );
      }
    }
    this.coloring = colorBy(this.values, overlay?.available ? overlay : overlay);
    const paint = (g: SVGGElement, key: string) => {
      const color = this.coloring!.fill.get(key);
      const rect = g.querySelector('rect')!;
      const v = this.values.get(key);
      if (v !== undefined && v !== null) {
        g.setAttribute('data-value', String(v));
      } else {
        g.removeAttribute('data-value');
      }
      if (color) {
        rect.setAttribute('fill', color);
        g.setAttribute('data-fill', color);
        for (const t of g.querySelectorAll('text')) {
          t.setAttribute('fill', textOn(color));
        }
      } else {
        rect.removeAttribute('fill');
        g.removeAttribute('data-fill');
        for (const t of g.querySelectorAll('text')) {
          t.removeAttribute('fill');
        }
      }
    };
    for (const [nid, g] of this.nodeEls) {
      if (this.byId.has(nid)) {
        paint(g, nid);
      }
    }
    for (const gid of layout?.collapsed.keys() ?? []) {
      const g = this.groupEls.get(gid)!;
      paint(g, gid);
      const v = this.values.get(gid);
      g.querySelector('.rollup')!.textContent =
        overlay && v !== null && v !== undefined
          ? `${overlay.id === 'error' ? 'max ' : overlay.scale === 'category' ? '' : 'Σ '}${formatValue(v, overlay)}`
          : '';
    }
    this.renderLegend();
    if (this.selectedGroup) {
      this.renderPanel();
    }
  }

  private renderLegend(): void {
    const c = this.coloring!;
    const swatch = (color: string) =>
      svg('svg', { width: 14, height: 14, class: 'swatch' }, svg('rect', { width: 14, height: 14, rx: 2, fill: color }));
    const overlay = this.doc.overlays.find((o) => o.id === this.overlay);
    // A scale is one strip of colors between its ends; categories are named one by one.
    const body =
      overlay?.scale === 'category' || overlay?.scale === 'budget'
        ? c.legend.map((e) => el('span', { class: 'legend-row' }, swatch(e.color), el('span', {}, e.label)))
        : c.legend.length
          ? [
              el(
                'span',
                { class: 'legend-row' },
                el('span', {}, c.legend[0].label),
                ...c.legend.map((e) => swatch(e.color)),
                el('span', {}, c.legend[c.legend.length - 1].label),
              ),
            ]
          : [];
    this.legend.replaceChildren(el('div', { class: 'legend-rows' }, ...body), el('div', { class: 'legend-caption' }, c.caption));
  }

  private toggle(gid: string): void {
    this.opening = false;
    if (this.collapsed.has(gid)) {
      // the view follows a box the user sees (not one opened off screen, by a script)
      const box = this.layout?.collapsed.get(gid);
      const seen = !!box && this.onScreen(box);
      this.tree.openBelow(gid, this.collapsed, OPEN_BUDGET / 2);
      void this.relayout().then(
        (layout) => seen && layout === this.layout && this.showOpened(gid),
        () => undefined,
      );
    } else {
      this.collapsed.add(gid);
      void this.relayout();
    }
  }

  /** Whether a box (in graph coordinates) is on screen: wholly, or in part. */
  private onScreen(b: Box, wholly = false): boolean {
    const r = this.viewRect();
    const { k, x, y } = this.view;
    const [left, top, right, bottom] = [b.x * k + x, b.y * k + y, (b.x + b.width) * k + x, (b.y + b.height) * k + y];
    return wholly
      ? left >= 0 && top >= 0 && right <= r.width && bottom <= r.height
      : right > 0 && bottom > 0 && left < r.width && top < r.height;
  }

  /** A group the user just opened (its box on screen), when none of its first row of boxes is on screen (an opened
   * decoder layer is wider than its box was, and opened off screen): the view pans, at the same
   * zoom, as far as needed to show that row and as much of the group below it as fits. */
  private showOpened(gid: string): void {
    const layout = this.layout!;
    const frame = layout.groups.get(gid);
    if (!frame) {
      return;
    }
    const inside = [...layout.nodes.values(), ...layout.collapsed.values()].filter(
      (b) => b.x >= frame.x && b.y >= frame.y && b.x + b.width <= frame.x + frame.width && b.y + b.height <= frame.y + frame.height,
    );
    const r = this.viewRect();
    const w = Math.max(r.width, 200);
    const h = Math.max(r.height, 200);
    const { k } = this.view;
    const top = Math.min(...inside.map((b) => b.y));
    const row = inside.filter((b) => b.y < top + NODE_HEIGHT);
    if (!row.length || row.some((b) => this.onScreen(b, true))) {
      return; // its first row is on screen already: nothing moves
    }
    // what to show, in graph coordinates: the frame where it fits, else its first row centred
    let x0 = frame.x;
    let x1 = frame.x + frame.width;
    if ((x1 - x0) * k > w - 40 && row.length) {
      const cx = (Math.min(...row.map((b) => b.x)) + Math.max(...row.map((b) => b.x + b.width))) / 2;
      x0 = cx - (w - 40) / k / 2;
      x1 = cx + (w - 40) / k / 2;
    }
    const y0 = frame.y;
    const y1 = Math.min(frame.y + frame.height, frame.y + (h - 40) / k);
    const pan = (lo: number, hi: number, size: number) => (lo < 20 ? 20 - lo : hi > size - 20 ? Math.max(size - 20 - hi, 20 - lo) : 0);
    const dx = pan(x0 * k + this.view.x, x1 * k + this.view.x, w);
    const dy = pan(y0 * k + this.view.y, y1 * k + this.view.y, h);
    if (dx || dy) {
      this.view = { k, x: this.view.x + dx, y: this.view.y + dy };
      this.applyView();
    }
  }

  /** Opens every group holding ``ids`` (and shows folded weights' hosts); true if any opened. */
  private open(ids: string[]): boolean {
    let changed = false;
    for (const id of ids) {
      for (const g of this.tree.ancestors(id)) {
        changed = this.collapsed.delete(g) || changed;
      }
    }
    this.opening &&= !changed;
    return changed;
  }

  /** Expands the groups holding a layer, selects it and brings it into view (search, tests). */
  async reveal(id: string): Promise<void> {
    if (this.open([id])) {
      await this.relayout();
    }
    this.select(id);
    const box = this.boxOf(id);
    if (box) {
      this.bringIntoView([box], true);
    }
  }

  /** Selects a layer: marks it, shows its panel; ``fromUser``: a click (the host may jump). */
  select(id: string | null, fromUser = false): void {
    this.selected = id;
    this.selectedGroup = null;
    this.markSelection();
    if (id && this.panelOpen === null) {
      this.applyPanel();
    }
    this.renderPanel();
    const node = id ? this.byId.get(id) : undefined;
    if (node && fromUser) {
      this.host.openLayer(node);
    }
  }

  /** Shows a group's rollups (and, for a repeated module, its repetitions compared) in the panel. */
  selectGroup(gid: string): void {
    this.selected = null;
    this.selectedGroup = gid;
    if (this.panelOpen === false) {
      this.panelOpen = true;
    }
    this.markSelection();
    this.applyPanel();
    this.renderPanel();
  }

  /** Highlights the nodes of ``ids`` (the editor's cursor came from them) and, when any is off
   * screen, fits the view to them all. A few layers inside collapsed groups open those groups
   * (a kernel's three layers inside a decoder layer are shown, not its box); many are shown by
   * the collapsed groups holding them, outlined. */
  async highlight(ids: string[], reveal = true): Promise<void> {
    this.highlighted = new Set(ids.filter((i) => this.byId.has(i)));
    if (reveal && this.layout && this.highlighted.size <= HIGHLIGHT_OPENS && this.open([...this.highlighted])) {
      await this.relayout();
    }
    this.markSelection();
    if (!reveal || !this.layout || this.highlighted.size === 0) {
      return;
    }
    const boxes = [...this.highlighted].map((i) => this.boxOf(i)).filter((b): b is Box => !!b);
    if (boxes.length) {
      this.bringIntoView(boxes);
    }
  }

  /** The box drawn for a layer: its node, its host's (folded), or its collapsed group's. */
  private boxOf(id: string): Box | undefined {
    const layout = this.layout!;
    const host = this.tree.foldedInto.get(id) ?? id;
    const direct = layout.nodes.get(host);
    if (direct) {
      return direct;
    }
    const outer = this.tree
      .ancestors(host)
      .reverse()
      .find((g) => layout.collapsed.has(g));
    return outer ? layout.collapsed.get(outer) : undefined;
  }

  private markSelection(): void {
    const selectedHost = this.selected ? (this.tree.foldedInto.get(this.selected) ?? this.selected) : null;
    const lit = new Set([...this.highlighted].map((i) => this.tree.foldedInto.get(i) ?? i));
    for (const [id, g] of this.nodeEls) {
      g.classList.toggle('selected', id === selectedHost);
      g.classList.toggle('highlight', lit.has(id));
    }
    const hiddenIn = new Set<string>();
    for (const id of lit) {
      if (!this.nodeEls.has(id)) {
        this.tree.ancestors(id).forEach((g) => hiddenIn.add(g));
      }
    }
    for (const [gid, g] of this.groupEls) {
      g.classList.toggle('highlight', g.classList.contains('collapsed') && hiddenIn.has(gid));
      g.classList.toggle('selected', gid === this.selectedGroup);
    }
  }

  private renderPanel(): void {
    if (this.selectedGroup && this.tree.groups.has(this.selectedGroup)) {
      renderGroupPanel(
        this.panel,
        this.doc,
        this.tree,
        this.selectedGroup,
        this.overlay,
        (gid) => this.goToGroup(gid),
        (gid) => this.toggle(gid),
        this.collapsed.has(this.selectedGroup),
      );
    } else {
      renderPanel(
        this.panel,
        this.doc,
        this.selected ? (this.byId.get(this.selected) ?? null) : null,
        this.host,
        this.tree,
        (id) => void this.reveal(id),
      );
    }
  }

  private goToGroup(gid: string): void {
    const box = this.layout?.collapsed.get(gid) ?? this.layout?.groups.get(gid);
    if (box) {
      this.bringIntoView([box], true);
    }
    this.selectGroup(gid);
  }

  // -- search -------------------------------------------------------------------------------
  find(query: string): string[] {
    const q = query.trim().toLowerCase();
    this.matches = q
      ? this.doc.nodes.filter((n) => n.name.toLowerCase().includes(q) || n.opcode.toLowerCase().includes(q) || n.id === q).map((n) => n.id)
      : [];
    this.matchAt = -1;
    this.svgEl.classList.toggle('searching', q.length > 0);
    this.markMatches();
    const inside = this.matches.filter((m) => !this.nodeEls.has(m)).length;
    this.status.textContent = q
      ? `${plural(this.matches.length, 'match')}${inside ? ` (${inside} in collapsed groups or folded)` : ''} · Enter: next`
      : '';
    if (this.matches.length) {
      // the first match, without opening anything: Enter opens the groups that hold it
      const id = this.matches[0];
      const box = this.boxOf(id);
      this.selected = id;
      this.markSelection();
      this.renderPanel();
      if (box) {
        this.bringIntoView([box]);
      }
    }
    return this.matches;
  }

  private markMatches(): void {
    const set = new Set(this.matches.map((m) => this.tree.foldedInto.get(m) ?? m));
    const inGroups = new Set<string>();
    for (const m of set) {
      if (!this.nodeEls.has(m)) {
        this.tree.ancestors(m).forEach((g) => inGroups.add(g));
      }
    }
    for (const [id, g] of this.nodeEls) {
      g.classList.toggle('match', set.has(id));
    }
    for (const [gid, g] of this.groupEls) {
      g.classList.toggle('match', inGroups.has(gid));
    }
  }

  private async nextMatch(step: number): Promise<void> {
    if (!this.matches.length) {
      return;
    }
    this.matchAt = (this.matchAt + step + this.matches.length) % this.matches.length;
    await this.reveal(this.matches[this.matchAt]);
  }

  // -- the panel ----------------------------------------------------------------------------
  private isPanelOpen(): boolean {
    if (this.panelOpen !== null) {
      return this.panelOpen;
    }
    // Not chosen: open when something is selected, or when the view is wide enough to spare it.
    return !!(this.selected || this.selectedGroup) || this.root.clientWidth >= 1100;
  }

  /** The panel's width: never more than half of the view, so the graph keeps the other half. */
  private applyPanel(): void {
    const open = this.isPanelOpen();
    const main = this.root.querySelector('.main') as HTMLElement;
    this.panel.classList.toggle('closed', !open);
    this.resizer.classList.toggle('closed', !open);
    // at most half of what the panel and the graph share (the resizer's few pixels apart): the
    // graph keeps at least as much as the panel takes
    const limit = Math.max(160, Math.floor((main.clientWidth - this.resizer.offsetWidth) / 2));
    this.panel.style.width = `${Math.min(this.panelWidth, limit)}px`;
    this.panelButton.textContent = open ? 'Details ▸' : '◂ Details';
    this.panelButton.setAttribute('aria-pressed', String(open));
  }

  private bindPanel(): void {
    let drag: { x: number; w: number } | null = null;
    this.resizer.addEventListener('pointerdown', (ev) => {
      drag = { x: ev.clientX, w: this.panel.getBoundingClientRect().width };
      this.resizer.setPointerCapture(ev.pointerId);
    });
    this.resizer.addEventListener('pointermove', (ev) => {
      if (drag) {
        this.panelWidth = Math.max(180, drag.w + drag.x - ev.clientX);
        this.applyPanel();
      }
    });
    const end = () => (drag = null);
    this.resizer.addEventListener('pointerup', end);
    this.resizer.addEventListener('pointercancel', end);
    new ResizeObserver(() => this.applyPanel()).observe(this.root);
  }

  // -- tooltips: one element, filled on hover (no <title> per node) ---------------------------
  private bindTips(): void {
    this.svgEl.addEventListener('mousemove', (ev) => {
      const target = ev.target as Element;
      const text = this.tipFor(target);
      if (!text) {
        this.tip.classList.remove('on');
        return;
      }
      const r = this.canvas.getBoundingClientRect();
      this.tip.textContent = text;
      this.tip.style.left = `${Math.min(ev.clientX - r.left + 14, r.width - 260)}px`;
      this.tip.style.top = `${ev.clientY - r.top + 16}px`;
      this.tip.classList.add('on');
    });
    this.svgEl.addEventListener('mouseleave', () => this.tip.classList.remove('on'));
  }

  private tipFor(target: Element): string {
    const node = target.closest('[data-layer]');
    if (node) {
      const n = this.byId.get(node.getAttribute('data-layer')!)!;
      const folded = (this.tree.folded.get(n.id) ?? []).map((f) => this.byId.get(f)!).map((f) => `${f.opcode} ${cut(f.name, 60)}`);
      return [
        `${n.opcode} ${n.name}`,
        n.cost ?? '',
        n.numerics?.summary ?? '',
        folded.length
          ? `weights and constants folded in (${folded.length}):\n  ${folded.slice(0, 8).join('\n  ')}${folded.length > 8 ? '\n  …' : ''}`
          : '',
      ]
        .filter((s) => s)
        .join('\n');
    }
    const group = target.closest('[data-group]');
    if (group) {
      const gid = group.getAttribute('data-group')!;
      const g = this.tree.groups.get(gid)!;
      const count = this.tree.membersOf(gid).length;
      const rep = g.repeat ? `\nrepetition ${g.repeat.index + 1} of ${g.repeat.count}: ${g.repeat.pattern}` : '';
      const v = this.values.get(gid);
      const overlay = this.doc.overlays.find((o) => o.id === this.overlay);
      const fig =
        overlay && v !== null && v !== undefined
          ? `\n${overlay.label}: ${formatValue(v, overlay)} (${overlay.id === 'error' ? 'largest' : overlay.scale === 'category' ? 'all' : 'sum'} over its layers)`
          : '';
      const how = group.classList.contains('collapsed') ? 'click to open' : 'click its name to collapse';
      return `${g.path} — ${count} layers${rep}${fig}\n(${how})`;
    }
    const io = target.closest('[data-io]');
    if (io) {
      const x = this.doc.io.find((i) => i.id === io.getAttribute('data-io'));
      return x ? `${x.kind} ${x.name} ${x.type}` : '';
    }
    const edge = target.closest('[data-edge]');
    if (edge) {
      const [s, t] = edge.getAttribute('data-edge')!.split('\u0000');
      const route = this.layout?.edges.find((e) => e.source === s && e.target === t);
      return route ? route.tensors.slice(0, 10).join('\n') + (route.tensors.length > 10 ? `\n… ${route.tensors.length} tensors` : '') : '';
    }
    return '';
  }

  // -- pan and zoom -------------------------------------------------------------------------
  private bindPanZoom(): void {
    let drag: { x: number; y: number; vx: number; vy: number } | null = null;
    this.svgEl.addEventListener('pointerdown', (ev) => {
      if ((ev.target as Element).closest('.node, .collapsed, .group-label, .compare')) {
        return;
      }
      drag = { x: ev.clientX, y: ev.clientY, vx: this.view.x, vy: this.view.y };
      this.svgEl.setPointerCapture(ev.pointerId);
      this.svgEl.classList.add('dragging');
    });
    this.svgEl.addEventListener('pointermove', (ev) => {
      if (drag) {
        this.view.x = drag.vx + ev.clientX - drag.x;
        this.view.y = drag.vy + ev.clientY - drag.y;
        this.applyView(true);
      }
    });
    const end = () => {
      drag = null;
      this.svgEl.classList.remove('dragging');
    };
    this.svgEl.addEventListener('pointerup', end);
    this.svgEl.addEventListener('pointercancel', end);
    this.svgEl.addEventListener(
      'wheel',
      (ev) => {
        ev.preventDefault();
        const rect = this.viewRect();
        if (ev.ctrlKey || !ev.shiftKey) {
          const factor = Math.exp(-ev.deltaY * (ev.deltaMode === 1 ? 0.05 : 0.0015));
          this.zoomAt(ev.clientX - rect.left, ev.clientY - rect.top, factor);
        } else {
          this.view.x -= ev.deltaY;
          this.applyView(true);
        }
      },
      { passive: false },
    );
    this.svgEl.addEventListener('click', (ev) => {
      if (!(ev.target as Element).closest('.node, .group')) {
        this.select(null);
      }
    });
    new ResizeObserver(() => this.applyView()).observe(this.canvas);
  }

  /** Where the graph is shown on the page (the SVG's box, whatever transform the compositor has
   * on it while zooming). */
  private viewRect(): { left: number; top: number; width: number; height: number } {
    const r = this.canvas.getBoundingClientRect();
    const above = this.notice.offsetHeight;
    return { left: r.left, top: r.top + above, width: r.width, height: r.height - above };
  }

  private zoomAt(px: number, py: number, factor: number): void {
    const k = Math.min(MAX_SCALE, Math.max(MIN_SCALE, this.view.k * factor));
    const f = k / this.view.k;
    this.view.x = px - (px - this.view.x) * f;
    this.view.y = py - (py - this.view.y) * f;
    this.view.k = k;
    this.applyView(true);
  }

  /** Shows the view. ``live``: the mouse is zooming or panning: with thousands of elements drawn,
   * the picture already painted is moved and scaled by the compositor (no repaint of the SVG)
   * until the mouse rests, then drawn anew at the new view. */
  private applyView(live = false): void {
    if (this.frame) {
      return;
    }
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      const heavy = this.nodeEls.size + this.edgeEls.size + this.groupEls.size > HEAVY;
      clearTimeout(this.settle);
      if (live && heavy) {
        const c = this.committed;
        const f = this.view.k / c.k;
        this.svgEl.style.transform = `translate(${(this.view.x - c.x * f).toFixed(1)}px,${(this.view.y - c.y * f).toFixed(1)}px) scale(${f.toFixed(4)})`;
        this.settle = setTimeout(() => this.applyView(), 160);
        return;
      }
      this.svgEl.style.transform = '';
      this.committed = { ...this.view };
      this.viewport.setAttribute(
        'transform',
        `translate(${this.view.x.toFixed(1)},${this.view.y.toFixed(1)}) scale(${this.view.k.toFixed(4)})`,
      );
      // Level of detail: text too small to read is not drawn (11 px shape text below 0.6×, all
      // node text below 0.32×), which also keeps zooming out a large graph smooth.
      this.svgEl.classList.toggle('far', this.view.k < 0.6);
      this.svgEl.classList.toggle('farther', this.view.k < 0.32);
    });
  }

  /** The view a graph opens with: all of it when it fits readable, else readable at the top of
   * its main path (the longest chain from an input to an output), not at a corner of plumbing. */
  private openingView(): void {
    const layout = this.layout!;
    const r = this.viewRect();
    const w = Math.max(r.width, 200);
    const h = Math.max(r.height, 200);
    const k = Math.min(w / (layout.width + 40), h / (layout.height + 40), 1.25);
    if (k >= 0.9) {
      this.fit();
      return;
    }
    // Centred on the boxes of the main path the first screen shows, not on its first box: a
    // path that turns aside after the input (a MediaPipe model's residual stem) stays in view.
    const path = this.mainPath()
      .map((id) => layout.nodes.get(id) ?? layout.collapsed.get(id))
      .filter((b): b is Box => !!b);
    const top = path.length ? Math.max(0, path[0].y - 20) : 0;
    const first = path.filter((b) => b === path[0] || b.y + b.height <= top + (h - 16) / READABLE);
    const cx = first.length ? (Math.min(...first.map((b) => b.x)) + Math.max(...first.map((b) => b.x + b.width))) / 2 : layout.width / 2;
    this.view = { k: READABLE, x: w / 2 - cx * READABLE, y: 16 - top * READABLE };
    this.applyView();
  }

  /** The longest path through the boxes shown, from its first box. */
  private mainPath(): string[] {
    const layout = this.layout!;
    const succ = new Map<string, string[]>();
    const indegree = new Map<string, number>();
    for (const id of [...layout.nodes.keys(), ...layout.collapsed.keys()]) {
      indegree.set(id, 0);
    }
    for (const e of layout.edges) {
      (succ.get(e.source) ?? succ.set(e.source, []).get(e.source)!).push(e.target);
      indegree.set(e.target, (indegree.get(e.target) ?? 0) + 1);
    }
    const longest = new Map<string, number>();
    const from = new Map<string, string>();
    const queue = [...indegree].filter(([, d]) => d === 0).map(([id]) => id);
    for (const id of queue) {
      longest.set(id, 0);
    }
    for (let i = 0; i < queue.length; i++) {
      const u = queue[i];
      for (const v of succ.get(u) ?? []) {
        if ((longest.get(u) ?? 0) + 1 > (longest.get(v) ?? -1)) {
          longest.set(v, (longest.get(u) ?? 0) + 1);
          from.set(v, u);
        }
        indegree.set(v, indegree.get(v)! - 1);
        if (indegree.get(v) === 0) {
          queue.push(v);
        }
      }
    }
    let end: string | null = null;
    for (const [id, d] of longest) {
      if (end === null || d > longest.get(end)!) {
        end = id;
      }
    }
    const path: string[] = [];
    for (let at = end; at !== null; at = from.get(at) ?? null) {
      path.push(at);
    }
    return path.reverse();
  }

  /** The whole graph in view. */
  fit(): void {
    const layout = this.layout;
    if (!layout) {
      return;
    }
    const r = this.viewRect();
    const w = Math.max(r.width, 200);
    const h = Math.max(r.height, 200);
    const k = Math.min(w / (layout.width + 40), h / (layout.height + 40), 1.25);
    this.view = { k, x: (w - layout.width * k) / 2, y: (h - layout.height * k) / 2 };
    this.applyView();
  }

  /** Brings ``boxes`` into view unless they are all on screen already: centered, zoomed out as
   * far as needed to show them all (and no closer than readable when they fit readable). */
  private bringIntoView(boxes: Box[], center = false): void {
    const r = this.viewRect();
    const w = Math.max(r.width, 200);
    const h = Math.max(r.height, 200);
    const x0 = Math.min(...boxes.map((b) => b.x));
    const y0 = Math.min(...boxes.map((b) => b.y));
    const x1 = Math.max(...boxes.map((b) => b.x + b.width));
    const y1 = Math.max(...boxes.map((b) => b.y + b.height));
    let k = this.view.k;
    const inView = x0 * k + this.view.x >= 0 && y0 * k + this.view.y >= 0 && x1 * k + this.view.x <= w && y1 * k + this.view.y <= h;
    if (inView && !center) {
      return;
    }
    const fits = Math.min((w - 60) / (x1 - x0), (h - 60) / (y1 - y0));
    k = Math.max(MIN_SCALE, Math.min(fits, Math.max(k, READABLE), 1.25));
    this.view = { k, x: w / 2 - ((x0 + x1) / 2) * k, y: h / 2 - ((y0 + y1) / 2) * k };
    this.applyView();
  }

  /** Adds a control to the toolbar (a host's own: VS Code's bundle switcher). */
  addControl(control: HTMLElement): void {
    this.root.querySelector('.toolbar')!.insertBefore(control, this.status);
  }

  /** The selected layer and the view's overlay (for hosts that remember state). */
  state(): { overlay: string; selected: string | null } {
    return { overlay: this.overlay, selected: this.selected };
  }

  /** Where things are drawn, for tests and the bench: boxes in graph coordinates, and the view
   * (screen = graph × k + x, y). */
  geometry(): {
    view: { x: number; y: number; k: number };
    nodes: Record<string, Box>;
    collapsed: Record<string, Box>;
    groups: Record<string, Box>;
  } {
    const l = this.layout;
    return {
      view: { ...this.view },
      nodes: Object.fromEntries(l?.nodes ?? []),
      collapsed: Object.fromEntries(l?.collapsed ?? []),
      groups: Object.fromEntries(l?.groups ?? []),
    };
  }

  /** The element drawn for a layer (its own node, the node it is folded into, or the collapsed
   * group holding it): ``[data-layer]`` or ``[data-group]`` selector, or null. */
  drawnAs(id: string): string | null {
    const host = this.tree.foldedInto.get(id) ?? id;
    if (this.nodeEls.has(host)) {
      return `[data-layer="${host}"]`;
    }
    const outer = this.tree
      .ancestors(host)
      .reverse()
      .find((g) => this.layout?.collapsed.has(g));
    return outer ? `[data-group="${outer}"]` : null;
  }

  /** Moves the pass slider to a position in the pipeline (null: off); what it now shows. */
  setPass(at: number | null): { name: string; touched: string[]; fused: string[][]; lowered: string[] } | null {
    const s = this.slider.set(at);
    return s && { name: s.pass.name, touched: [...s.touched], fused: s.fused, lowered: [...s.lowered] };
  }

  /** The layout cache, for tests: container structures with a layout now, and how many of them
   * the host holds (handed to it to keep, or given back by it when the graph was shown). */
  keptLayouts(): { shapes: number; kept: number } {
    return { shapes: this.layouter?.shapeCount ?? 0, kept: this.savedShapes };
  }

  /** Where layouts run (``worker`` or ``page``, with why). */
  async layoutMode(): Promise<string> {
    const r = await this.runner;
    return r.mode === 'worker' ? 'worker' : `page: ${r.note}`;
  }

  /** Opens or closes a group (as a click on it does); resolves when it is drawn. */
  async setCollapsed(gid: string, closed: boolean): Promise<Layout> {
    if (closed) {
      this.collapsed.add(gid);
    } else {
      this.tree.openBelow(gid, this.collapsed, OPEN_BUDGET / 2);
    }
    return this.relayout();
  }
}
