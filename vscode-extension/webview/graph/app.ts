/**
 * The model graph view: one app for both hosts (a VS Code webview, the static report). It lays
 * the graph document out with elkjs, draws it as SVG (pan with the mouse, zoom with the wheel),
 * colors it by an overlay with a legend, finds layers by name, collapses scope groups and shows
 * a layer's panel. Every node element carries ``data-layer="<layer id>"``.
 */
import { colorBy, textOn, type Coloring } from './overlays';
import { cut, el, svg } from './dom';
import { boxedGroups, layOut, NODE_HEIGHT, type Box, type Layout } from './layout';
import { renderPanel } from './panel';
import type { GraphDocument, GraphNode, Host } from './types';

const MIN_SCALE = 0.03;
const MAX_SCALE = 4;

function shortName(name: string): string {
  const first = name.split(';')[0];
  return first.split('/').filter((p) => p).pop() ?? first;
}
function shapeOf(node: GraphNode): string {
  const t = node.outputs[0]?.type ?? '';
  const i = t.indexOf('[');
  return i >= 0 ? t.slice(i) : t;
}

export class GraphApp {
  readonly root: HTMLElement;
  private doc!: GraphDocument;
  private byId = new Map<string, GraphNode>();
  private labels = new Map<string, [string, string]>();
  private collapsed = new Set<string>();
  private layout: Layout | undefined;
  private overlay = '';
  private coloring: Coloring | undefined;
  private view = { x: 0, y: 0, k: 1 };
  private selected: string | null = null;
  private highlighted = new Set<string>();
  private matches: string[] = [];
  private matchAt = -1;
  private frame = 0;
  private layoutRun = 0;
  /** Resolved after each finished layout and paint (tests and the bench wait on it). */
  painted: Promise<Layout> = new Promise(() => undefined);
  lastPaintMs = 0;

  private readonly svgEl: SVGSVGElement;
  private readonly viewport: SVGGElement;
  private readonly canvas: HTMLElement;
  private readonly panel: HTMLElement;
  private readonly legend: HTMLElement;
  private readonly status: HTMLElement;
  private readonly search: HTMLInputElement;
  private readonly overlaySelect: HTMLSelectElement;
  private readonly nodeEls = new Map<string, SVGGElement>();
  private readonly groupEls = new Map<string, SVGGElement>();

  constructor(container: HTMLElement, private readonly host: Host) {
    this.search = el('input', { type: 'search', class: 'search', placeholder: 'Find layer by name or op…', 'aria-label': 'Find layer' });
    this.overlaySelect = el('select', { class: 'overlay', 'aria-label': 'Overlay' });
    const fit = el('button', { class: 'fit', title: 'Fit the graph in the view' }, 'Fit');
    const collapseAll = el('button', { class: 'collapse-all', title: 'Collapse every group' }, 'Collapse all');
    const expandAll = el('button', { class: 'expand-all', title: 'Expand every group' }, 'Expand all');
    this.status = el('span', { class: 'status' });
    this.svgEl = svg('svg', { class: 'graph', role: 'img' });
    this.viewport = svg('g', { class: 'viewport' });
    this.svgEl.append(this.viewport);
    this.legend = el('div', { class: 'legend' });
    this.canvas = el('div', { class: 'canvas' }, this.svgEl, this.legend);
    this.panel = el('aside', { class: 'panel' });
    this.root = el(
      'div',
      { class: 'tvmx-graph' },
      el('div', { class: 'toolbar' }, this.search, el('label', {}, 'Overlay ', this.overlaySelect), fit, collapseAll, expandAll, this.status),
      el('div', { class: 'main' }, this.canvas, this.panel),
    );
    container.append(this.root);
    fit.addEventListener('click', () => this.fit());
    collapseAll.addEventListener('click', () => {
      this.collapsed = boxedGroups(this.doc);
      void this.relayout(true);
    });
    expandAll.addEventListener('click', () => {
      this.collapsed.clear();
      void this.relayout(true);
    });
    this.search.addEventListener('input', () => this.find(this.search.value));
    this.search.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        this.nextMatch(ev.shiftKey ? -1 : 1);
      }
    });
    this.overlaySelect.addEventListener('change', () => {
      this.setOverlay(this.overlaySelect.value);
      this.host.overlayChanged(this.overlay);
    });
    this.bindPanZoom();
  }

  /** Shows a graph document (again: a recompiled bundle keeps the view's overlay and groups). */
  async show(doc: GraphDocument, overlay?: string): Promise<Layout> {
    const known = this.doc && this.doc.model.sha256 === doc.model.sha256;
    this.doc = doc;
    this.byId = new Map(doc.nodes.map((n) => [n.id, n]));
    this.labels = new Map(doc.nodes.map((n) => [n.id, [n.opcode, cut(`${shortName(n.name)} ${shapeOf(n)}`.trim(), 34)]]));
    const groupIds = new Set(doc.groups.map((g) => g.id));
    this.collapsed = known ? new Set([...this.collapsed].filter((g) => groupIds.has(g))) : new Set();
    if (!known) {
      this.selected = null;
    }
    this.overlaySelect.replaceChildren(
      el('option', { value: '' }, 'None'),
      ...doc.overlays.map((o) => {
        const opt = el('option', { value: o.id }, o.available ? o.label : `${o.label} (no data)`);
        return opt;
      }),
    );
    const wanted = overlay ?? this.overlay ?? '';
    const first = doc.overlays.find((o) => o.id === wanted) ?? doc.overlays.find((o) => o.available && o.id === 'time') ?? doc.overlays.find((o) => o.available && o.id === 'code');
    this.overlay = first?.id ?? '';
    this.overlaySelect.value = this.overlay;
    return this.relayout(!known);
  }

  private async relayout(fit = false): Promise<Layout> {
    const run = ++this.layoutRun;
    const t0 = performance.now();
    this.status.textContent = 'Laying out…';
    let resolve!: (l: Layout) => void;
    this.painted = new Promise((r) => (resolve = r));
    const layout = await layOut(this.doc, this.collapsed, this.labels);
    if (run !== this.layoutRun) {
      return layout;
    }
    const anchor = this.layout ? this.centerPoint() : null;
    this.layout = layout;
    this.draw();
    this.setOverlay(this.overlay);
    if (fit || !anchor) {
      this.fit(true);
    } else {
      this.applyView();
    }
    this.renderPanel();
    await new Promise((r) => requestAnimationFrame(() => r(undefined)));
    this.lastPaintMs = performance.now() - t0;
    const n = this.doc.nodes.length;
    const boxed = layout.groups.size + layout.collapsed.size;
    const inner = this.doc.groups.length > boxed ? ` (${this.doc.groups.length - boxed} inner scopes not boxed: a large model)` : '';
    this.status.textContent = `${n} layers · ${this.doc.edges.length} tensors · ${boxed} groups${inner} · layout ${Math.round(layout.ms)} ms`;
    resolve(layout);
    return layout;
  }

  private draw(): void {
    const layout = this.layout!;
    this.nodeEls.clear();
    this.groupEls.clear();
    const groups = svg('g', { class: 'groups' });
    const edges = svg('g', { class: 'edges' });
    const nodes = svg('g', { class: 'nodes' });
    const depth = (id: string): number => {
      let d = 0;
      for (let g = this.doc.groups.find((x) => x.id === id)?.parent ?? null; g; g = this.doc.groups.find((x) => x.id === g)?.parent ?? null) {
        d++;
      }
      return d;
    };
    const groupInfo = new Map(this.doc.groups.map((g) => [g.id, g]));
    const sortedGroups = [...layout.groups.entries()].sort((a, b) => depth(a[0]) - depth(b[0]));
    for (const [gid, box] of sortedGroups) {
      const g = groupInfo.get(gid)!;
      const header = svg('text', { class: 'group-label', x: box.x + 8, y: box.y + 15 }, `▾ ${cut(g.label, Math.max(4, Math.floor(box.width / 7.5)))}`);
      const elG = svg('g', { class: 'group', 'data-group': gid }, svg('rect', { x: box.x, y: box.y, width: box.width, height: box.height, rx: 6 }), header, svg('title', {}, `${g.path} — ${g.size} layers (click the name to collapse)`));
      header.addEventListener('click', (ev) => {
        ev.stopPropagation();
        this.toggle(gid);
      });
      groups.append(elG);
      this.groupEls.set(gid, elG);
    }
    for (const [gid, box] of layout.collapsed) {
      const g = groupInfo.get(gid)!;
      const rect = svg('rect', { x: box.x, y: box.y, width: box.width, height: box.height, rx: 8 });
      const elG = svg(
        'g',
        { class: 'group collapsed', 'data-group': gid },
        rect,
        svg('text', { class: 'op', x: box.x + 10, y: box.y + 18 }, `▸ ${cut(g.label, 26)}`),
        svg('text', { class: 'detail', x: box.x + 10, y: box.y + 34 }, `${g.size} layers`),
        svg('title', {}, `${g.path} — ${g.size} layers (click to expand)`),
      );
      elG.addEventListener('click', (ev) => {
        ev.stopPropagation();
        this.toggle(gid);
      });
      nodes.append(elG);
      this.groupEls.set(gid, elG);
    }
    for (const e of layout.edges) {
      const d = e.points.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join('');
      edges.append(svg('path', { d, class: 'edge', 'marker-end': 'url(#tvmx-arrow)' }, svg('title', {}, e.tensors.join('\n'))));
    }
    for (const [id, box] of layout.nodes) {
      const node = this.byId.get(id);
      if (node) {
        nodes.append(this.nodeElement(node, box));
      } else {
        const io = this.doc.io.find((x) => x.id === id);
        if (io) {
          nodes.append(
            svg(
              'g',
              { class: `io ${io.kind}`, 'data-io': io.id, transform: `translate(${box.x},${box.y})` },
              svg('rect', { width: box.width, height: box.height, rx: box.height / 2 }),
              svg('text', { class: 'detail', x: box.width / 2, y: 17, 'text-anchor': 'middle' }, `${io.kind}: ${cut(io.name, 28)}`),
              svg('title', {}, `${io.kind} ${io.name} ${io.type}`),
            ),
          );
        }
      }
    }
    const defs = svg(
      'defs',
      {},
      svg('marker', { id: 'tvmx-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, svg('path', { d: 'M0,0L10,5L0,10z', class: 'arrow' })),
    );
    this.viewport.replaceChildren(defs, groups, edges, nodes);
    this.markSelection();
  }

  private nodeElement(node: GraphNode, box: Box): SVGGElement {
    const [label, detail] = this.labels.get(node.id)!;
    const classes = ['node'];
    if (node.numerics?.diverges) {
      classes.push('diverges');
    }
    const title = [`${node.opcode} ${node.name}`, node.cost ?? '', node.numerics?.summary ?? ''].filter((s) => s).join('\n');
    const g = svg(
      'g',
      { class: classes.join(' '), 'data-layer': node.id, transform: `translate(${box.x},${box.y})`, tabindex: 0 },
      svg('rect', { width: box.width, height: NODE_HEIGHT, rx: 5 }),
      svg('text', { class: 'op', x: 8, y: 17 }, cut(label, Math.floor(box.width / 7.2))),
      svg('text', { class: 'detail', x: 8, y: 34 }, detail),
      svg('title', {}, title),
    );
    g.addEventListener('click', (ev) => {
      ev.stopPropagation();
      this.select(node.id, true);
    });
    g.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        this.select(node.id, true);
      }
    });
    this.nodeEls.set(node.id, g);
    return g;
  }

  setOverlay(id: string): void {
    this.overlay = id;
    this.overlaySelect.value = id;
    const overlay = this.doc.overlays.find((o) => o.id === id);
    this.coloring = colorBy(this.doc.nodes, overlay);
    for (const [nid, g] of this.nodeEls) {
      const color = this.coloring.fill.get(nid);
      const rect = g.querySelector('rect')!;
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
    }
    this.renderLegend();
  }

  private renderLegend(): void {
    const c = this.coloring!;
    const swatch = (color: string) => svg('svg', { width: 14, height: 14, class: 'swatch' }, svg('rect', { width: 14, height: 14, rx: 2, fill: color }));
    const overlay = this.doc.overlays.find((o) => o.id === this.overlay);
    // A scale is one strip of colors between its ends; categories are named one by one.
    const body =
      overlay?.scale === 'category' || overlay?.scale === 'budget'
        ? c.legend.map((e) => el('span', { class: 'legend-row' }, swatch(e.color), el('span', {}, e.label)))
        : c.legend.length
          ? [el('span', { class: 'legend-row' }, el('span', {}, c.legend[0].label), ...c.legend.map((e) => swatch(e.color)), el('span', {}, c.legend[c.legend.length - 1].label))]
          : [];
    this.legend.replaceChildren(el('div', { class: 'legend-rows' }, ...body), el('div', { class: 'legend-caption' }, c.caption));
  }

  private toggle(gid: string): void {
    if (this.collapsed.has(gid)) {
      this.collapsed.delete(gid);
    } else {
      this.collapsed.add(gid);
    }
    void this.relayout();
  }

  /** Selects a layer: marks it, shows its panel; ``fromUser``: a click (the host may jump). */
  select(id: string | null, fromUser = false): void {
    this.selected = id;
    this.markSelection();
    this.renderPanel();
    const node = id ? this.byId.get(id) : undefined;
    if (node && fromUser) {
      this.host.openLayer(node);
    }
  }

  /** Highlights the nodes of ``ids`` (the editor's cursor came from them) and scrolls them into view. */
  highlight(ids: string[], reveal = true): void {
    this.highlighted = new Set(ids.filter((i) => this.byId.has(i)));
    this.markSelection();
    if (!reveal || !this.layout || this.highlighted.size === 0) {
      return;
    }
    const boxes = [...this.highlighted].map((i) => this.boxOf(i)).filter((b): b is Box => !!b);
    if (boxes.length) {
      this.reveal(boxes);
    }
  }

  private boxOf(id: string): Box | undefined {
    const layout = this.layout!;
    const direct = layout.nodes.get(id);
    if (direct) {
      return direct;
    }
    for (let g = this.byId.get(id)?.group ?? null; g; g = this.doc.groups.find((x) => x.id === g)?.parent ?? null) {
      const box = layout.collapsed.get(g);
      if (box) {
        return box;
      }
    }
    return undefined;
  }

  private markSelection(): void {
    const hiddenIn = new Set<string>();
    for (const [id, g] of this.nodeEls) {
      g.classList.toggle('selected', id === this.selected);
      g.classList.toggle('highlight', this.highlighted.has(id));
    }
    for (const id of this.highlighted) {
      if (!this.nodeEls.has(id)) {
        for (let g = this.byId.get(id)?.group ?? null; g; g = this.doc.groups.find((x) => x.id === g)?.parent ?? null) {
          hiddenIn.add(g);
        }
      }
    }
    for (const [gid, g] of this.groupEls) {
      g.classList.toggle('highlight', g.classList.contains('collapsed') && hiddenIn.has(gid));
    }
  }

  private renderPanel(): void {
    renderPanel(this.panel, this.doc, this.selected ? this.byId.get(this.selected) ?? null : null, this.host);
  }

  private find(query: string): void {
    const q = query.trim().toLowerCase();
    this.matches = q ? this.doc.nodes.filter((n) => n.name.toLowerCase().includes(q) || n.opcode.toLowerCase().includes(q) || n.id === q).map((n) => n.id) : [];
    this.matchAt = -1;
    const set = new Set(this.matches);
    this.svgEl.classList.toggle('searching', q.length > 0);
    for (const [id, g] of this.nodeEls) {
      g.classList.toggle('match', set.has(id));
    }
    this.status.textContent = q ? `${this.matches.length} match${this.matches.length === 1 ? '' : 'es'} (Enter: next)` : '';
    if (this.matches.length) {
      this.nextMatch(1);
    }
  }

  private nextMatch(step: number): void {
    if (!this.matches.length) {
      return;
    }
    this.matchAt = (this.matchAt + step + this.matches.length) % this.matches.length;
    const id = this.matches[this.matchAt];
    this.select(id);
    const box = this.boxOf(id);
    if (box) {
      this.reveal([box], true);
    }
  }

  // -- pan and zoom -----------------------------------------------------------------------
  private bindPanZoom(): void {
    let drag: { x: number; y: number; vx: number; vy: number } | null = null;
    this.svgEl.addEventListener('pointerdown', (ev) => {
      if ((ev.target as Element).closest('.node, .collapsed, .group-label')) {
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
        this.applyView();
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
        const rect = this.svgEl.getBoundingClientRect();
        if (ev.ctrlKey || !ev.shiftKey) {
          const factor = Math.exp(-ev.deltaY * (ev.deltaMode === 1 ? 0.05 : 0.0015));
          this.zoomAt(ev.clientX - rect.left, ev.clientY - rect.top, factor);
        } else {
          this.view.x -= ev.deltaY;
          this.applyView();
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

  private zoomAt(px: number, py: number, factor: number): void {
    const k = Math.min(MAX_SCALE, Math.max(MIN_SCALE, this.view.k * factor));
    const f = k / this.view.k;
    this.view.x = px - (px - this.view.x) * f;
    this.view.y = py - (py - this.view.y) * f;
    this.view.k = k;
    this.applyView();
  }

  private applyView(): void {
    if (this.frame) {
      return;
    }
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.viewport.setAttribute('transform', `translate(${this.view.x.toFixed(1)},${this.view.y.toFixed(1)}) scale(${this.view.k.toFixed(4)})`);
      this.svgEl.classList.toggle('far', this.view.k < 0.35);
    });
  }

  private centerPoint(): { x: number; y: number } {
    const r = this.svgEl.getBoundingClientRect();
    return { x: (r.width / 2 - this.view.x) / this.view.k, y: (r.height / 2 - this.view.y) / this.view.k };
  }

  /** The whole graph in view; a tall graph too small to read starts at its top, readable. */
  fit(initial = false): void {
    const layout = this.layout;
    if (!layout) {
      return;
    }
    const r = this.svgEl.getBoundingClientRect();
    const w = Math.max(r.width, 200);
    const h = Math.max(r.height, 200);
    let k = Math.min(w / (layout.width + 40), h / (layout.height + 40), 1.25);
    if (initial && k < 0.45) {
      k = Math.min(0.8, w / (layout.width + 40));
      k = Math.max(k, 0.45);
      this.view = { k, x: (w - layout.width * k) / 2, y: 20 };
    } else {
      this.view = { k, x: (w - layout.width * k) / 2, y: (h - layout.height * k) / 2 };
    }
    this.applyView();
  }

  /** Scrolls ``boxes`` into view (centered) unless they are already all visible. */
  private reveal(boxes: Box[], always = false): void {
    const r = this.svgEl.getBoundingClientRect();
    const x0 = Math.min(...boxes.map((b) => b.x));
    const y0 = Math.min(...boxes.map((b) => b.y));
    const x1 = Math.max(...boxes.map((b) => b.x + b.width));
    const y1 = Math.max(...boxes.map((b) => b.y + b.height));
    const k = this.view.k;
    const inView = x0 * k + this.view.x >= 0 && y0 * k + this.view.y >= 0 && x1 * k + this.view.x <= r.width && y1 * k + this.view.y <= r.height;
    if (inView && !always) {
      return;
    }
    if (k < 0.45) {
      this.view.k = 0.8;
    }
    this.view.x = r.width / 2 - ((x0 + x1) / 2) * this.view.k;
    this.view.y = r.height / 2 - ((y0 + y1) / 2) * this.view.k;
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
}
