/** The memory timeline as `tvmExplorer/memoryTimeline` sends it and the report embeds it
 * (server/tvm_explorer/navigation/memory_timeline.py; docs/memory.md, "The timeline picture").
 * A location is an LSP one in VS Code; in the static report only `path` and `line` are kept. */
export interface Where {
  uri?: string;
  path?: string;
  range?: { start: { line: number; character: number }; end: { line: number; character: number } };
  line?: number;
}

export interface TimelineLayer {
  id: number;
  opcode: string;
  name: string;
  location: Where | null;
}

export interface TimelineTensor {
  var: string;
  text: string;
  bytes: number | null;
  first_step: number | null;
  last_step: number | null;
  layer: number | null;
  alloc: Where | null;
}

export interface TimelineBand {
  storage: number;
  var: string;
  kind: string;
  bytes: number;
  first_step: number;
  last_step: number;
  to_end: boolean;
  alloc: Where | null;
  layers: number[];
  tensors: TimelineTensor[];
  more_tensors: number;
}

export interface TimelineStep {
  callee: string;
  kind: string;
  layer: number | null;
  total: number;
  scratch: number;
  other: number;
}

/** What a run allocated (`compile --profile`), drawn over the static bands: `steps` are the bytes
 * in use after each step's kernel call in the run with the VM's naive allocator (the one that
 * frees as the plan does; null where no kernel is called, empty when nothing was measured);
 * `replayed`: what TVM's naive allocator and workspace pool hold after each step, replayed on the
 * plan (the static figure the run is checked against; above the bands where the pool keeps
 * scratch pages); `caption` says where, the peak beside the static one and the verdict, or why there is none. */
export interface TimelineMeasured {
  status: string;
  allocator: string | null;
  where: string | null;
  steps: (number | null)[];
  replayed: number[];
  peak_step: number | null;
  peak_bytes: number | null;
  static_bytes: number | null;
  within: boolean | null;
  caption: string;
}

export interface Timeline {
  root?: string;
  function: string;
  document: string | null;
  peak: { step: number | null; bytes: number; live_bytes: number; scratch_bytes: number; unknown: number };
  steps: TimelineStep[];
  bands: TimelineBand[];
  other_storages: number;
  unsized_storages: number;
  constants_bytes: number;
  layers: TimelineLayer[];
  notes: string[];
  measured: TimelineMeasured;
}

/** What a click on the picture asks its host to show: the layer (its model location) and the
 * allocation line in Relax (either may be missing). */
export interface Pick {
  layer: TimelineLayer | null;
  alloc: Where | null;
}
