/**
 * Overlays: a per-layer figure turned into a node color, and the legend that says what each
 * color means. Numbers use a sequential heat scale (linear, or log for figures spanning
 * decades); categories (coverage, schedule kind) a fixed palette.
 */
import type { GraphNode, Overlay } from './types';

/** Pale yellow → orange → dark red (a colorblind-safe sequential scale, YlOrRd). */
const HEAT = ['#ffffcc', '#ffeda0', '#fed976', '#feb24c', '#fd8d3c', '#fc4e2a', '#e31a1c', '#b10026'];
const CATEGORY_COLORS: Record<string, string> = {
  'to code': '#4daf4a',
  'to TIR': '#ffd92f',
  'to Relax': '#ff7f00',
  'model only': '#e41a1c',
  default: '#8da0cb',
  mixed: '#e78ac3',
  tuned: '#1b9e77',
  'tuned, slower than default': '#d95f02',
  'MetaSchedule (tuned)': '#1b9e77',
  untuned: '#8da0cb',
  'database miss': '#e41a1c',
  'build failed': '#7f0000',
  'run failed': '#984ea3',
};
const EXTRA = ['#66c2a5', '#fc8d62', '#a6d854', '#e5c494', '#b3b3b3', '#8dd3c7', '#bebada', '#80b1d3'];

export interface Coloring {
  /** Fill per node id (nodes without a value are absent). */
  fill: Map<string, string>;
  legend: LegendEntry[];
  /** One line under the legend: the scale, or why the overlay has no data. */
  caption: string;
}
export interface LegendEntry {
  color: string;
  label: string;
}

/** Error ÷ the layer's budget: within it pale, beyond it red (the layer diverges). */
const BUDGET_BINS: [number, string, string][] = [
  [0.25, '#ffffcc', '≤ ¼ of its budget'],
  [0.5, '#ffeda0', '≤ ½ of its budget'],
  [1, '#fed976', 'within its budget'],
  [2, '#fc4e2a', 'up to 2× its budget (diverges)'],
  [4, '#e31a1c', 'up to 4× its budget (diverges)'],
  [Infinity, '#b10026', 'beyond 4× its budget (diverges)'],
];

function budgetColors(values: Map<string, number | string | null>): Coloring {
  const fill = new Map<string, string>();
  for (const [id, v] of values) {
    const ratio = v === 'inf' ? Infinity : typeof v === 'number' ? v : null;
    if (ratio === null || Number.isNaN(ratio)) {
      continue;
    }
    const bin = BUDGET_BINS.findIndex(([upTo]) => ratio <= upTo);
    fill.set(id, BUDGET_BINS[bin][1]);
  }
  if (!fill.size) {
    return { fill, legend: [], caption: 'No layer has a value.' };
  }
  return {
    fill,
    legend: BUDGET_BINS.map(([, color, label]) => ({ color, label })),
    caption:
      "Error relative to each layer's own budget (set by the reference's own spread where measured): " +
      'red layers exceed theirs; grey: not observed or not judged.',
  };
}

export function value(node: GraphNode, overlay: Overlay): number | string | null {
  const v = node.metrics[overlay.id];
  return v === undefined ? null : v;
}

/** Figures a group shows the largest of (an error, registers per thread), not the sum. */
const MAXED = new Set(['error', 'registers']);

/** A group's figure from its layers': the sum of time, code, workspace, FLOPs and kernels, the
 * largest error (an infinite one wins) and registers, and a category when all agree (else
 * ``mixed``). */
export function rollup(nodes: GraphNode[], overlay: Overlay): number | string | null {
  if (overlay.scale === 'category') {
    const seen = new Set(
      nodes
        .map((n) => value(n, overlay))
        .filter((v) => v !== null)
        .map(String),
    );
    return seen.size === 0 ? null : seen.size === 1 ? [...seen][0] : 'mixed';
  }
  let out: number | null = null;
  let infinite = false;
  for (const n of nodes) {
    const v = value(n, overlay);
    if (v === 'inf') {
      infinite = true;
    } else if (typeof v === 'number' && Number.isFinite(v)) {
      out = out === null ? v : MAXED.has(overlay.id) ? Math.max(out, v) : out + v;
    }
  }
  return infinite ? 'inf' : out;
}

export function format(v: number, unit: string): string {
  if (unit === 'bytes') {
    return v >= 2 ** 20 ? `${(v / 2 ** 20).toFixed(1)} MiB` : v >= 1024 ? `${(v / 1024).toFixed(0)} KiB` : `${v.toFixed(0)} B`;
  }
  if (unit === 'FLOP') {
    for (const [u, s] of [
      ['G', 1e9],
      ['M', 1e6],
      ['k', 1e3],
    ] as const) {
      if (v >= s) {
        return `${(v / s).toPrecision(3)} ${u}FLOP`;
      }
    }
    return `${v.toFixed(0)} FLOP`;
  }
  if (unit === 'ms') {
    return `${v < 0.01 ? v.toPrecision(2) : v.toFixed(2)} ms`;
  }
  if (unit === 'max rel') {
    return v === 0 ? '0' : v.toExponential(1);
  }
  return `${Math.round(v)} ${unit}`;
}

/** A figure as the legend writes it (``inf`` and categories as they are). */
export function formatValue(v: number | string | null, overlay: Overlay): string {
  return v === null ? '' : typeof v === 'number' ? format(v, overlay.unit) : v === 'inf' ? 'inf' : v;
}

/** The colors of every box shown (a node, or a collapsed group with its rollup) for an overlay,
 * and its legend: the scale spans the figures shown. */
export function colorBy(values: Map<string, number | string | null>, overlay: Overlay | undefined): Coloring {
  const fill = new Map<string, string>();
  if (!overlay) {
    return { fill, legend: [], caption: 'No overlay: nodes show their operator only.' };
  }
  if (!overlay.available) {
    return { fill, legend: [], caption: overlay.note ?? 'No data for this overlay.' };
  }
  if (overlay.scale === 'budget') {
    return budgetColors(values);
  }
  if (overlay.scale === 'category') {
    const seen = new Map<string, string>();
    let extra = 0;
    for (const [id, v] of values) {
      if (v === null) {
        continue;
      }
      const key = String(v);
      if (!seen.has(key)) {
        seen.set(key, CATEGORY_COLORS[key] ?? EXTRA[extra++ % EXTRA.length]);
      }
      fill.set(id, seen.get(key)!);
    }
    const legend = [...seen.entries()].map(([label, color]) => ({ color, label }));
    return { fill, legend, caption: legend.length ? `${overlay.label} per layer` : 'No layer has a value.' };
  }
  const numbers: number[] = [];
  for (const v of values.values()) {
    if (typeof v === 'number' && Number.isFinite(v)) {
      numbers.push(v);
    }
  }
  const log = overlay.scale === 'log';
  const positive = numbers.filter((v) => v > 0);
  const max = numbers.reduce((m, v) => Math.max(m, v), 0);
  const min = log ? (positive.length ? positive.reduce((m, v) => Math.min(m, v), Infinity) : 1) : 0;
  const t = (v: number): number => {
    if (max <= 0) {
      return 0;
    }
    if (!log) {
      return v / max;
    }
    if (v <= 0) {
      return 0;
    }
    const lo = Math.log10(min);
    const hi = Math.log10(max);
    return hi > lo ? (Math.log10(v) - lo) / (hi - lo) : 1;
  };
  for (const [id, v] of values) {
    if (v === 'inf') {
      fill.set(id, HEAT[HEAT.length - 1]);
    } else if (typeof v === 'number' && Number.isFinite(v)) {
      fill.set(id, HEAT[Math.min(HEAT.length - 1, Math.floor(t(v) * HEAT.length))]);
    }
  }
  const legend: LegendEntry[] = [];
  for (let i = 0; i < HEAT.length; i++) {
    const at = (i + 0.5) / HEAT.length;
    const v = log ? 10 ** (Math.log10(min) + at * (Math.log10(max) - Math.log10(min))) : at * max;
    legend.push({ color: HEAT[i], label: i === 0 && log ? `≤ ${format(min, overlay.unit)}` : `~${format(v, overlay.unit)}` });
  }
  if (numbers.length === 0) {
    return { fill, legend: [], caption: 'No layer has a value.' };
  }
  const scale = log ? 'log scale' : 'linear scale';
  return {
    fill,
    legend,
    caption: `${overlay.label}: 0 – ${format(max, overlay.unit)} (${scale}; a collapsed group: ${overlay.id === 'error' ? 'largest' : 'sum'} of its layers; grey: none)`,
  };
}

/** Black or white text, whichever reads on ``color``. */
export function textOn(color: string): string {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(color);
  if (!m) {
    return '#000';
  }
  const [r, g, b] = [m[1], m[2], m[3]].map((h) => parseInt(h, 16) / 255);
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.5 ? '#111' : '#fff';
}
