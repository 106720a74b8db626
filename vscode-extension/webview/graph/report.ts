/**
 * The report's sections below the graph: the memory timeline (when the bundle has memory.json),
 * hot layers, numerics, and per pass its compile time and provenance coverage. Rows naming a
 * layer, and bands of the memory timeline, select it in the graph.
 */
import { MemoryTimeline } from '../memory/chart';
import type { Timeline } from '../memory/types';
import type { GraphApp } from './app';
import { cut, el } from './dom';
import type { GraphDocument, ReportSections } from './types';

function goTo(app: GraphApp, id: string): void {
  app.select(id);
  void app.highlight([id]);
  app.root.scrollIntoView({ block: 'start' });
}

function layerLink(app: GraphApp, id: string | null, text: string): HTMLElement {
  if (id === null) {
    return el('span', {}, text);
  }
  const a = el('a', { href: '#', 'data-goto': id }, text);
  a.addEventListener('click', (ev) => {
    ev.preventDefault();
    goTo(app, id);
  });
  return a;
}

/** The memory timeline section: the picture (drawn once the section is in the page), a click
 * on a band selecting its layer in the graph and saying its allocation line in Relax. */
function memorySection(app: GraphApp, data: Timeline | { error: string }): { section: HTMLElement; draw: () => void } {
  const heading = el('h2', {}, 'Memory timeline');
  if ('error' in data) {
    return { section: el('section', { id: 'memory' }, heading, el('p', { class: 'tvmx-mem-error' }, data.error)), draw: () => undefined };
  }
  const mount = el('div', { class: 'tvmx-memory in-report' });
  const where = el(
    'p',
    { class: 'hint', 'data-alloc': '' },
    'Click a band: its layer is selected in the graph, its allocation line in Relax is named here.',
  );
  const hint = el(
    'p',
    { class: 'hint' },
    `Bytes held at each call of ${data.function} (as planned by StaticPlanBlockMemory; docs/memory.md), stacked by storage: ${data.other_storages > 0 ? `the ${data.bands.length} largest` : `all ${data.bands.length}`}, each named by the layers whose tensors it holds, the kernels' scratch${data.other_storages > 0 ? ', and the rest summed as other' : ''}.`,
  );
  const view = new MemoryTimeline(mount, {
    open: (pick) => {
      const line = pick.alloc?.path !== undefined && pick.alloc.line !== undefined ? `${pick.alloc.path}:${pick.alloc.line + 1}` : '';
      where.textContent = line ? `Allocated at ${line}` : 'No allocation line in Relax.';
      where.setAttribute('data-alloc', line);
      if (pick.layer) {
        goTo(app, String(pick.layer.id));
      }
    },
  });
  window.tvmxMemory = view;
  return { section: el('section', { id: 'memory' }, heading, hint, mount, where), draw: () => view.show(data) };
}

/** A section of the report: its heading, then `children`. */
function reportSection(id: string, title: string, ...children: (HTMLElement | string | null)[]): HTMLElement {
  return el('section', { id }, el('h2', {}, title), ...children);
}

/** A table of the report: a row of `headers`, then `rows`. */
function gridTable(headers: string[], rows: HTMLElement[]): HTMLElement {
  return el('table', { class: 'grid' }, el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', {}, h)))), el('tbody', {}, ...rows));
}

function num(v: number | null, digits = 3): string {
  return v === null ? '—' : v.toFixed(digits);
}

export function renderReport(container: HTMLElement, app: GraphApp, doc: GraphDocument, sections: ReportSections): void {
  const unit = doc.model.unit;
  const parts: HTMLElement[] = [];
  if (sections.problems.length) {
    parts.push(
      el('section', { class: 'problems' }, el('h2', {}, 'Problems'), el('ul', {}, ...sections.problems.map((p) => el('li', {}, p)))),
    );
  }
  const memory = sections.memory ? memorySection(app, sections.memory) : null;
  if (memory) {
    parts.push(memory.section);
  }
  const hot = sections.hot_layers;
  parts.push(
    reportSection(
      'hot-layers',
      'Hot layers',
      el('p', { class: 'hint' }, doc.costs_note),
      hot.length
        ? gridTable(
            ['#', 'layer', 'name', 'time ms', 'share', 'code lines', 'workspace', 'kernels'],
            hot.map((r, i) =>
              el(
                'tr',
                { 'data-layer-row': r.id },
                el('td', {}, String(i + 1)),
                el('td', {}, layerLink(app, r.id, `${r.opcode} ${unit} ${r.id}`)),
                el('td', { title: r.name }, cut(r.name, 60)),
                el('td', { class: 'n' }, num(r.time_ms)),
                el('td', { class: 'n' }, r.share === null ? '—' : `${(100 * r.share).toFixed(0)} %`),
                el('td', { class: 'n' }, String(r.code_lines)),
                el('td', { class: 'n' }, r.workspace),
                el('td', {}, cut(r.kernels.join(', '), 60)),
              ),
            ),
          )
        : el('p', {}, 'No costs recorded.'),
    ),
  );
  const n = sections.numerics;
  parts.push(
    reportSection(
      'numerics',
      'Numerics',
      n
        ? el(
            'div',
            {},
            el(
              'p',
              {},
              `Against ${n.reference} (${n.mode} build; inputs: ${n.inputs}). `,
              n.first_divergence !== null
                ? el('span', { class: 'diverges' }, 'First divergence: ', layerLink(app, n.first_divergence, `layer ${n.first_divergence}`))
                : 'No layer diverges.',
            ),
            n.headline ? el('p', {}, n.headline) : null,
            ...(n.budgets ?? []).map((line) => el('p', { class: 'hint' }, line)),
            gridTable(
              ['layer', 'name', 'error'],
              n.layers.map((r) =>
                el(
                  'tr',
                  { class: r.diverges ? 'diverges' : r.observed ? '' : 'unobserved' },
                  el('td', {}, layerLink(app, r.id, `${r.opcode} ${r.id ?? ''}`)),
                  el('td', { title: r.name }, cut(r.name, 60)),
                  el('td', {}, r.summary),
                ),
              ),
            ),
          )
        : el('p', {}, 'This bundle has no numerics (compile with --numerics, targets c and llvm).'),
    ),
  );
  const passes = sections.passes;
  const changed = passes.filter((p) => p.changed);
  const totalMs = passes.reduce((s, p) => s + (p.ms ?? 0), 0);
  parts.push(
    reportSection(
      'passes',
      'Passes',
      el(
        'p',
        { class: 'hint' },
        `${passes.length} passes, ${changed.length} changed the module; compile time of the passes ${totalMs.toFixed(0)} ms. Coverage: the share of a pass's units (bindings, statements) that know their layer.`,
      ),
      gridTable(
        ['#', 'stage', 'pass', 'ms', 'units', 'with origin', 'coverage'],
        changed.map((p) =>
          el(
            'tr',
            {},
            el('td', { class: 'n' }, String(p.index)),
            el('td', {}, p.stage),
            el('td', {}, p.name),
            el('td', { class: 'n' }, num(p.ms, 1)),
            el('td', { class: 'n' }, String(p.units)),
            el('td', { class: 'n' }, String(p.attributed)),
            el('td', { class: 'n' }, p.units ? `${((100 * p.attributed) / p.units).toFixed(1)} %` : '—'),
          ),
        ),
      ),
    ),
  );
  container.append(...parts);
  memory?.draw();
}
