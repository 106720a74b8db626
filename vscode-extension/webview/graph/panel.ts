/**
 * The layer panel: what the bundle knows of one layer — operator, name, scope, source line,
 * attributes, tensors with shapes, its cost and error, its kernels (with how each was
 * scheduled), and its places (model entry, Relax binding, PrimFunc, kernels) with excerpts.
 */
import { cut, el } from './dom';
import { formatValue, rollup } from './overlays';
import type { ViewTree } from './tree';
import type { GraphDocument, GraphNode, Host, Place } from './types';

const STAGE_LABELS: Record<string, string> = { model: 'Model', relax: 'Relax (last pass)', tir: 'TIR (last pass)', code: 'Generated code' };

function section(title: string, ...body: (Node | null | false)[]): HTMLElement {
  return el('section', {}, el('h3', {}, title), ...body);
}

function table(rows: [string, string][]): HTMLTableElement {
  return el('table', { class: 'kv' }, ...rows.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, v))));
}

function layerLink(doc: GraphDocument, id: string, go: (id: string) => void): HTMLElement {
  const n = doc.nodes.find((x) => x.id === id);
  const a = el('a', { href: '#', 'data-goto': id }, n ? `${n.opcode} ${cut(n.name, 60)}` : id);
  a.addEventListener('click', (ev) => {
    ev.preventDefault();
    go(id);
  });
  return a;
}

export function renderPanel(
  panel: HTMLElement,
  doc: GraphDocument,
  node: GraphNode | null,
  host: Host,
  tree: ViewTree,
  go: (id: string) => void,
): void {
  panel.replaceChildren();
  if (!node) {
    panel.append(
      el('p', { class: 'hint' }, 'Click a layer to see its attributes, shapes, cost, error and where it ended up in the generated code.'),
      el('p', { class: 'hint' }, doc.costs_note),
    );
    return;
  }
  const unit = doc.model.unit;
  const title = el('h2', {}, el('span', { class: 'opcode' }, node.opcode), ` ${unit} ${node.op_index}`);
  panel.append(title);
  if (node.name) {
    panel.append(el('div', { class: 'layer-name', title: node.name }, node.name));
  }
  const facts: [string, string][] = [];
  if (node.module) {
    facts.push(['module', node.module_class ? `${node.module} (${node.module_class})` : node.module]);
  }
  if (node.source) {
    facts.push(['source', node.source]);
  }
  if (node.subgraph) {
    facts.push(['subgraph', String(node.subgraph)]);
  }
  facts.push(['layer id', node.id]);
  panel.append(table(facts));
  const into = tree.foldedInto.get(node.id);
  if (into) {
    panel.append(
      el(
        'p',
        { class: 'hint folded-into' },
        'Prepares a constant only: drawn folded into ',
        layerLink(doc, into, go),
        ' (tick "weights" in the toolbar to draw it).',
      ),
    );
  }
  const folded = tree.folded.get(node.id) ?? [];
  if (folded.length) {
    panel.append(
      section(
        `Weights and constants folded in (${folded.length})`,
        el('ul', { class: 'folded' }, ...folded.map((f) => el('li', {}, layerLink(doc, f, go)))),
      ),
    );
  }
  if (host.kind === 'vscode') {
    const button = el('button', { class: 'open-layer' }, 'Show Layer Places');
    button.addEventListener('click', () => host.openLayer(node));
    panel.append(button);
  }
  const m = node.metrics;
  const costRows: [string, string][] = [];
  if (node.cost) {
    costRows.push(['cost', node.cost]);
  }
  if (m.kernels !== null) {
    costRows.push(['kernels', String(m.kernels)]);
  }
  if (m.coverage) {
    costRows.push(['provenance', m.coverage]);
  }
  if (node.tuning) {
    costRows.push(['tuning', node.tuning]);
  }
  panel.append(section('Cost', costRows.length ? table(costRows) : el('p', { class: 'hint' }, doc.costs_note)));
  if (node.numerics) {
    const n = node.numerics;
    panel.append(
      section(
        'Numerics',
        el('p', { class: n.diverges ? 'diverges' : '' }, `${n.first ? 'First divergence. ' : ''}${n.summary}`),
        el('p', { class: 'hint' }, `against ${n.reference}`),
        n.hint ? el('p', { class: 'hint' }, n.hint) : null,
      ),
    );
  }
  const attrs = Object.entries(node.attributes);
  if (attrs.length) {
    panel.append(section('Attributes', table(attrs)));
  }
  const tensors = (label: string, list: GraphNode['inputs']) =>
    list.map((t) =>
      el(
        'tr',
        {},
        el('th', {}, label),
        el('td', { class: 'tensor', title: t.name }, cut(t.name, 60)),
        el('td', { class: 'type' }, `${t.type}${t.const ? ' const' : ''}`),
      ),
    );
  panel.append(section('Tensors', el('table', { class: 'tensors' }, ...tensors('in', node.inputs), ...tensors('out', node.outputs))));
  if (node.kernels.length) {
    panel.append(
      section(
        'Kernels',
        el(
          'ul',
          { class: 'kernels' },
          ...node.kernels.map((k) => {
            const info = doc.kernels[k];
            return el('li', {}, el('code', {}, k), info ? ` — ${info.schedule} schedule · ${info.summary}` : '');
          }),
        ),
      ),
    );
  }
  const places = node.places ?? [];
  if (places.length) {
    panel.append(section('Places', ...places.map((p) => placeBlock(node, p, host))));
  }
}

function placeBlock(node: GraphNode, p: Place, host: Host): HTMLElement {
  const where = `${p.path}:${p.line + 1}`;
  const head = el(
    'div',
    { class: 'place-head' },
    el('span', { class: 'stage' }, STAGE_LABELS[p.stage] ?? p.stage),
    ' ',
    host.kind === 'vscode' ? el('a', { href: '#', class: 'place-link' }, where) : el('span', { class: 'place-link' }, where),
    p.function ? el('span', { class: 'function' }, ` in ${p.function}`) : null,
    p.count > 1 ? el('span', { class: 'hint' }, ` · ${p.count} statements`) : null,
  );
  const link = head.querySelector('a');
  link?.addEventListener('click', (ev) => {
    ev.preventDefault();
    host.openPlace(node, p);
  });
  const code = el('pre', { class: `excerpt stage-${p.stage}` });
  let last = -2;
  for (const [line, text] of p.excerpt) {
    if (last >= 0 && line !== last + 1) {
      code.append(el('span', { class: 'gap' }, '   ⋮\n'));
    }
    code.append(el('span', { class: 'ln' }, String(line + 1).padStart(5, ' ')), ` ${text}\n`);
    last = line;
  }
  return el('div', { class: 'place', 'data-stage': p.stage }, head, code);
}

const ROLLUPS = ['time', 'code', 'workspace', 'flops', 'kernels', 'error'] as const;

/**
 * A group's panel: its layers' rollups (sums, the largest error) and, for a repeated module (a
 * decoder layer), every repetition of it side by side with its figures and a bar for the
 * overlay's: where the repetitions differ.
 */
export function renderGroupPanel(
  panel: HTMLElement,
  doc: GraphDocument,
  tree: ViewTree,
  gid: string,
  overlayId: string,
  go: (gid: string) => void,
  toggle: (gid: string) => void,
  collapsed: boolean,
): void {
  const g = tree.groups.get(gid)!;
  const byId = new Map(doc.nodes.map((n) => [n.id, n]));
  const members = (id: string) => tree.membersOf(id).map((m) => byId.get(m)!);
  const overlays = new Map(doc.overlays.map((o) => [o.id as string, o]));
  const figure = (id: string, o: string) => {
    const overlay = overlays.get(o);
    return overlay?.available ? rollup(members(id), overlay) : null;
  };
  const toggleButton = el('button', { class: 'toggle-group' }, collapsed ? 'Open the group' : 'Collapse the group');
  toggleButton.addEventListener('click', () => toggle(gid));
  panel.replaceChildren(
    el('h2', {}, tree.labelOf(gid)),
    el('div', { class: 'layer-name', title: g.path }, g.path),
    table([
      ['layers', String(tree.membersOf(gid).length)],
      ...(g.repeat ? ([['repetition', `${g.repeat.index + 1} of ${g.repeat.count} (${g.repeat.pattern})`]] as [string, string][]) : []),
      ...(g.part
        ? ([
            [
              'part',
              g.run ? `repetitions of ${g.run}, drawn in parts that share one layout` : 'made to lay out a large container in pieces',
            ],
          ] as [string, string][])
        : []),
    ]),
    toggleButton,
  );
  const rows: [string, string][] = [];
  for (const o of ROLLUPS) {
    const overlay = overlays.get(o);
    const v = figure(gid, o);
    if (overlay && v !== null) {
      rows.push([`${overlay.label} (${o === 'error' ? 'largest' : 'sum'})`, formatValue(v, overlay)]);
    }
  }
  panel.append(section('Rollup', rows.length ? table(rows) : el('p', { class: 'hint' }, doc.costs_note)));
  if (!g.repeat) {
    return;
  }
  const family = [...tree.groups.values()]
    .filter((x) => x.parent === g.parent && x.repeat?.pattern === g.repeat!.pattern)
    .sort((a, b) => a.repeat!.index - b.repeat!.index);
  const shown = ROLLUPS.filter((o) => overlays.get(o)?.available && family.some((f) => figure(f.id, o) !== null));
  const barOf = shown.includes(overlayId as (typeof ROLLUPS)[number]) ? overlayId : shown[0];
  const numbers = family.map((f) => figure(f.id, barOf));
  const max = Math.max(0, ...numbers.map((v) => (typeof v === 'number' ? v : 0)));
  const body = family.map((f, i) => {
    const v = numbers[i];
    const bar = el('span', { class: 'bar' });
    bar.style.width = `${typeof v === 'number' && max > 0 ? Math.round((100 * v) / max) : v === 'inf' ? 100 : 0}%`;
    const link = el('a', { href: '#', 'data-group-link': f.id }, tree.labelOf(f.id));
    link.addEventListener('click', (ev) => {
      ev.preventDefault();
      go(f.id);
    });
    return el(
      'tr',
      { class: f.id === gid ? 'current' : '', 'data-repetition': String(f.repeat!.index) },
      el('td', {}, link),
      ...shown.map((o) => el('td', { class: 'n' }, formatValue(figure(f.id, o), overlays.get(o)!))),
      el('td', { class: 'barcell' }, bar),
    );
  });
  panel.append(
    section(
      `Compare repetitions (${family.length})`,
      el(
        'p',
        { class: 'hint' },
        `${g.repeat.pattern}: each repetition's layers summed (error: the largest); the bar is ${overlays.get(barOf)?.label ?? barOf}.`,
      ),
      el(
        'table',
        { class: 'grid compare-table' },
        el('thead', {}, el('tr', {}, el('th', {}, ''), ...shown.map((o) => el('th', {}, overlays.get(o)!.label)), el('th', {}, ''))),
        el('tbody', {}, ...body),
      ),
    ),
  );
}
