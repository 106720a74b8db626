/** The graph document (server/tvm_explorer/graphview/document.py; docs/graph.md). */

export interface Tensor {
  name: string;
  type: string;
  const: boolean;
  quantization?: string;
}

export interface Place {
  stage: 'model' | 'relax' | 'tir' | 'code' | string;
  path: string;
  function: string;
  line: number;
  character: number;
  end_line: number;
  end_character: number;
  count: number;
  excerpt: [number, string][];
}

export interface Metrics {
  time: number | null;
  share: number | null;
  code: number | null;
  workspace: number | null;
  /** Bytes of the layer's tensors held at the memory peak. */
  memory: number | null;
  flops: number | null;
  error: number | 'inf' | null;
  kernels: number | null;
  registers?: number | null;
  coverage: string | null;
  schedule: string | null;
  tuning?: string | null;
}

export interface Numerics {
  summary: string;
  observed: boolean;
  diverges: boolean;
  first: boolean;
  max_abs: number | null;
  max_rel: number | null;
  cosine: number | null;
  hint: string | null;
  reference: string;
}

export interface GraphNode {
  id: string;
  subgraph: number;
  op_index: number;
  opcode: string;
  name: string;
  module: string;
  module_class: string;
  source: string | null;
  group: string | null;
  attributes: Record<string, string>;
  inputs: Tensor[];
  outputs: Tensor[];
  kernels: string[];
  metrics: Metrics;
  cost: string | null;
  numerics: Numerics | null;
  places?: Place[];
  /** A node that only prepares a constant (a weight's DEQUANTIZE, shape plumbing) or checks one
   * (an assert): the node it is drawn folded into; absent or null for every other node. */
  fold?: string | null;
  /** In a `--tune` bundle: its kernels' tuning, a line each ("matmul1 tuned (reused): 5.33 µs,
   * default 0.10 µs (0.02×, measured side by side)"). */
  tuning?: string;
}

export interface IONode {
  id: string;
  kind: 'input' | 'output';
  name: string;
  type: string;
}

export interface Edge {
  source: string;
  target: string;
  tensor: string;
  type: string;
}

export interface Repeat {
  /** The repetitions' paths written as one: ``model.layers.{0..31}``. */
  pattern: string;
  /** This one's place among them (0-based) and how many there are. */
  index: number;
  count: number;
}

export interface Group {
  id: string;
  label: string;
  path: string;
  parent: string | null;
  size: number;
  /** A repeated module (a decoder layer, a transformer block): its family; absent or null otherwise. */
  repeat?: Repeat | null;
}

export interface Overlay {
  id: keyof Metrics;
  label: string;
  /** `budget`: a figure relative to each layer's own budget (1 = at it), in fixed bins. */
  scale: 'linear' | 'log' | 'category' | 'budget';
  unit: string;
  available: boolean;
  note: string | null;
}

/** One pass of the pipeline as the pass slider shows it (history/pipeline.py; docs/graph.md). */
export interface PipelinePass {
  index: number;
  name: string;
  stage: string;
  document: string;
  /** The layers whose code this pass changed. */
  touched: string[];
  /** The groups of layers one fused call computes; null: those of the pass before. */
  fused: string[][] | null;
  /** The layers this pass lowered to TIR. */
  lowered: string[];
}

export interface GraphDocument {
  format: string;
  version: number;
  model: { file: string; kind: string; unit: string; target: string; sha256: string; tool: Record<string, string>; created: string };
  nodes: GraphNode[];
  io: IONode[];
  edges: Edge[];
  groups: Group[];
  overlays: Overlay[];
  kernels: Record<string, { layers: string[]; summary: string; schedule: string }>;
  costs_note: string;
  /** Every layer's state at every pass (absent in documents of older servers). */
  pipeline?: { passes: PipelinePass[] };
}

/** What the report adds beside the graph (graphview/document.py `report_sections`). */
export interface ReportSections {
  /** The memory timeline (webview/memory/types.ts); absent or null without memory.json. */
  memory?: import('../memory/types').Timeline | { error: string } | null;
  hot_layers: {
    id: string;
    opcode: string;
    name: string;
    time_ms: number | null;
    share: number | null;
    code_lines: number;
    workspace: string;
    kernels: string[];
    summary: string;
  }[];
  passes: { index: number; stage: string; name: string; changed: boolean; ms: number | null; units: number; attributed: number }[];
  numerics: {
    reference: string;
    mode: string;
    inputs: string;
    first_divergence: string | null;
    /** "53/65 layers observed (102 more folded into constants …)"; where the budgets come from. */
    headline?: string;
    budgets?: string[];
    layers: { id: string | null; opcode: string; name: string; diverges: boolean; observed: boolean; summary: string }[];
  } | null;
  problems: string[];
}

/** Where the app runs: a VS Code webview (messages to the extension) or a static page. */
export interface Host {
  readonly kind: 'vscode' | 'static';
  /** A layer was clicked (VS Code: Layer Places, and its generated code). */
  openLayer(node: GraphNode): void;
  /** A place of the layer panel was clicked. */
  openPlace(node: GraphNode, place: Place): void;
  /** The overlay the user chose (remembered by the host). */
  overlayChanged(id: string): void;
  /** ELK's script as text (out/elk.js), to start the layout worker from (null: none). */
  elkScript: Promise<string | null>;
  /** The page's script nonce, where its Content-Security-Policy names scripts by nonce. */
  nonce?: string;
  /** Where layouts are kept across sessions, by the graph's identity (a report: the browser's
   * storage; VS Code: the extension's workspace state): reopening a graph draws it without ELK. */
  layouts?: {
    load(key: string): SavedLayouts | null;
    save(key: string, data: SavedLayouts): void;
  };
}

/** Kept layouts as JSON carries them (the layout cache across sessions, layout.ts): each container
 * structure's layout by its signature; positions by the place of the boxes. */
export interface SavedLayouts {
  version: number;
  shapes: {
    sig: string;
    pos: ({ x: number; y: number; w: number; h: number } | null)[];
    edges: [string, { x: number; y: number }[]][];
    width: number;
    height: number;
  }[];
}
