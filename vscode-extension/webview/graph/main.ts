/**
 * Entry point of the graph app (bundled by esbuild into one script; ELK is a script of its own,
 * out/elk.js, run as the layout worker: elk.ts). Two hosts:
 * - the static report (`tvm-explorer report`): ELK's text is a block of the page that is not run
 *   (`#tvmx-elk`, before the app), the graph document and the report's sections are JSON blocks
 *   (`#tvmx-graph-data`, `#tvmx-report-data`, after it);
 * - a VS Code webview: ELK is fetched from the extension (the script's `data-elk`); the
 *   extension posts the document (`{type: 'graph'}`) and the layers under the editor's cursor
 *   (`{type: 'highlight'}`); clicks are posted back.
 */
import { GraphApp } from './app';
import { el } from './dom';
import { renderReport } from './report';
import type { GraphDocument, GraphNode, Host, Place, ReportSections, SavedLayouts } from './types';

declare function acquireVsCodeApi(): { postMessage(msg: unknown): void; getState(): unknown; setState(s: unknown): void };

declare global {
  interface Window {
    tvmxGraph?: GraphApp;
  }
}

/** This script's element, while it runs: in the webview, it names ELK's script (`data-elk`) and
 * carries the page's nonce. */
const ownScript = document.currentScript as HTMLScriptElement | null;

/** ELK's script text, asked for before anything else, so that the layout worker starts (and
 * compiles ELK) while the page still reads its graph or waits for it. */
const elkScript: Promise<string | null> = ownScript?.dataset.elk
  ? fetch(ownScript.dataset.elk).then((r) => r.text())
  : Promise.resolve(document.getElementById('tvmx-elk')?.textContent || null);

function readJson<T>(id: string): T | null {
  const node = document.getElementById(id);
  return node?.textContent ? (JSON.parse(node.textContent) as T) : null;
}

/** The report's layout cache: the browser's storage for the page's origin (every report opened
 * from disk shares it), one entry per graph, the most recently saved few kept. */
const STORED = 'tvmx-layouts:';
const STORED_INDEX = 'tvmx-layouts';
const STORED_KEEP = 12;
/** A graph's layouts larger than this are not kept (the storage holds a few MiB in all). */
const STORED_MAX = 1_500_000;

const browserLayouts: NonNullable<Host['layouts']> = {
  load(key) {
    const text = localStorage.getItem(STORED + key);
    return text ? (JSON.parse(text) as SavedLayouts) : null;
  },
  save(key, data) {
    const text = JSON.stringify(data);
    if (text.length > STORED_MAX) {
      return;
    }
    const keys = (JSON.parse(localStorage.getItem(STORED_INDEX) ?? '[]') as string[]).filter((k) => k !== key);
    keys.push(key);
    for (const old of keys.splice(0, Math.max(0, keys.length - STORED_KEEP))) {
      localStorage.removeItem(STORED + old);
    }
    try {
      localStorage.setItem(STORED + key, text);
    } catch {
      // full: the oldest entries go, then one more try
      for (const old of keys.splice(0, Math.floor(keys.length / 2))) {
        localStorage.removeItem(STORED + old);
      }
      localStorage.setItem(STORED + key, text);
    }
    localStorage.setItem(STORED_INDEX, JSON.stringify(keys));
  },
};

function startStatic(): void {
  const host: Host = {
    kind: 'static',
    openLayer: () => undefined,
    openPlace: () => undefined,
    overlayChanged: () => undefined,
    elkScript,
    layouts: browserLayouts,
  };
  const mount = document.getElementById('tvmx-graph') ?? document.body;
  // The app (and its layout worker) first: the report's script comes before its data, so that
  // the worker starts (and compiles ELK) while the browser is still reading the graph.
  const app = new GraphApp(mount, host);
  window.tvmxGraph = app;
  const start = () => {
    const doc = readJson<GraphDocument>('tvmx-graph-data');
    performance.mark('tvmx:doc-read');
    if (!doc) {
      mount.append(el('p', { class: 'message' }, 'This report holds no graph document.'));
      return;
    }
    // The report's sections (tables, the memory timeline) after the graph's first paint: until
    // then the page's thread is the layout worker's rival for the CPU.
    const sections = () => {
      const data = readJson<ReportSections>('tvmx-report-data');
      const extra = document.getElementById('tvmx-report');
      if (data && extra) {
        renderReport(extra, app, doc, data);
      }
    };
    app.show(doc).then(sections, sections);
  };
  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', start, { once: true });
  } else {
    start();
  }
}

interface BundleChoice {
  uri: string;
  label: string;
}

function startVscode(): void {
  const vscode = acquireVsCodeApi();
  const saved = (vscode.getState() as { overlay?: string } | undefined) ?? {};
  /** The layouts the extension kept for the graph it sent last (its workspace state). */
  let stored: { key: string; data: SavedLayouts } | null = null;
  const host: Host = {
    kind: 'vscode',
    openLayer: (node: GraphNode) => vscode.postMessage({ type: 'openLayer', layer: node.id }),
    openPlace: (node: GraphNode, place: Place) =>
      vscode.postMessage({
        type: 'openPlace',
        layer: node.id,
        path: place.path,
        line: place.line,
        character: place.character,
        endLine: place.end_line,
        endCharacter: place.end_character,
      }),
    overlayChanged: (id: string) => {
      vscode.setState({ overlay: id });
      vscode.postMessage({ type: 'overlay', id });
    },
    // ELK's script is a resource of the extension: read (CSP connect-src) to start the worker from
    elkScript,
    nonce: ownScript?.nonce,
    layouts: {
      load: (key) => (stored?.key === key ? stored.data : null),
      save: (key, data) => vscode.postMessage({ type: 'layouts', key, data }),
    },
  };
  const app = new GraphApp(document.getElementById('tvmx-graph') ?? document.body, host);
  window.tvmxGraph = app;
  const bundles = el('select', { class: 'bundle', 'aria-label': 'Bundle' });
  bundles.addEventListener('change', () => vscode.postMessage({ type: 'bundle', uri: bundles.value }));
  app.addControl(el('label', { class: 'bundle-choice' }, 'Bundle ', bundles));
  const message = el('div', { class: 'message' });
  app.root.prepend(message);
  window.addEventListener('message', (ev: MessageEvent) => {
    const msg = ev.data as { type: string; [k: string]: unknown };
    if (msg.type === 'graph') {
      message.textContent = '';
      const choices = (msg.bundles as BundleChoice[]) ?? [];
      bundles.replaceChildren(...choices.map((b) => el('option', { value: b.uri }, b.label)));
      bundles.value = String(msg.current ?? '');
      stored = (msg.layouts as typeof stored) ?? null;
      void app.show(msg.doc as GraphDocument, (msg.overlay as string | undefined) ?? saved.overlay);
    } else if (msg.type === 'highlight') {
      void app.highlight((msg.layers as string[]) ?? []);
    } else if (msg.type === 'overlay') {
      app.setOverlay(String(msg.id));
    } else if (msg.type === 'error') {
      message.textContent = String(msg.message);
    }
  });
  vscode.postMessage({ type: 'ready' });
}

if (typeof acquireVsCodeApi === 'function') {
  startVscode();
} else if (document.getElementById('tvmx-graph')) {
  startStatic();
}
