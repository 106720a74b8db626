/**
 * The `tvmExplorer/` custom LSP requests and notifications, typed, in one place
 * (the contract is docs/lsp-protocol.md; rust-analyzer keeps its extensions the same way).
 *
 * Every URI here is a `file://` URI string of a bundle file, as sent on the wire.
 */
import * as lc from 'vscode-languageclient/node';
import type { GraphDocument } from '../webview/graph/types';
import type { Timeline } from '../webview/memory/types';

/** One loaded bundle, as listed by the server. */
export interface BundleInfo {
  uri: string;
  root: string;
  model: string;
  target: string;
  passes: number;
  documents: number;
  /** Damaged documents of the bundle (their features are off), as sentences. */
  problems?: string[];
}
export interface ListBundlesResult {
  bundles: BundleInfo[];
}
export const listBundles = new lc.RequestType<Record<string, never>, ListBundlesResult, void>('tvmExplorer/listBundles');

/** A compiler stage that writes documents. */
export type Stage = 'relax' | 'tir' | 'code';

/** One pass of the recorded pipeline; `before` is null for the first document. */
export interface PassInfo {
  index: number;
  stage: Stage;
  name: string;
  changed: boolean;
  before: string | null;
  after: string;
  /** Compile time of the pass (ms), when the bundle recorded costs. */
  ms?: number | null;
  changed_functions?: number | null;
  /** The pass `tvm-explorer bisect` found to change the results (bisected bundles only). */
  culprit?: boolean;
}
export interface ListPassesParams {
  bundle: string;
}
export interface ListPassesResult {
  passes: PassInfo[];
}
export const listPasses = new lc.RequestType<ListPassesParams, ListPassesResult, void>('tvmExplorer/listPasses');

/** One TFLite layer that the text at a position came from. */
export interface Origin {
  subgraph: number;
  op_index: number;
  opcode: string;
  outputs: string[];
  is_output: boolean;
  location: lc.Location;
}
export interface OriginsResult {
  origins: Origin[];
}
export const origins = new lc.RequestType<lc.TextDocumentPositionParams, OriginsResult, void>('tvmExplorer/origins');

/** The same computation one stage back (like textDocument/declaration). */
export const previousStage = new lc.RequestType<lc.TextDocumentPositionParams, lc.Location[] | null, void>('tvmExplorer/previousStage');

/** Server → client: bundles were (re)loaded or removed. */
export interface BundlesChangedParams {
  bundles: string[];
}
export const bundlesChanged = new lc.NotificationType<BundlesChangedParams>('tvmExplorer/bundlesChanged');

/** The model document of a `.tflite` file (an error names the file when it is not one). */
export interface ModelDocumentParams {
  uri: string;
}
export interface ModelDocumentResult {
  text: string;
}
export const modelDocument = new lc.RequestType<ModelDocumentParams, ModelDocumentResult, void>('tvmExplorer/modelDocument');

/** A kind of model file the compiler reads (the server's frontends): its manifest name, file
 * suffix, what its layers are called, and whether Reduce Model can cut it. */
export interface ModelKindInfo {
  kind: string;
  suffix: string;
  unit: string;
  reducible: boolean;
}
export interface ModelKindsResult {
  kinds: ModelKindInfo[];
}
export const modelKinds = new lc.RequestType<Record<string, never>, ModelKindsResult, void>('tvmExplorer/modelKinds');

/** The same computation in the nearest earlier / later pass document where it changed. */
export const previousPassAt = new lc.RequestType<lc.TextDocumentPositionParams, lc.Location[] | null, void>('tvmExplorer/previousPass');
export const nextPassAt = new lc.RequestType<lc.TextDocumentPositionParams, lc.Location[] | null, void>('tvmExplorer/nextPass');

/** The steps through the pipeline from a position (the `goTo…` commands), by name. */
export type Jump = 'previousStage' | 'previousPass' | 'nextPass';
export const jumps: Readonly<Record<Jump, lc.RequestType<lc.TextDocumentPositionParams, lc.Location[] | null, void>>> = {
  previousStage,
  previousPass: previousPassAt,
  nextPass: nextPassAt,
};

/** A layer of the model, as named in layerPlaces and compareBundles. */
export interface LayerRef {
  subgraph: number;
  op_index: number;
  opcode: string;
  name: string;
}
/** One place of a layer's code, in pipeline order. */
export interface LayerPlace {
  stage: 'model' | 'relax' | 'tir' | 'code';
  pass: { index: number; name: string } | null;
  uri: string;
  range: lc.Range;
  last_of_stage: boolean;
  changed: boolean;
  /** 'compute': computes the layer; 'bookkeeping': a Relax binding around it (allocation,
   * shape checks, kills); 'embedded': TIR printed inside a Relax module. */
  role?: 'compute' | 'bookkeeping' | 'embedded';
  /** The function, PrimFunc or kernel holding the place (places are grouped by it). */
  function?: string;
  /** Set when that function computes none of the layers' outputs: what it holds of them
   * ("op 2 CONV_2D: input dequantize only — in the kernel of op 1 MAX_POOL_2D"). */
  note?: string;
}
export interface LayerPlacesResult {
  layers: LayerRef[];
  places: LayerPlace[];
  /** The code lens's text for these layers ("1 function in generated code · 2 in IR"). */
  summary?: string;
  /** The layers, the same layer of repeated blocks once ("aten.mm.default ops 61, 164 m.model.layers.{0..1}.self_attn.q_proj"). */
  labels?: string[];
}
/** Every place of the layer(s) at a position, through every pass. */
export const layerPlaces = new lc.RequestType<lc.TextDocumentPositionParams, LayerPlacesResult | null, void>('tvmExplorer/layerPlaces');

/** One layer of a bundle's numerics (`compile --numerics`), in graph order. */
export interface NumericsLayer {
  subgraph: number;
  op_index: number;
  opcode: string;
  name: string;
  observed: boolean;
  observed_by: 'fused' | 'unfused' | null;
  diverges: boolean;
  /** The first divergent layer in graph order. */
  first: boolean;
  /** "max abs 0.5 (rel 0.3), cosine 0.97 — DIVERGES" or "not observed (...)". */
  summary: string;
  max_abs: number | null;
  max_rel: number | null;
  cosine: number | null;
  steps: number | null;
  /** The layer's entry in the model document. */
  location: lc.Location | null;
  /** For a layer not observed: the fused kernel that hid it and what to do. */
  hint?: string | null;
  /** The steps allowed (null: steps not judged, or not a quantized output). */
  step_budget?: number | null;
  /** How far the reference's own engines are apart on this output: steps, lowest cosine. */
  spread_steps?: number | null;
  spread_cosine?: number | null;
  /** False: the reference's own engines are too far apart here to judge the layer. */
  judged?: boolean;
}
export interface NumericsResult {
  /** Empty when the bundle has no numerics. */
  reference: string;
  mode: string;
  inputs: string;
  first_divergence: { subgraph: number; op_index: number } | null;
  layers: NumericsLayer[];
  /** Why the bundle's numerics.json was left out (it is damaged); empty otherwise. */
  problem?: string;
  /** "53/65 layers observed (102 more folded into constants at compile time, …)". */
  headline?: string;
  /** Where the budgets come from (the reference's own spread), and the layers not judged. */
  budgets?: string[];
}
export const numerics = new lc.RequestType<ListPassesParams, NumericsResult, void>('tvmExplorer/numerics');

/** One layer's costs (`tvmExplorer/costs`), most expensive first. */
export interface LayerCost {
  rank: number;
  id: number;
  subgraph: number;
  op_index: number;
  opcode: string;
  name: string;
  time_ms: number | null;
  share: number | null;
  code_lines: number;
  workspace_bytes: number;
  kernels: string[];
  shared_kernels: string[];
  /** "1.23 ms · 14 % · 312 C lines · 48 KiB" */
  summary: string;
  location: lc.Location | null;
  /** Grouped by module: the layers summed. */
  layer_ids?: number[];
  /** Grouped by module: the modules summed (one per repeated decoder layer). */
  members?: string[];
  /** A PyTorch / nn layer: its module path as the row names it ("layers.0.mlp.down_proj"),
   * the scope most paths share left out (the result's note names it). */
  label?: string;
  /** ... and its graph node ("mm_6"), said after the figures. */
  node?: string;
}
export interface CostsResult {
  measured: boolean;
  total_ms: number | null;
  status: string;
  reason: string | null;
  layers: LayerCost[];
  lines: string;
  note: string;
  /** How `layers` is grouped: `layer`, or `module[:DEPTH]` (one row per module). */
  group?: string;
  /** The module scope the layers' `label`s leave out ("m.model."). */
  scope?: string;
}
export interface CostsParams {
  bundle: string;
  /** `layer` (default), or `module[:DEPTH]`: rolled up the module tree, repeated modules merged. */
  group?: string;
}
export const costs = new lc.RequestType<CostsParams, CostsResult, void>('tvmExplorer/costs');

/** A kernel's range in a TIR or generated-code document and its heat (0..1). */
export interface HeatMark {
  range: lc.Range;
  kernel: string;
  heat: number;
  label: string;
}
export interface KernelHeatParams {
  uri: string;
}
export interface KernelHeatResult {
  marks: HeatMark[];
}
export const kernelHeat = new lc.RequestType<KernelHeatParams, KernelHeatResult, void>('tvmExplorer/kernelHeat');

/**
 * A request that was valid but cannot be answered (two bundles that share no layer, a bundle
 * without a memory timeline) fails with this LSP error code (`RequestFailed`); its message says
 * why, for the user. `sendRequest` rejects with an `lc.ResponseError`.
 */
export const REQUEST_FAILED = -32803;

/** The message of a failed request, for the user: the server's own sentence when it answered
 * with an error, else what went wrong on the way. */
export function failureMessage(err: unknown): string {
  if (err instanceof lc.ResponseError) {
    return err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

/** Where a generated-code document opens: its hottest kernel when the bundle was profiled,
 * else its first; in C the kernel's first loop (its argument checks skipped). Null: the
 * bundle has no costs, or none of their kernels is defined in the document. */
export interface KernelStartResult {
  kernel: string;
  range: lc.Range;
  profiled: boolean;
}
export const kernelStart = new lc.RequestType<KernelHeatParams, KernelStartResult | null, void>('tvmExplorer/kernelStart');

/** A pass's two documents (`listPasses`' `before` and `after` URIs). */
export interface PassDiffAlignmentParams {
  before: string;
  after: string;
}
/** A function of a pass diff and its range in each document (null on the side that lacks it),
 * from its decorator to the end of its body. */
export interface AlignedFunction {
  name: string;
  change: 'changed' | 'added' | 'removed' | 'unchanged';
  before: lc.Range | null;
  after: lc.Range | null;
}
/** Every function of the two documents, in the after-document's order, the removed ones last;
 * each document's module header (the text before its first function). */
export interface PassDiffAlignmentResult {
  before_header: lc.Range;
  after_header: lc.Range;
  functions: AlignedFunction[];
  unchanged: number;
}
/** The functions of a pass's two Relax or TIR documents aligned by name, from the server's index
 * (null: not two documents of the same IR stage — a diff of whole documents). Fails
 * (REQUEST_FAILED) when either is no document of a loaded bundle: the message says why. */
export const passDiffAlignment = new lc.RequestType<PassDiffAlignmentParams, PassDiffAlignmentResult | null, void>(
  'tvmExplorer/passDiffAlignment',
);

/** The two bundles of a comparison: URIs or paths of their directories or of any document. */
export interface CompareBundlesParams {
  a: string;
  b: string;
}
/** A bundle's manifest, as a comparison sums it up. */
export interface BundleSummary {
  model: string | null;
  sha256: string | null;
  target: string | null;
  options: Record<string, unknown>;
  tvm: string | null;
}
/** One side of a matched layer: its kernels, its own code lines and (if recorded) its costs. */
export interface CompareSide {
  subgraph: number;
  op_index: number;
  kernels: string[];
  /** Code lines as `tvm-explorer costs` counts them, in the side's own kind of code. */
  code_lines: number;
  shared_code_lines: number;
  costs?: { time_ms?: number; share?: number; workspace_bytes?: number; flops?: number; code_lines?: number };
}
/** A matched layer's machine code on each side (`--sass` bundles) and what of it grew. */
export interface MachineSides {
  a: Record<string, unknown> | null;
  b: Record<string, unknown> | null;
  /** "registers 56 -> 64", "spilled bytes 0 -> 128". */
  grew: string[];
}
/** What tuning did to a layer in one bundle (`no tuning`: compiled without `--tune`; null: no kernel computes it). */
export interface LayerTuning {
  state: string | null;
  speedup: number | null;
  us: number | null;
}
/** A layer's tuning on both sides and its kernels' measured time change (B / A). */
export interface TuningPair {
  a: LayerTuning;
  b: LayerTuning;
  time_ratio: number | null;
}
/** A layer matched in both bundles (named by its A side). */
export interface CompareRow {
  subgraph: number;
  op_index: number;
  opcode: string;
  name: string;
  a: CompareSide;
  b: CompareSide;
  /** Whether the layer's code changed; null when the two sides are different kinds of code. */
  changed: boolean | null;
  kernels_changed: boolean;
  machine?: MachineSides;
  /** When either bundle has tuning.json. */
  tuning?: TuningPair;
}
/** `tvm-explorer compare --json` (docs/compare.md); `a` and `b` are directory paths. */
export interface CompareResult {
  a: string;
  b: string;
  matched_by: 'sha256' | 'name';
  a_info: BundleSummary;
  b_info: BundleSummary;
  /** The kind of code each side's lines are: `c`, `cuda`, `ll` (null: no code). */
  code_kinds: { a: string | null; b: string | null };
  /** False when the kinds differ (C against LLVM IR): no code sizes, no layer diff. */
  code_compared: boolean;
  /** Whether either bundle was tuned (then every row has `tuning`). */
  tuning_compared: boolean;
  layers: CompareRow[];
  unmatched: { a: LayerRef[]; b: LayerRef[] };
}
/** Fails (REQUEST_FAILED) when the two cannot be compared: the message says why. */
export const compareBundles = new lc.RequestType<CompareBundlesParams, CompareResult, void>('tvmExplorer/compareBundles');

/** One side's generated code of a matched layer (by its A side), for a split diff. */
export interface CompareLayerCodeParams extends CompareBundlesParams {
  subgraph: number;
  op_index: number;
  side: 'a' | 'b';
}
/** The side's code and its editor language; fails (REQUEST_FAILED) when there is none to
 * diff (no such matched layer, code of different kinds on the two sides): the message says why. */
export interface CompareLayerCodeResult {
  text: string;
  language: string;
}
export const compareLayerCode = new lc.RequestType<CompareLayerCodeParams, CompareLayerCodeResult, void>('tvmExplorer/compareLayerCode');

/** A bundle's model graph (docs/graph.md, "The graph document"), drawn by "Show Model Graph". */
export interface ModelGraphParams {
  bundle: string;
}
/** `document` is the graph document (the graph app's type: webview/graph/types.ts); its
 * places' paths are relative to `root` (the bundle's URI). Fails (REQUEST_FAILED) when no
 * loaded bundle holds the file. */
export interface ModelGraphResult {
  root: string;
  document: GraphDocument;
}
export const modelGraph = new lc.RequestType<ModelGraphParams, ModelGraphResult, void>('tvmExplorer/modelGraph');

/** A bundle's memory timeline (docs/memory.md, "The timeline picture"), drawn by "Show Memory
 * Timeline": at most `bands` storages as bands of their own, the rest summed as other. */
export interface MemoryTimelineParams {
  bundle: string;
  bands?: number;
}
/** The timeline (the webview's type: webview/memory/types.ts) and the bundle's URI. Fails
 * (REQUEST_FAILED) when the bundle has no usable memory timeline: the message says why. */
export interface MemoryTimelineResult extends Timeline {
  root: string;
}
export const memoryTimeline = new lc.RequestType<MemoryTimelineParams, MemoryTimelineResult, void>('tvmExplorer/memoryTimeline');

/** The server's command behind the "Extract Reproducer" code action (`workspace/executeCommand`). */
export const EXTRACT_REPRODUCER_COMMAND = 'tvmExplorer.extractReproducer';
/** What it answers: the script written, or why not (the server has shown the message). */
export type ExtractReproducerResult = { path: string; uri: string; kernels: string[] } | { error: string };

/** One stage document of a bundle: the model document, the last Relax, the final TIR or a
 * generated-code document (the main one first: CUDA's device code before its host code). */
export interface StageDocument {
  stage: 'model' | 'relax' | 'tir' | 'code';
  uri: string;
  /** The document's path inside the bundle (`relax/018-AttachGlobalSymbol.relax`). */
  path: string;
}
export interface StageDocumentsParams {
  bundle: string;
}
export interface StageDocumentsResult {
  documents: StageDocument[];
}
/** The documents "Open Stages Side by Side" shows, in pipeline order. */
export const stageDocuments = new lc.RequestType<StageDocumentsParams, StageDocumentsResult, void>('tvmExplorer/stageDocuments');

/** A layer of a stageRanges answer; `id` is its number in the bundle (`index.json`). */
export interface StageLayer extends LayerRef {
  id: number;
}
/** The ranges of the position's layers in one stage document, in document order. */
export interface StageRangesInDocument {
  stage: StageDocument['stage'];
  uri: string;
  ranges: lc.Range[];
  /** More ranges were found than are answered (a position naming most of the model). */
  truncated?: boolean;
  /** What the column shows: the same statement as the position's, else the first layer's own
   * kernel (its entry, the binding computing it), never a kernel holding only its input dequantize. */
  focus?: lc.Range | null;
  /** The first range of each function holding only a part of the layers, and what it is. */
  notes?: { range: lc.Range; text: string }[];
}
export interface StageRangesResult {
  layers: StageLayer[];
  /** Every stage document but the queried one (none when the position has no origin). */
  documents: StageRangesInDocument[];
}
/** The layers at a position and their ranges in the other stage documents. */
export const stageRanges = new lc.RequestType<lc.TextDocumentPositionParams, StageRangesResult | null, void>('tvmExplorer/stageRanges');

/** One side of a history step: a document and the whole lines of the layer's code in it, in
 * order (a side shows a gap line between two ranges that are not next to each other). */
export interface HistorySide {
  uri: string;
  ranges: lc.Range[];
}
/** One pass that changed the layer's code. `marks`: `size`, `cost`, `numerics` when this is
 * the pass where that changed most. */
export interface HistoryStep {
  pass: { index: number; name: string } | null;
  stage: 'relax' | 'tir' | 'code';
  summary: string;
  changes: ('created' | 'rewritten' | 'fused' | 'split' | 'moved' | 'deleted')[];
  lines: { before: number; after: number; added: number; removed: number };
  before: HistorySide;
  after: HistorySide;
  marks: ('size' | 'cost' | 'numerics')[];
}
export interface HistoryMark {
  kind: 'size' | 'cost' | 'numerics';
  text: string;
  pass: { index: number; name: string } | null;
  /** Its step in `steps`; null when that pass did not change the layer's code. */
  step: number | null;
}
export interface LayerHistoryResult {
  layers: StageLayer[];
  steps: HistoryStep[];
  /** Passes in the pipeline, and how many of them left the layer alone. */
  passes: number;
  hidden: number;
  marks: HistoryMark[];
  labels: string[];
  /** The bundle's directory URI. */
  bundle: string;
}
/** Every pass that changed the code of the layer(s) at a position (docs/navigation.md,
 * "Layer history"). */
export const layerHistory = new lc.RequestType<lc.TextDocumentPositionParams, LayerHistoryResult | null, void>('tvmExplorer/layerHistory');
