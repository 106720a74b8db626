/**
 * "Show Model Graph": the model of a bundle as a graph (the graph app of webview/graph/, in a
 * webview beside the editor), from `tvmExplorer/modelGraph`. Clicking a node shows its Layer
 * Places and opens its generated code; moving the cursor in any document of the bundle (model,
 * Relax, TIR, C, CUDA, LLVM) highlights the node(s) it came from (`tvmExplorer/origins`) and
 * scrolls them into view; the overlay and the bundle can be switched; a recompiled bundle is
 * drawn again (`tvmExplorer/bundlesChanged`). Theme-aware through VS Code's CSS variables.
 */
import { randomBytes } from 'crypto';
import * as vscode from 'vscode';
import type { Bundle } from './bundles';
import type { Ctx } from './ctx';
import { openInPreview } from './jumps';
import * as ext from './lsp_ext';

const OVERLAY_KEY = 'tvmExplorer.graph.overlay';

type Doc = ext.GraphDocumentWire;
type FromWebview =
  | { type: 'ready' }
  | { type: 'openLayer'; layer: string }
  | { type: 'openPlace'; layer: string; path: string; line: number; character: number; endLine: number; endCharacter: number }
  | { type: 'overlay'; id: string }
  | { type: 'bundle'; uri: string };

export class GraphView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private bundleUri: string | undefined;
  private root: vscode.Uri | undefined;
  private doc: Doc | undefined;
  private ready = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private asked = 0;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly ctx: Ctx) {
    this.disposables.push(
      vscode.window.onDidChangeTextEditorSelection((e) => this.cursorMoved(e.textEditor)),
      vscode.window.onDidChangeActiveTextEditor((e) => e && this.cursorMoved(e)),
      ctx.registry.onDidChange(() => void this.reload()),
    );
  }

  /** Opens (or reveals) the graph of the bundle holding the active editor's file, or asks
   * which bundle when it holds none. */
  async show(target?: vscode.Uri | string): Promise<void> {
    const bundles = await loadedBundles(this.ctx);
    let uri: string | undefined = typeof target === 'string' ? target : target?.toString();
    if (!uri) {
      const active = vscode.window.activeTextEditor?.document.uri;
      const file = active && this.ctx.sides.bundleFileOf(active);
      uri = (file && this.ctx.registry.bundleOf(file)?.info.uri) ?? this.bundleUri;
    }
    if (!uri && bundles.length === 1) {
      uri = bundles[0].info.uri;
    }
    if (!uri && bundles.length > 1) {
      const pick = await vscode.window.showQuickPick(
        bundles.map((b) => ({ label: b.info.model || b.dir, description: `${b.info.target} · ${b.dir}`, uri: b.info.uri })),
        { title: 'Show Model Graph: which bundle' },
      );
      uri = pick?.uri;
    }
    if (!uri) {
      void vscode.window.showInformationMessage('TVM Explorer: no bundle is loaded; compile a model or open a folder with a bundle.');
      return;
    }
    this.bundleUri = uri;
    if (this.panel) {
      this.panel.reveal(vscode.ViewColumn.Beside, true);
    } else {
      this.panel = this.createPanel();
    }
    await this.reload();
  }

  private createPanel(): vscode.WebviewPanel {
    const media = vscode.Uri.joinPath(this.ctx.extCtx.extensionUri, 'out');
    const panel = vscode.window.createWebviewPanel(
      'tvmExplorer.modelGraph',
      'Model Graph',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [media] },
    );
    const webview = panel.webview;
    const nonce = randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, 'graph.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, 'graph.css'));
    // Nothing but the extension's own script and stylesheet; no network. The script reads itself
    // back (connect-src: the extension's own files only) to start its layout worker from a blob.
    webview.html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-${nonce}'; style-src ${webview.cspSource}; img-src ${webview.cspSource} data:; connect-src ${webview.cspSource}; worker-src blob:;">
<link rel="stylesheet" href="${style}"><title>Model Graph</title></head>
<body class="tvmx-webview"><div id="tvmx-graph"></div><script nonce="${nonce}" src="${script}"></script></body></html>`;
    this.ready = false;
    panel.onDidDispose(() => {
      this.panel = undefined;
      this.ready = false;
    });
    webview.onDidReceiveMessage((msg: FromWebview) => void this.received(msg));
    return panel;
  }

  private async received(msg: FromWebview): Promise<void> {
    if (msg.type === 'ready') {
      this.ready = true;
      this.post();
    } else if (msg.type === 'openLayer') {
      await this.openLayer(msg.layer);
    } else if (msg.type === 'openPlace' && this.root) {
      const uri = vscode.Uri.joinPath(this.root, ...msg.path.split('/'));
      await openInPreview(this.ctx.largeFiles, new vscode.Location(uri, new vscode.Range(msg.line, msg.character, msg.endLine, msg.endCharacter)));
    } else if (msg.type === 'overlay') {
      await this.ctx.extCtx.workspaceState.update(OVERLAY_KEY, msg.id);
    } else if (msg.type === 'bundle') {
      this.bundleUri = msg.uri;
      await this.reload();
    }
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
    editor?.revealRange(new vscode.Range(code.line, code.character, code.end_line, code.end_character), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  /** Fetches the graph of the current bundle again (shown first, or recompiled). */
  async reload(): Promise<void> {
    if (!this.panel || !this.bundleUri) {
      return;
    }
    const client = await this.ctx.server.ready();
    if (!client) {
      this.panel.webview.postMessage({ type: 'error', message: 'The TVM Explorer language server is not running.' });
      return;
    }
    const loaded = this.ctx.registry.list();
    if (loaded.length && !loaded.some((b) => b.info.uri === this.bundleUri)) {
      this.bundleUri = loaded[0].info.uri; // the bundle went away: show another
    }
    const asked = ++this.asked;
    const result = await client.sendRequest(ext.modelGraph, { bundle: this.bundleUri });
    if (asked !== this.asked || !this.panel) {
      return;
    }
    if ('error' in result) {
      this.doc = undefined;
      this.panel.webview.postMessage({ type: 'error', message: `TVM Explorer: ${result.error}` });
      return;
    }
    this.root = vscode.Uri.parse(result.root);
    this.doc = result.document;
    const info = loaded.find((b) => b.info.uri === this.bundleUri)?.info;
    this.panel.title = `Model Graph${info?.model ? `: ${info.model}` : ''}`;
    this.post();
  }

  private post(): void {
    if (!this.panel || !this.ready || !this.doc) {
      return;
    }
    const bundles = this.ctx.registry.list().map((b) => ({ uri: b.info.uri, label: `${b.info.model || b.dir} (${b.info.target})` }));
    const overlay = this.ctx.extCtx.workspaceState.get<string>(OVERLAY_KEY);
    this.panel.webview.postMessage({ type: 'graph', doc: this.doc, bundles, current: this.bundleUri, overlay });
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
    this.panel?.dispose();
    this.disposables.forEach((d) => d.dispose());
  }
}

/** The loaded bundles; right after start-up, once the server has listed them (at most a minute). */
export async function loadedBundles(ctx: Ctx): Promise<readonly Bundle[]> {
  if (ctx.registry.list().length) {
    return ctx.registry.list();
  }
  if (!(await ctx.server.ready())) {
    return [];
  }
  await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'TVM Explorer: waiting for the bundles to load' },
    () =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          listener.dispose();
          resolve();
        };
        const timer = setTimeout(done, 60000);
        const listener = ctx.registry.onDidChange(() => ctx.registry.list().length && done());
        if (ctx.registry.list().length) {
          done();
        }
      }),
  );
  return ctx.registry.list();
}
