/**
 * The pass slider: scrubs the graph through the compiler's pipeline with the layout kept still.
 * At each pass it shows which layers that pass touched (outlined), which layers are fused
 * together (one dashed frame around each group's boxes) and which have been lowered to TIR
 * (marked), from the graph document's `pipeline` (server: history/pipeline.py; docs/graph.md,
 * "Pass slider"). Moving it only toggles classes and redraws the frames: nothing is laid out.
 */
import { el, svg } from './dom';
import type { Box } from './layout';
import type { PipelinePass } from './types';

/** What the graph shows at one pass (node ids of layers). */
export interface PassState {
  index: number;
  pass: PipelinePass;
  touched: Set<string>;
  fused: string[][];
  lowered: Set<string>;
}

/** The state after pass `at` (0-based position in `passes`): `fused` carries over from the
 * last pass that set it, `lowered` accumulates. */
export function stateAt(passes: PipelinePass[], at: number): PassState {
  const lowered = new Set<string>();
  let fused: string[][] = [];
  for (let i = 0; i <= at; i++) {
    passes[i].lowered.forEach((id) => lowered.add(id));
    if (passes[i].fused !== null) {
      fused = passes[i].fused!;
    }
  }
  return { index: at, pass: passes[at], touched: new Set(passes[at].touched), fused, lowered };
}

/** The slider's control in the toolbar and the frames layer in the SVG. */
export class PassSlider {
  readonly control: HTMLElement;
  readonly frames: SVGGElement = svg('g', { class: 'fusion-frames' });
  private readonly input: HTMLInputElement;
  private readonly caption: HTMLElement;
  private passes: PipelinePass[] = [];
  private at: number | null = null;

  constructor(private readonly onChange: (state: PassState | null) => void) {
    this.input = el('input', { type: 'range', class: 'pass-slider', min: '0', max: '0', value: '0', step: '1', 'aria-label': 'Pass' });
    this.caption = el('span', { class: 'pass-caption', role: 'status' });
    const key = el('span', { class: 'pass-key' }, 'outlined: touched · dashed: not lowered yet · frame: fused together');
    const off = el('button', { class: 'pass-off', title: 'Back to the compiled graph (no pass marked)' }, '×');
    this.control = el(
      'label',
      { class: 'passes', title: 'Scrub the pipeline: what each pass touched, fused and lowered' },
      'Pass ',
      this.input,
      this.caption,
      key,
      off,
    );
    this.input.addEventListener('input', () => this.set(Number(this.input.value)));
    off.addEventListener('click', (ev) => {
      ev.preventDefault();
      this.set(null);
    });
  }

  /** A new graph document's pipeline (none: the control is hidden). */
  load(passes: PipelinePass[] | undefined): void {
    this.passes = passes ?? [];
    this.control.hidden = this.passes.length === 0;
    this.input.max = String(Math.max(0, this.passes.length - 1));
    if (this.at !== null && this.at >= this.passes.length) {
      this.at = null;
    }
    this.set(this.at);
  }

  /** Moves the slider to pass `at` (a position in the pipeline), or off (null). */
  set(at: number | null): PassState | null {
    this.at = at === null || this.passes.length === 0 ? null : Math.max(0, Math.min(at, this.passes.length - 1));
    this.input.value = String(this.at ?? this.passes.length - 1);
    this.control.classList.toggle('active', this.at !== null);
    const state = this.at === null ? null : stateAt(this.passes, this.at);
    this.caption.textContent = state ? describe(state, this.passes.length) : `${this.passes.length} passes`;
    this.onChange(state);
    return state;
  }

  state(): PassState | null {
    return this.at === null ? null : stateAt(this.passes, this.at);
  }

  /** Redraws the fusion frames around the boxes each group is drawn as (`boxOf` a layer). */
  drawFrames(state: PassState | null, boxOf: (id: string) => Box | undefined): void {
    const frames: SVGElement[] = [];
    for (const group of state?.fused ?? []) {
      const boxes = [...new Set(group.map(boxOf).filter((b): b is Box => !!b))];
      if (boxes.length < 2) {
        continue; // drawn as one box (a collapsed group): nothing to frame together
      }
      const pad = 7;
      const x0 = Math.min(...boxes.map((b) => b.x)) - pad;
      const y0 = Math.min(...boxes.map((b) => b.y)) - pad;
      const x1 = Math.max(...boxes.map((b) => b.x + b.width)) + pad;
      const y1 = Math.max(...boxes.map((b) => b.y + b.height)) + pad;
      frames.push(svg('rect', { class: 'fusion', x: x0, y: y0, width: x1 - x0, height: y1 - y0, rx: 10, 'data-fused': group.join(' ') }));
    }
    this.frames.replaceChildren(...frames);
  }
}

function describe(s: PassState, of: number): string {
  const groups = s.fused.length;
  return (
    `${s.index + 1}/${of} ${s.pass.name} (${s.pass.stage}): ${s.touched.size} touched` +
    ` · ${groups} fused group${groups === 1 ? '' : 's'} · ${s.lowered.size} lowered`
  );
}
