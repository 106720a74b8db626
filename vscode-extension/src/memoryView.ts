/**
 * "Show Memory Timeline": bytes held at every step of a bundle's compiled function, stacked by
 * storage (the largest ones, each with the tensors it holds in turn), the kernels' scratch and
 * the rest, with the peak marked (webview/memory/, Chart.js), from `tvmExplorer/memoryTimeline`.
 * A click on a band shows that tensor's layer in Layer Places and opens its allocation line in
 * the Relax document the plan was read from. A recompiled bundle is drawn again.
 */
import { randomBytes } from 'crypto';
import { existsSync } from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import { loadedBundles } from './graphView';
import * as ext from './lsp_ext';

type Where = { uri: string; range: { start: { line: number; character: number }; end: { line: number; character: number } } } | null;
type FromWebview = { type: 'ready' } | { type: 'open'; layer: Where; alloc: Where };

export class MemoryView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private bundleUri: string | undefined;
  private data: ext.MemoryTimelineResult | undefined;
  private ready = false;
  private asked = 0;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly ctx: Ctx) {
    this.disposables.push(
      ctx.registry.onDidChange(() => void this.reload()),
      // Beside the server's memory hover on an allocation line of Relax: a link to the picture.
      vscode.languages.registerHoverProvider({ language: 'tvm-relax', scheme: 'file' }, { provideHover: (doc, pos) => this.hoverLink(doc, pos) }),
    );
  }

  /** "Show Memory Timeline" as a hover on an `alloc_storage` / `alloc_tensor` line of a bundle
   * whose memory was recorded; the link runs that one command and holds no bundle text. */
  private hoverLink(document: vscode.TextDocument, position: vscode.Position): vscode.Hover | undefined {
    const line = document.lineAt(position.line).text;
    if (!/R\.memory\.alloc_(storage|tensor)\(/.test(line)) {
      return undefined;
    }
    const bundle = this.ctx.registry.bundleOf(document.uri);
    if (!bundle || !existsSync(path.join(bundle.dir, 'memory.json'))) {
      return undefined;
    }
    const args = encodeURIComponent(JSON.stringify([bundle.info.uri]));
    const md = new vscode.MarkdownString(`[Show Memory Timeline](command:tvmExplorer.showMemoryTimeline?${args})`);
    md.isTrusted = { enabledCommands: ['tvmExplorer.showMemoryTimeline'] };
    return new vscode.Hover(md);
  }

  /** Opens (or reveals) the timeline of the bundle holding `target` or the active editor's
   * file, or asks which bundle when none is known. */
  async show(target?: vscode.Uri | string): Promise<void> {
    const bundles = await loadedBundles(this.ctx);
    let uri: string | undefined = typeof target === 'string' ? target : target?.toString();
    if (uri) {
      const file = this.ctx.sides.bundleFileOf(vscode.Uri.parse(uri));
      uri = (file && this.ctx.registry.bundleOf(file)?.info.uri) ?? uri;
    } else {
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
        { title: 'Show Memory Timeline: which bundle' },
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
      'tvmExplorer.memoryTimeline',
      'Memory Timeline',
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [media] },
    );
    const webview = panel.webview;
    const nonce = randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, 'memory.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, 'memory.css'));
    // Nothing but the extension's own script and stylesheet; no network, no inline script.
    webview.html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'nonce-${nonce}'; style-src ${webview.cspSource}; img-src ${webview.cspSource} data:;">
<link rel="stylesheet" href="${style}"><title>Memory Timeline</title></head>
<body class="tvmx-memory-page"><div id="tvmx-memory" class="tvmx-memory"><p>Reading the memory timeline…</p></div><script nonce="${nonce}" src="${script}"></script></body></html>`;
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
    } else if (msg.type === 'open') {
      await this.open(msg.layer, msg.alloc);
    }
  }

  /** A band was clicked: its layer in Layer Places, its allocation line opened in Relax. */
  private async open(layer: Where, alloc: Where): Promise<void> {
    if (layer) {
      const { line, character } = layer.range.start;
      await this.ctx.layerPlaces.showAt(vscode.Uri.parse(layer.uri), new vscode.Position(line, character));
    }
    const at = alloc ?? layer;
    if (!at) {
      vscode.window.setStatusBarMessage('TVM Explorer: this band has no layer and no allocation line.', 4000);
      return;
    }
    const { start, end } = at.range;
    const editor = await this.ctx.largeFiles.showDocumentAt(vscode.Uri.parse(at.uri), {
      viewColumn: vscode.ViewColumn.One,
      preview: true,
      selection: new vscode.Range(start.line, start.character, start.line, start.character),
    });
    editor?.revealRange(new vscode.Range(start.line, start.character, end.line, end.character), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  /** Asks the server for the current bundle's timeline again (shown first, or recompiled). */
  async reload(): Promise<void> {
    if (!this.panel || !this.bundleUri) {
      return;
    }
    const client = await this.ctx.server.ready();
    if (!client) {
      this.data = { error: 'The TVM Explorer language server is not running.' };
      this.post();
      return;
    }
    const loaded = this.ctx.registry.list();
    if (loaded.length && !loaded.some((b) => b.info.uri === this.bundleUri)) {
      this.bundleUri = loaded[0].info.uri; // the bundle went away: show another
    }
    const asked = ++this.asked;
    const result = await client.sendRequest(ext.memoryTimeline, { bundle: this.bundleUri, bands: 16 });
    if (asked !== this.asked || !this.panel) {
      return;
    }
    this.data = result;
    const info = loaded.find((b) => b.info.uri === this.bundleUri)?.info;
    this.panel.title = `Memory Timeline${info?.model ? `: ${info.model}` : ''}`;
    this.post();
  }

  private post(): void {
    if (!this.panel || !this.ready || !this.data) {
      return;
    }
    if ('error' in this.data) {
      this.panel.webview.postMessage({ type: 'error', message: `TVM Explorer: ${this.data.error}` });
    } else {
      this.panel.webview.postMessage({ type: 'timeline', data: this.data });
    }
  }

  dispose(): void {
    this.panel?.dispose();
    this.disposables.forEach((d) => d.dispose());
  }
}
