/**
 * The memory timeline picture, drawn by Chart.js: bytes held at every step of the model's
 * function as stacked bars (one bar a step, bars touching), one band per storage of the plan
 * (the largest ones; each names the layers whose tensors it holds), the kernels' scratch, and
 * "other" (the smaller storages summed); the peak marked by a line and said in the heading.
 * A click on a band picks what was there at that step (the tensor alive in that storage, or the
 * step's kernel) and asks the host to show its layer and allocation line; the same pick is
 * listed below the chart as buttons (keyboard and screen readers). Used by the VS Code webview
 * (main.ts) and the static report (graph/report.ts). Names from the model are data: they are
 * drawn on the canvas or put into text nodes, never into markup.
 */
import {
  BarController,
  BarElement,
  CategoryScale,
  Chart,
  type ChartDataset,
  type ChartEvent,
  type ActiveElement,
  Legend,
  LineController,
  LineElement,
  LinearScale,
  type Plugin,
  PointElement,
  Tooltip,
  type TooltipItem,
} from 'chart.js';
import { cut, el } from '../graph/dom';
import type { Pick, Timeline, TimelineBand, TimelineLayer, TimelineMeasured, TimelineTensor } from './types';

declare global {
  interface Window {
    /** The page's timeline (the tests click its bands where Chart.js drew them). */
    tvmxMemory?: MemoryTimeline;
  }
}

Chart.register(BarController, BarElement, CategoryScale, LinearScale, LineController, LineElement, PointElement, Tooltip, Legend);

// Chart.js's own categorical palette, then more: bands are told apart by color and label.
const PALETTE = [
  '#36a2eb',
  '#ff6384',
  '#ff9f40',
  '#4bc0c0',
  '#9966ff',
  '#ffcd56',
  '#2e7d32',
  '#c2185b',
  '#5c6bc0',
  '#8d6e63',
  '#00acc1',
  '#f06292',
  '#7cb342',
  '#ab47bc',
  '#26a69a',
  '#ef6c00',
];
const SCRATCH = '#b0b0b0';
const OTHER = '#6e7681';
const PEAK = '#e5534b';

type Kind = 'bar' | 'line';
type Values = (number | null)[];

/** `v` with `digits` decimals, an exact tie rounded to even as Python's format does (the
 * CLI, the hover and the report's tables say the same figure). */
function fixed(v: number, digits: number): string {
  const scale = 10 ** digits;
  const scaled = v * scale;
  const floor = Math.floor(scaled);
  const rest = scaled - floor;
  const whole = rest > 0.5 || (rest === 0.5 && floor % 2 === 1) ? floor + 1 : floor;
  return (whole / scale).toFixed(digits);
}

/** Bytes as the memory table writes them (server/tvm_explorer/memory/table.py `size`):
 * `576 B`, `12.5 KiB`, `3.06 MiB`, `1.20 GiB`. */
export function size(bytes: number | null): string {
  if (bytes === null || bytes === undefined) {
    return '?';
  }
  const n = Math.abs(bytes);
  if (n >= 2 ** 30) {
    return `${fixed(bytes / 2 ** 30, 2)} GiB`;
  }
  if (n >= 2 ** 20) {
    return `${fixed(bytes / 2 ** 20, 2)} MiB`;
  }
  if (n >= 1024) {
    return `${fixed(bytes / 1024, 1)} KiB`;
  }
  return `${bytes} B`;
}

/** One band of the picture and what it is made of. */
type Series =
  | { kind: 'storage'; band: TimelineBand; label: string }
  | { kind: 'scratch'; label: string }
  | { kind: 'other'; label: string }
  | { kind: 'replayed'; label: string; values: number[] }
  | { kind: 'measured'; label: string; measured: TimelineMeasured };

export interface TimelineHost {
  open(pick: Pick): void;
}

export class MemoryTimeline {
  private chart: Chart<Kind, Values, string> | null = null;
  private readonly layers = new Map<number, TimelineLayer>();
  private series: Series[] = [];
  private readonly details: HTMLElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly heading: HTMLElement;
  private readonly caption: HTMLElement;

  constructor(
    readonly mount: HTMLElement,
    private readonly host: TimelineHost,
  ) {
    this.heading = el('div', { class: 'tvmx-mem-heading' });
    this.canvas = el('canvas', { 'aria-label': 'Memory held at each step', role: 'img' });
    this.caption = el('p', { class: 'tvmx-mem-measured' });
    this.details = el('div', { class: 'tvmx-mem-details', 'aria-live': 'polite' });
    mount.replaceChildren(this.heading, this.caption, el('div', { class: 'tvmx-mem-chart' }, this.canvas), this.details);
  }

  layerText(id: number | null): string {
    const lay = id === null ? undefined : this.layers.get(id);
    return lay ? `${lay.opcode}${lay.name ? ` ${lay.name}` : ''}` : 'no layer';
  }

  private bandLabel(b: TimelineBand): string {
    // Each tensor's layer by the last part of its name (`…/conv2d_1` → conv2d_1), once.
    const names = [
      ...new Set(
        b.tensors.map((t) => {
          const lay = this.layers.get(t.layer ?? -1);
          const name = lay?.name || lay?.opcode || t.var;
          return name.split('/').pop() || name;
        }),
      ),
    ];
    const shown = names.slice(0, 2).map((n) => cut(n, 28));
    const more = names.length + b.more_tensors > 2 ? ` +${names.length + b.more_tensors - 2}` : '';
    return `#${b.storage} ${shown.join(', ')}${more} (${size(b.bytes)})`;
  }

  /** The tensor alive in a band's storage at a step (the first one before it starts). */
  tensorAt(band: TimelineBand, step: number): TimelineTensor | null {
    const alive = band.tensors.find((t) => t.first_step !== null && t.last_step !== null && t.first_step <= step && step <= t.last_step);
    return alive ?? null;
  }

  show(data: Timeline): void {
    this.layers.clear();
    for (const lay of data.layers) {
      this.layers.set(lay.id, lay);
    }
    this.data = data;
    const n = data.steps.length;
    const peak = data.peak;
    const peakStep = peak.step === null ? null : data.steps[peak.step];
    this.heading.replaceChildren(
      el('strong', {}, `Peak ${size(peak.bytes)}`),
      peak.step === null
        ? ' (no call)'
        : ` at step ${peak.step} (${peakStep?.callee ?? '?'}, ${this.layerText(peakStep?.layer ?? null)}): ${size(peak.live_bytes)} of tensors + ${size(peak.scratch_bytes)} of kernel scratch`,
      el(
        'span',
        { class: 'tvmx-mem-muted' },
        ` · function ${data.function} · ${n} steps · constants ${size(data.constants_bytes)} resident (not drawn)`,
      ),
    );
    // What a run held (compile --profile): a line over the static bands, or why there is none.
    const measured = data.measured;
    const drawn = measured?.status === 'measured' && measured.steps.some((v) => v !== null) ? measured : null;
    this.caption.textContent = measured?.caption ?? '';
    this.caption.setAttribute('data-measured', measured?.status ?? '');
    this.caption.classList.toggle('off', !drawn);
    this.caption.classList.toggle('not-within', drawn?.within === false);
    this.series = [
      ...data.bands.map((band): Series => ({ kind: 'storage', band, label: this.bandLabel(band) })),
      { kind: 'scratch', label: 'kernel scratch (workspace)' },
      // Every storage has a band of its own when there are few: no empty "other" in the legend.
      ...(data.other_storages > 0
        ? [
            {
              kind: 'other',
              label: `other: ${data.other_storages} smaller storage${data.other_storages === 1 ? '' : 's'}`,
            } satisfies Series,
          ]
        : []),
      // The static figure the run is checked against, where it is not the bands' top (TVM's
      // workspace pool keeps scratch pages from kernel to kernel).
      ...(drawn && drawn.replayed.some((v, k) => v !== data.steps[k]?.total)
        ? [
            {
              kind: 'replayed',
              values: drawn.replayed,
              label: "static, replayed: TVM's naive allocator + workspace pool on the plan",
            } satisfies Series,
          ]
        : []),
      ...(drawn
        ? [
            {
              kind: 'measured',
              measured: drawn,
              label: `measured on ${cut(drawn.where ?? 'this machine', 40)} after each kernel call, VM naive allocator (frees as the plan does)`,
            } satisfies Series,
          ]
        : []),
    ];
    // The axis in the unit of the peak (KiB, MiB…), so that its ticks are round numbers of it.
    const unit = [
      { name: 'GiB', scale: 2 ** 30 },
      { name: 'MiB', scale: 2 ** 20 },
      { name: 'KiB', scale: 1024 },
    ].find((u) => peak.bytes >= u.scale) ?? { name: 'B', scale: 1 };
    this.scale = unit.scale;
    const fg = getComputedStyle(this.mount).color || '#444';
    const datasets: ChartDataset<Kind, Values>[] = this.series.map((s, i): ChartDataset<Kind, Values> => {
      if (s.kind === 'replayed') {
        return {
          type: 'line',
          label: s.label,
          data: s.values.map((v) => v / unit.scale),
          borderColor: fg,
          backgroundColor: 'transparent',
          borderWidth: 1.5,
          borderDash: [5, 4],
          pointRadius: 0,
          stack: 'replayed',
          order: -1,
        };
      }
      if (s.kind === 'measured') {
        const peakAt = s.measured.peak_step;
        return {
          type: 'line',
          label: s.label,
          data: s.measured.steps.map((v) => (v === null ? null : v / unit.scale)),
          borderColor: fg,
          backgroundColor: fg,
          borderWidth: 2,
          spanGaps: true,
          stack: 'measured',
          order: -1,
          pointRadius: s.measured.steps.map((v, k) => (k === peakAt ? 6 : v === null ? 0 : 2.5)),
          pointStyle: s.measured.steps.map((_, k) => (k === peakAt ? 'rectRot' : 'circle')),
          pointBackgroundColor: s.measured.steps.map((_, k) => (k === peakAt ? PEAK : fg)),
        };
      }
      let values: number[];
      if (s.kind === 'storage') {
        values = data.steps.map((_, k) => (s.band.first_step <= k && k <= s.band.last_step ? s.band.bytes : 0));
      } else if (s.kind === 'scratch') {
        values = data.steps.map((st) => st.scratch);
      } else {
        values = data.steps.map((st) => st.other);
      }
      values = values.map((v) => v / unit.scale);
      const color = s.kind === 'storage' ? PALETTE[i % PALETTE.length] : s.kind === 'scratch' ? SCRATCH : OTHER;
      return {
        type: 'bar',
        label: s.label,
        data: values,
        backgroundColor: color,
        borderWidth: 0,
        stack: 'bytes',
        categoryPercentage: 1,
        barPercentage: 1,
      };
    });
    const grid = 'rgba(127,127,127,0.2)';
    this.chart?.destroy();
    this.chart = new Chart<Kind, Values, string>(this.canvas, {
      type: 'bar',
      data: { labels: data.steps.map((_, k) => String(k)), datasets },
      options: {
        animation: false,
        maintainAspectRatio: false,
        interaction: { mode: 'point', intersect: true },
        scales: {
          x: {
            stacked: true,
            title: { display: true, text: 'step (call of the function, in order)', color: fg },
            ticks: { color: fg, autoSkip: true, maxRotation: 0 },
            grid: { display: false },
          },
          y: {
            stacked: true,
            beginAtZero: true,
            title: { display: true, text: `${unit.name} held`, color: fg },
            ticks: { color: fg, callback: (v) => `${Number(v)} ${unit.name}` },
            grid: { color: grid },
          },
        },
        plugins: {
          legend: { position: 'bottom', labels: { color: fg, boxWidth: 12, font: { size: 11 } } },
          tooltip: {
            filter: (item) => typeof item.raw === 'number' && item.raw > 0,
            callbacks: {
              title: (items) => (items.length ? this.stepTitle(items[0].dataIndex) : ''),
              label: (item) => this.tooltipLine(item),
            },
          },
        },
        onClick: (_e: ChartEvent, elements: ActiveElement[]) => {
          const hit = elements[0];
          if (hit) {
            this.pick(hit.datasetIndex, hit.index);
          }
        },
        onHover: (e: ChartEvent, elements: ActiveElement[]) => {
          const target = e.native?.target as HTMLElement | undefined;
          if (target) {
            target.style.cursor = elements.length ? 'pointer' : 'default';
          }
        },
      },
      plugins: [
        peakLine(peak.step, `peak ${size(peak.bytes)}`, fg),
        ...(drawn
          ? [
              measuredPeak(
                this.series.length - 1,
                drawn.peak_step,
                `measured peak ${size(drawn.peak_step === null ? null : drawn.steps[drawn.peak_step])}`,
                fg,
                background(this.mount),
              ),
            ]
          : []),
      ],
    });
    this.listPeak();
  }

  private data: Timeline | null = null;
  /** Bytes per unit of the y axis. */
  private scale = 1;

  private stepTitle(k: number): string {
    const st = this.data?.steps[k];
    return st ? `step ${k}: ${st.callee} (${this.layerText(st.layer)}), ${size(st.total)} held` : `step ${k}`;
  }

  private tooltipLine(item: TooltipItem<Kind>): string {
    const s = this.series[item.datasetIndex];
    const bytes = size(Math.round((item.raw as number) * this.scale));
    if (s?.kind === 'measured') {
      return `measured after the call (VM naive allocator): ${bytes}`;
    }
    if (s?.kind === 'replayed') {
      return `static, replayed (TVM's allocators on the plan): ${bytes}`;
    }
    if (s?.kind !== 'storage') {
      return `${s?.label ?? ''}: ${bytes}`;
    }
    const t = this.tensorAt(s.band, item.dataIndex);
    return t
      ? `storage #${s.band.storage} ${bytes}: ${cut(t.text, 48)} of ${cut(this.layerText(t.layer), 60)}`
      : `storage #${s.band.storage} ${bytes}: held, no tensor in it yet`;
  }

  /** A band was clicked at a step (also callable by the tests and the list's buttons). */
  pick(datasetIndex: number, step: number): void {
    const s = this.series[datasetIndex];
    const data = this.data;
    if (!s || !data) {
      return;
    }
    if (s.kind === 'storage') {
      const t = this.tensorAt(s.band, step) ?? s.band.tensors[0] ?? null;
      const lid = t?.layer ?? s.band.layers[0] ?? null;
      this.describe(`Storage #${s.band.storage} (${size(s.band.bytes)}, ${s.band.kind}) at step ${step}`, s.band, step);
      this.host.open({ layer: lid === null ? null : (this.layers.get(lid) ?? null), alloc: t?.alloc ?? s.band.alloc });
    } else {
      const st = data.steps[step];
      const lid = st?.layer ?? null;
      const what =
        s.kind === 'measured'
          ? `Measured after step ${step} (VM naive allocator): ${size(s.measured.steps[step] ?? null)} in use, ${size(st?.total ?? null)} planned`
          : `${s.label} at step ${step}`;
      this.details.replaceChildren(el('p', {}, `${what}: ${st?.callee ?? ''} (${this.layerText(lid)})`));
      this.host.open({ layer: lid === null ? null : (this.layers.get(lid) ?? null), alloc: null });
    }
  }

  /** The storages held at the peak, largest first, as buttons that open their tensor's layer. */
  private listPeak(): void {
    const data = this.data;
    const peak = data?.peak.step;
    if (!data || peak === null || peak === undefined) {
      this.details.replaceChildren();
      return;
    }
    const rows = this.series
      .map((s, i) => ({ s, i }))
      .filter(({ s }) => s.kind === 'storage' && s.band.first_step <= peak && peak <= s.band.last_step);
    const list = el('ul', { class: 'tvmx-mem-list' });
    for (const { s, i } of rows) {
      if (s.kind !== 'storage') {
        continue;
      }
      const t = this.tensorAt(s.band, peak);
      const button = el(
        'button',
        { type: 'button', 'data-band': String(i), 'data-storage': String(s.band.storage) },
        `#${s.band.storage} ${size(s.band.bytes)}`,
      );
      button.addEventListener('click', () => this.pick(i, peak));
      list.append(el('li', {}, button, ` ${t ? `${t.text} — ${this.layerText(t.layer)}` : 'held, empty'}`));
    }
    this.details.replaceChildren(el('p', {}, `Held at the peak (step ${peak}), largest first:`), list);
  }

  private describe(title: string, band: TimelineBand, step: number): void {
    const list = el('ul', { class: 'tvmx-mem-list' });
    for (const t of band.tensors) {
      const now = t.first_step !== null && t.last_step !== null && t.first_step <= step && step <= t.last_step;
      const when = t.first_step === null ? 'at no call' : `steps ${t.first_step}–${t.last_step}`;
      const button = el('button', { type: 'button', class: now ? 'now' : '' }, `${t.text}`);
      button.addEventListener('click', () =>
        this.host.open({ layer: t.layer === null ? null : (this.layers.get(t.layer) ?? null), alloc: t.alloc ?? band.alloc }),
      );
      list.append(el('li', {}, button, ` ${size(t.bytes)}, ${when}: output of ${this.layerText(t.layer)}`));
    }
    const more = band.more_tensors ? el('p', { class: 'tvmx-mem-muted' }, `… ${band.more_tensors} more tensors`) : null;
    this.details.replaceChildren(el('p', {}, `${title} — the tensors it holds in turn:`), list, ...(more ? [more] : []));
  }

  /** Where a band's bar is drawn at a step, in canvas pixels (for the tests). */
  barAt(datasetIndex: number, step: number): { x: number; y: number } | null {
    const bar = this.chart?.getDatasetMeta(datasetIndex).data[step] as unknown as { x: number; y: number; base: number } | undefined;
    return bar ? { x: bar.x, y: (bar.y + bar.base) / 2 } : null;
  }

  /** The measured line as drawn: its legend label, its values in bytes and where its peak's
   * point is, in canvas pixels (for the tests); null when no line is drawn. */
  measuredLine(): { label: string; bytes: (number | null)[]; peak: { x: number; y: number } | null } | null {
    const index = this.series.findIndex((s) => s.kind === 'measured');
    const s = this.series[index];
    const dataset = this.chart?.data.datasets[index];
    if (!s || s.kind !== 'measured' || !dataset) {
      return null;
    }
    const step = s.measured.peak_step;
    const point =
      step === null ? undefined : (this.chart?.getDatasetMeta(index).data[step] as unknown as { x: number; y: number } | undefined);
    return {
      label: String(dataset.label),
      bytes: dataset.data.map((v) => (v === null ? null : Math.round(v * this.scale))),
      peak: point ? { x: point.x, y: point.y } : null,
    };
  }

  /** The index of the band of a storage (for the tests). */
  bandOf(storage: number): number {
    return this.series.findIndex((s) => s.kind === 'storage' && s.band.storage === storage);
  }
}

/** A dashed vertical line through the peak's bar, labeled (a Chart.js plugin: drawn on the
 * chart's own scale after the bars). */
function peakLine(step: number | null, label: string, color: string): Plugin<Kind, unknown> {
  return {
    id: 'tvmxPeak',
    afterDatasetsDraw(chart) {
      if (step === null) {
        return;
      }
      const x = chart.scales.x.getPixelForValue(step);
      const { top, bottom } = chart.chartArea;
      const ctx = chart.ctx;
      ctx.save();
      ctx.strokeStyle = PEAK;
      ctx.lineWidth = 2;
      ctx.setLineDash([6, 4]);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, bottom);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = color;
      ctx.font = 'bold 12px sans-serif';
      const width = ctx.measureText(label).width;
      const right = x + 6 + width <= chart.chartArea.right;
      ctx.textAlign = right ? 'left' : 'right';
      ctx.fillText(label, right ? x + 6 : x - 6, top + 12);
      ctx.restore();
    },
  };
}

/** The measured line's peak labeled beside its point (drawn after the datasets, above the
 * bands; placed left of the point when it would leave the chart). */
function measuredPeak(datasetIndex: number, step: number | null, label: string, color: string, halo: string): Plugin<Kind, unknown> {
  return {
    id: 'tvmxMeasuredPeak',
    afterDatasetsDraw(chart) {
      const point =
        step === null ? undefined : (chart.getDatasetMeta(datasetIndex).data[step] as unknown as { x: number; y: number } | undefined);
      if (!point) {
        return;
      }
      const ctx = chart.ctx;
      ctx.save();
      ctx.font = 'bold 12px sans-serif';
      const width = ctx.measureText(label).width;
      const right = point.x + 10 + width <= chart.chartArea.right;
      const y = Math.max(chart.chartArea.top + 28, point.y - 8);
      ctx.textAlign = right ? 'left' : 'right';
      ctx.lineWidth = 3;
      ctx.strokeStyle = halo;
      ctx.strokeText(label, right ? point.x + 10 : point.x - 10, y);
      ctx.fillStyle = color;
      ctx.fillText(label, right ? point.x + 10 : point.x - 10, y);
      ctx.restore();
    },
  };
}

/** The page's background (the halo behind a label drawn over the bands): the first opaque one
 * from the element up, white when none is set. */
function background(node: HTMLElement | null): string {
  for (let n = node; n; n = n.parentElement) {
    const bg = getComputedStyle(n).backgroundColor;
    if (bg && bg !== 'transparent' && !/rgba\(.*,\s*0\)$/.test(bg)) {
      return bg;
    }
  }
  return '#fff';
}
