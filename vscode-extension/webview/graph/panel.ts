/**
 * The layer panel: what the bundle knows of one layer — operator, name, scope, source line,
 * attributes, tensors with shapes, its cost and error, its kernels (with how each was
 * scheduled), and its places (model entry, Relax binding, PrimFunc, kernels) with excerpts.
 */
import { cut, el } from './dom';
import type { GraphDocument, GraphNode, Host, Place } from './types';

const STAGE_LABELS: Record<string, string> = { model: 'Model', relax: 'Relax (last pass)', tir: 'TIR (last pass)', code: 'Generated code' };

function section(title: string, ...body: (Node | null | false)[]): HTMLElement {
  return el('section', {}, el('h3', {}, title), ...body);
}

function table(rows: [string, string][]): HTMLTableElement {
  return el('table', { class: 'kv' }, ...rows.map(([k, v]) => el('tr', {}, el('th', {}, k), el('td', {}, v))));
}

export function renderPanel(panel: HTMLElement, doc: GraphDocument, node: GraphNode | null, host: Host): void {
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
    list.map((t) => el('tr', {}, el('th', {}, label), el('td', { class: 'tensor', title: t.name }, cut(t.name, 60)), el('td', { class: 'type' }, `${t.type}${t.const ? ' const' : ''}`)));
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
