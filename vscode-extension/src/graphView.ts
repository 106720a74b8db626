/**
 * "Show Model Graph": the model of a bundle as a graph (the graph app of webview/graph/, in a
 * webview beside the editor), from `tvmExplorer/modelGraph`. Clicking a node shows its Layer
 * Places and opens its generated code; moving the cursor in any document of the bundle (model,
 * Relax, TIR, C, CUDA, LLVM) highlights the node(s) it came from (`tvmExplorer/origins`) and
 * scrolls them into view; the overlay and the bundle can be switched; a recompiled bundle is
 * drawn again (`tvmExplorer/bundlesChanged`). Theme-aware through VS Code's CSS variables.
 */
import * as vscode from 'vscode';
import type * as lc from 'vscode-languageclient/node';
import { BundleView } from './bundleView';
import type { Ctx } from './ctx';
import { openInPreview } from './jumps';
import * as ext from './lsp_ext';
import type { SavedLayouts } from '../webview/graph/types';

const OVERLAY_KEY = 'tvmExplorer.graph.overlay';
/** The graph's layouts, kept per bundle (the webview's layout cache: reopening draws at once). */
const LAYOUTS_KEY = 'tvmExplorer.graph.layouts';
/** Bundles whose layouts are kept (the most recently saved), and the most kept for one. */
const LAYOUTS_KEEP = 8;
const LAYOUTS_MAX = 1_500_000;
type StoredLayouts = Record<string, { key: string; data: SavedLayouts; at: number }>;

type Doc = ext.ModelGraphResult['document'];
type FromWebview =
  | { type: 'ready' }
  | { type: 'openLayer'; layer: string }
  | { type: 'openPlace'; layer: string; path: string; line: number; character: number; endLine: number; endCharacter: number }
  | { type: 'overlay'; id: string }
  | { type: 'bundle'; uri: string }
  | { type: 'layouts'; key: string; data: SavedLayouts };

export class GraphView extends BundleView<ext.ModelGraphResult, FromWebview> {
  private root: vscode.Uri | undefined;
  private doc: Doc | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(ctx: Ctx) {
    super(ctx, {
      viewType: 'tvmExplorer.modelGraph',
      title: 'Model Graph',
      name: 'graph',
      // The script reads ELK's (connect-src: the extension's own files only) to start its layout
      // worker from a blob.
      allow: (source) => `connect-src ${source}; worker-src blob:;`,
      files: { elk: 'elk.js' },
      bodyClass: 'tvmx-webview',
      content: '<div id="tvmx-graph"></div>',
    });
    this.disposables.push(
      vscode.window.onDidChangeTextEditorSelection((e) => this.cursorMoved(e.textEditor)),
      vscode.window.onDidChangeActiveTextEditor((e) => e && this.cursorMoved(e)),
    );
  }

  protected async received(msg: FromWebview): Promise<void> {
    if (msg.type === 'openLayer') {
      await this.openLayer(msg.layer);
    } else if (msg.type === 'openPlace' && this.root) {
      const uri = vscode.Uri.joinPath(this.root, ...msg.path.split('/'));
      await openInPreview(
        this.ctx.largeFiles,
        new vscode.Location(uri, new vscode.Range(msg.line, msg.character, msg.endLine, msg.endCharacter)),
      );
    } else if (msg.type === 'overlay') {
      await this.ctx.extCtx.workspaceState.update(OVERLAY_KEY, msg.id);
    } else if (msg.type === 'layouts' && this.bundleUri) {
      await this.keepLayouts(this.bundleUri, msg.key, msg.data);
    } else if (msg.type === 'bundle') {
      this.bundleUri = msg.uri;
      await this.reload();
    }
  }

  /** Keeps the layouts the webview made for a bundle's graph (the most recent bundles only). */
  private async keepLayouts(uri: string, key: string, data: SavedLayouts): Promise<void> {
    if (JSON.stringify(data).length > LAYOUTS_MAX) {
      return;
    }
    const state = this.ctx.extCtx.workspaceState;
    const all: StoredLayouts = { ...(state.get<StoredLayouts>(LAYOUTS_KEY) ?? {}), [uri]: { key, data, at: Date.now() } };
    const recent = Object.entries(all)
      .sort((a, b) => b[1].at - a[1].at)
      .slice(0, LAYOUTS_KEEP);
    await state.update(LAYOUTS_KEY, Object.fromEntries(recent));
  }

  /** A node was clicked: its Layer Places, and its generated code opened in the editor. */
  private async openLayer(id: string): Promise<void> {
    const node = this.doc?.nodes.find((n) => n.id === id);
    const places = node?.places ?? [];
    if (!node || !this.root || !places.length) {
      vscode.window.setStatusBarMessage('TVM Explorer: this layer has no places in the bundle.', 4000);
      return;
    }
    const at = (p: (typeof places)[number]) => vscode.Uri.joinPath(this.root!, ...p.path.split('/'));
    const model = places.find((p) => p.stage === 'model');
    if (model) {
      await this.ctx.layerPlaces.showAt(at(model), new vscode.Position(model.line, model.character));
    }
    const code = places.find((p) => p.stage === 'code') ?? places[places.length - 1];
    const editor = await this.ctx.largeFiles.showDocumentAt(at(code), {
      viewColumn: vscode.ViewColumn.One,
      preview: true,
      selection: new vscode.Range(code.line, code.character, code.line, code.character),
    });
    editor?.revealRange(
      new vscode.Range(code.line, code.character, code.end_line, code.end_character),
      vscode.TextEditorRevealType.InCenterIfOutsideViewport,
    );
  }

  protected ask(client: lc.LanguageClient, bundle: string): Promise<ext.ModelGraphResult> {
    return client.sendRequest(ext.modelGraph, { bundle });
  }

  protected answered(result: ext.ModelGraphResult): void {
    this.root = vscode.Uri.parse(result.root);
    this.doc = result.document;
  }

  protected failed(err: unknown): void {
    this.doc = undefined;
    this.panel?.webview.postMessage({ type: 'error', message: `TVM Explorer: ${ext.failureMessage(err)}` });
  }

  protected serverDown(message: string): void {
    this.panel?.webview.postMessage({ type: 'error', message });
  }

  protected post(): void {
    if (!this.panel || !this.ready || !this.doc) {
      return;
    }
    const bundles = this.ctx.registry.list().map((b) => ({ uri: b.info.uri, label: `${b.info.model || b.dir} (${b.info.target})` }));
    const overlay = this.ctx.extCtx.workspaceState.get<string>(OVERLAY_KEY);
    const kept = this.bundleUri ? this.ctx.extCtx.workspaceState.get<StoredLayouts>(LAYOUTS_KEY)?.[this.bundleUri] : undefined;
    const layouts = kept ? { key: kept.key, data: kept.data } : null;
    this.panel.webview.postMessage({ type: 'graph', doc: this.doc, bundles, current: this.bundleUri, overlay, layouts });
    const editor = vscode.window.activeTextEditor;
    if (editor) {
      this.cursorMoved(editor);
    }
  }

  /** The cursor moved in an editor: highlight the layers its text came from (debounced). */
  private cursorMoved(editor: vscode.TextEditor): void {
    if (!this.panel || !this.doc) {
      return;
    }
    const file = this.ctx.sides.bundleFileOf(editor.document.uri);
    const bundle = file && this.ctx.registry.bundleOf(file);
    if (!bundle) {
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.highlightAt(editor, bundle.info.uri), 120);
  }

  private async highlightAt(editor: vscode.TextEditor, bundleUri: string): Promise<void> {
    const client = this.ctx.server.client;
    if (!client || !this.panel) {
      return;
    }
    if (bundleUri !== this.bundleUri) {
      this.bundleUri = bundleUri; // the cursor is in another bundle: draw that one
      await this.reload();
      return;
    }
    const result = await client.sendRequest(ext.origins, this.ctx.sides.cursorParams(client, editor));
    const ids = new Map((this.doc?.nodes ?? []).map((n) => [`${n.subgraph}:${n.op_index}`, n.id]));
    const layers = (result?.origins ?? []).map((o) => ids.get(`${o.subgraph}:${o.op_index}`)).filter((id): id is string => !!id);
    this.panel?.webview.postMessage({ type: 'highlight', layers });
  }

  dispose(): void {
    clearTimeout(this.timer);
    super.dispose();
  }
}
