/**
 * Entry point of the graph app (bundled by esbuild into one script). Started as a web worker
 * (no ``document``), the same script lays graphs out with ELK (elk.ts). Two hosts:
 * - the static report (`tvm-explorer report`): the graph document and the report's sections
 *   are JSON blocks of the page (`#tvmx-graph-data`, `#tvmx-report-data`);
 * - a VS Code webview: the extension posts the document (`{type: 'graph'}`) and the layers
 *   under the editor's cursor (`{type: 'highlight'}`); clicks are posted back.
 */
import { GraphApp } from './app';
import { el } from './dom';
import { serveLayouts } from './elk';
import { renderReport } from './report';
import type { GraphDocument, GraphNode, Host, Place, ReportSections } from './types';

declare function acquireVsCodeApi(): { postMessage(msg: unknown): void; getState(): unknown; setState(s: unknown): void };

declare global {
  interface Window {
    tvmxGraph?: GraphApp;
  }
}

/** This script's element, while it runs: its text (the report) or its address (the webview) is
 * what the layout worker is started from. */
const ownScript = typeof document !== 'undefined' ? (document.currentScript as HTMLScriptElement | null) : null;

function readJson<T>(id: string): T | null {
  const node = document.getElementById(id);
  return node?.textContent ? (JSON.parse(node.textContent) as T) : null;
}

function startStatic(): void {
  const host: Host = {
    kind: 'static',
    openLayer: () => undefined,
    openPlace: () => undefined,
    overlayChanged: () => undefined,
    workerScript: async () => (ownScript && !ownScript.src ? ownScript.textContent : null),
  };
  const mount = document.getElementById('tvmx-graph') ?? document.body;
  // The app (and its layout worker) first: the report's script comes before its data, so that
  // the worker starts (and compiles ELK) while the browser is still reading the graph.
  const app = new GraphApp(mount, host);
  window.tvmxGraph = app;
  const start = () => {
    const doc = readJson<GraphDocument>('tvmx-graph-data');
    if (!doc) {
      mount.append(el('p', { class: 'message' }, 'This report holds no graph document.'));
      return;
    }
    const sections = readJson<ReportSections>('tvmx-report-data');
    const extra = document.getElementById('tvmx-report');
    if (sections && extra) {
      renderReport(extra, app, doc, sections);
    }
    void app.show(doc);
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
  const host: Host = {
    kind: 'vscode',
    openLayer: (node: GraphNode) => vscode.postMessage({ type: 'openLayer', layer: node.id }),
    openPlace: (node: GraphNode, place: Place) =>
      vscode.postMessage({ type: 'openPlace', layer: node.id, path: place.path, line: place.line, character: place.character, endLine: place.end_line, endCharacter: place.end_character }),
    overlayChanged: (id: string) => {
      vscode.setState({ overlay: id });
      vscode.postMessage({ type: 'overlay', id });
    },
    // the webview's script is a resource of the extension: read back (CSP connect-src) for the worker
    workerScript: async () => (ownScript?.src ? (await fetch(ownScript.src)).text() : null),
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

if (typeof document === 'undefined') {
  serveLayouts(self as unknown as { onmessage: unknown; postMessage(msg: unknown): void });
} else {
  if (typeof acquireVsCodeApi === 'function') {
    startVscode();
  } else if (document.getElementById('tvmx-graph')) {
    startStatic();
  }
}
