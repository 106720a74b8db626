/**
 * elkjs off the page's thread. ELK is not part of the app's script: it is its own script
 * (out/elk.js: elkjs's worker script, wrapped), handed over as text by the host and started as a
 * web worker from a blob, so the page never compiles it. The worker speaks ELK's own protocol
 * (``{id, cmd: 'layout', graph}`` in, ``{id, data}`` or ``{id, error}`` out). Where no worker can
 * start (a Content-Security-Policy without ``worker-src blob:``), the same text runs on the page
 * (an inline script, with the page's nonce) and leaves ELK's in-page stand-in for a worker: the
 * layouts run there, one container at a time, and the status line says so.
 */
export interface ElkGraph {
  id: string;
  layoutOptions: Record<string, string>;
  children: { id: string; width: number; height: number; layoutOptions?: Record<string, string> }[];
  edges: { id: string; sources: string[]; targets: string[] }[];
}
export interface ElkPoint {
  x: number;
  y: number;
}
export interface ElkResult {
  width: number;
  height: number;
  children: { id: string; x: number; y: number; width: number; height: number }[];
  edges: {
    id: string;
    sources: string[];
    targets: string[];
    sections?: { startPoint: ElkPoint; endPoint: ElkPoint; bendPoints?: ElkPoint[] }[];
  }[];
}

type Pending = { graph: ElkGraph; resolve: (r: ElkResult) => void; reject: (e: Error) => void };
/** A web worker, or ELK's stand-in for one on the page: the same two members. */
type ElkPort = { onmessage: ((ev: MessageEvent) => void) | null; postMessage(msg: unknown): void };

declare global {
  interface Window {
    /** What out/elk.js leaves when it runs on a page (not in a worker). */
    tvmxElkFakeWorker?: new () => ElkPort;
    /** The layout worker the report started before the app's script (report.py), with the error
     * it met before the app listened, if any. */
    tvmxElkWorker?: Worker & { tvmxError?: string };
  }
}

/** ELK's script text, then one layout: the worker compiles ELK and warms it up while the page
 * still reads its graph. */
const WARM_UP: ElkGraph = {
  id: 'warm',
  layoutOptions: { 'elk.algorithm': 'layered' },
  children: [
    { id: 'a', width: 10, height: 10 },
    { id: 'b', width: 10, height: 10 },
  ],
  edges: [{ id: 'e', sources: ['a'], targets: ['b'] }],
};

/** The algorithms the app asks for: layered (every layout), rectpacking (a grid where layered fails). */
const ALGORITHMS = ['layered', 'rectpacking'];

export class ElkRunner {
  /** Where layouts run: ``worker`` or ``page``. */
  mode: 'worker' | 'page' = 'page';
  /** Why layouts run on the page, when they do. */
  note = '';
  private port: ElkPort | undefined;
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private next = 0;

  /** ``script``: ELK's script text (null: none to run, every layout fails); ``nonce``: the
   * page's script nonce, for running it on the page. */
  constructor(
    private readonly script: string | null,
    private readonly nonce = '',
  ) {
    if (!script) {
      this.note = 'no ELK script';
      return;
    }
    const early = window.tvmxElkWorker;
    window.tvmxElkWorker = undefined;
    try {
      if (!early) {
        performance.mark('tvmx:worker-start');
      }
      this.worker = early ?? new Worker(URL.createObjectURL(new Blob([script], { type: 'text/javascript' })));
      this.mode = 'worker';
      this.listen(this.worker);
      this.worker.onerror = (ev: ErrorEvent) => {
        ev.preventDefault?.();
        this.toPage(`the layout worker failed: ${ev.message || 'it could not start'}`);
      };
      if (early?.tvmxError) {
        this.toPage(`the layout worker failed: ${early.tvmxError}`);
      }
      void this.layout(WARM_UP).then(
        () => performance.mark('tvmx:worker-warm'),
        () => undefined,
      );
    } catch (err) {
      this.worker = undefined;
      this.toPage(`no web worker here (${String((err as Error).message ?? err)})`);
    }
  }

  private listen(port: ElkPort): void {
    this.port = port;
    // ELK knows no algorithm until told (elkjs's API does this in its constructor); the answer
    // carries an id no job has
    port.postMessage({ id: -1, cmd: 'register', algorithms: ALGORITHMS });
    port.onmessage = (ev: MessageEvent<{ id: number; data?: ElkResult; error?: unknown }>) => {
      if (ev.data.id === -1) {
        performance.mark('tvmx:worker-ready');
      }
      const job = this.pending.get(ev.data.id);
      this.pending.delete(ev.data.id);
      if (job && ev.data.data && ev.data.error === undefined) {
        job.resolve(ev.data.data);
      } else if (job) {
        const err = ev.data.error as { message?: string } | undefined;
        job.reject(new Error(String(err?.message ?? err ?? 'layout failed')));
      }
    };
  }

  /** The worker is gone: ELK runs on the page, and every job waiting on the worker with it. */
  private toPage(why: string): void {
    this.worker?.terminate();
    this.worker = undefined;
    this.port = undefined;
    this.mode = 'page';
    this.note = why;
    try {
      if (!window.tvmxElkFakeWorker) {
        const run = document.createElement('script');
        if (this.nonce) {
          run.nonce = this.nonce;
        }
        run.textContent = this.script;
        document.head.append(run);
      }
      if (window.tvmxElkFakeWorker) {
        this.listen(new window.tvmxElkFakeWorker());
      } else {
        this.note += '; ELK could not run on the page either (Content-Security-Policy)';
      }
    } catch (err) {
      this.note += `; ELK could not run on the page either (${String((err as Error).message ?? err)})`;
    }
    for (const [id, job] of this.pending) {
      this.send(id, job);
    }
  }

  private send(id: number, job: Pending): void {
    if (!this.port) {
      this.pending.delete(id);
      job.reject(new Error(`no layout engine: ${this.note}`));
      return;
    }
    this.port.postMessage({ id, cmd: 'layout', graph: job.graph });
  }

  layout(graph: ElkGraph): Promise<ElkResult> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      const job = { graph, resolve, reject };
      this.pending.set(id, job);
      this.send(id, job);
    });
  }
}
