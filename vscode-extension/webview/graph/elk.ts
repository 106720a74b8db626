/**
 * elkjs off the page's thread: the app's own script, started again as a web worker (it knows it
 * is one: no ``document``), runs ELK and answers one layout per message. Where no worker can
 * start (no script text, a Content-Security-Policy without ``worker-src blob:``), ELK runs on the
 * page, one container at a time, and the status line says so.
 */
import ELK from 'elkjs/lib/elk.bundled.js';

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
  edges: { id: string; sources: string[]; targets: string[]; sections?: { startPoint: ElkPoint; endPoint: ElkPoint; bendPoints?: ElkPoint[] }[] }[];
}

type Pending = { graph: ElkGraph; resolve: (r: ElkResult) => void; reject: (e: Error) => void };

export class ElkRunner {
  /** Where layouts run: ``worker`` or ``page``. */
  mode: 'worker' | 'page' = 'page';
  /** Why layouts run on the page, when they do. */
  note = '';
  private worker: Worker | undefined;
  private page: InstanceType<typeof ELK> | undefined;
  private readonly pending = new Map<number, Pending>();
  private next = 0;

  constructor(script: string | null) {
    if (!script) {
      this.note = 'no worker script';
      return;
    }
    try {
      const url = URL.createObjectURL(new Blob([script], { type: 'text/javascript' }));
      this.worker = new Worker(url);
      this.mode = 'worker';
      this.worker.onmessage = (ev: MessageEvent<{ id: number; graph?: ElkResult; error?: string }>) => {
        const job = this.pending.get(ev.data.id);
        this.pending.delete(ev.data.id);
        if (job && ev.data.graph) {
          job.resolve(ev.data.graph);
        } else if (job) {
          job.reject(new Error(ev.data.error ?? 'layout failed'));
        }
      };
      this.worker.onerror = (ev: ErrorEvent) => {
        ev.preventDefault?.();
        this.toPage(`the layout worker failed: ${ev.message || 'it could not start'}`);
      };
      // ELK's code is compiled and warmed up in the worker while the page reads its graph
      void this.layout({ id: 'warm', layoutOptions: { 'elk.algorithm': 'layered' }, children: [{ id: 'a', width: 10, height: 10 }, { id: 'b', width: 10, height: 10 }], edges: [{ id: 'e', sources: ['a'], targets: ['b'] }] }).catch(() => undefined);
    } catch (err) {
      this.worker = undefined;
      this.note = `no web worker here (${String((err as Error).message ?? err)})`;
    }
  }

  /** The worker is gone: every job waiting on it runs on the page. */
  private toPage(why: string): void {
    this.worker?.terminate();
    this.worker = undefined;
    this.mode = 'page';
    this.note = why;
    const jobs = [...this.pending.values()];
    this.pending.clear();
    for (const job of jobs) {
      this.onPage(job.graph).then(job.resolve, job.reject);
    }
  }

  private onPage(graph: ElkGraph): Promise<ElkResult> {
    this.page ??= new ELK();
    return this.page.layout(graph as never) as unknown as Promise<ElkResult>;
  }

  layout(graph: ElkGraph): Promise<ElkResult> {
    if (!this.worker) {
      return this.onPage(graph);
    }
    const id = this.next++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { graph, resolve, reject });
      this.worker!.postMessage({ id, graph });
    });
  }
}

/** The worker's side: lays out each graph it is sent and posts the result (or the error). */
export function serveLayouts(scope: { onmessage: unknown; postMessage(msg: unknown): void }): void {
  const elk = new ELK();
  // ELK's own worker code claims onmessage when it loads (in new ELK()): this handler replaces it.
  scope.onmessage = (ev: MessageEvent<{ id: number; graph: ElkGraph }>) => {
    const { id, graph } = ev.data;
    elk.layout(graph as never).then(
      (out) => scope.postMessage({ id, graph: out }),
      (err: unknown) => scope.postMessage({ id, error: String((err as Error)?.message ?? err) }),
    );
  };
}
