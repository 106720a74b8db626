/**
 * "Show Memory Timeline": bytes held at every step of a bundle's compiled function, stacked by
 * storage (the largest ones, each with the tensors it holds in turn), the kernels' scratch and
 * the rest, with the peak marked (webview/memory/, Chart.js), from `tvmExplorer/memoryTimeline`.
 * A click on a band shows that tensor's layer in Layer Places and opens its allocation line in
 * the Relax document the plan was read from. A recompiled bundle is drawn again.
 */
import { existsSync } from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import type { Ctx } from './ctx';
import type * as lc from 'vscode-languageclient/node';
import { BundleView } from './bundleView';
import * as ext from './lsp_ext';

type Where = { uri: string; range: { start: { line: number; character: number }; end: { line: number; character: number } } } | null;
type FromWebview = { type: 'ready' } | { type: 'open'; layer: Where; alloc: Where };

type Answer = ext.MemoryTimelineResult | { error: string };

export class MemoryView extends BundleView<Answer, FromWebview> {
  private data: Answer | undefined;

  constructor(ctx: Ctx) {
    super(ctx, {
      viewType: 'tvmExplorer.memoryTimeline',
      title: 'Memory Timeline',
      name: 'memory',
      bodyClass: 'tvmx-memory-page',
      content: '<div id="tvmx-memory" class="tvmx-memory"><p>Reading the memory timeline…</p></div>',
    });
    this.disposables.push(
      // Beside the server's memory hover on an allocation line of Relax: a link to the picture.
      vscode.languages.registerHoverProvider(
        { language: 'tvm-relax', scheme: 'file' },
        { provideHover: (doc, pos) => this.hoverLink(doc, pos) },
      ),
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

  protected async received(msg: FromWebview): Promise<void> {
    if (msg.type === 'open') {
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
    editor?.revealRange(
      new vscode.Range(start.line, start.character, end.line, end.character),
      vscode.TextEditorRevealType.InCenterIfOutsideViewport,
    );
  }

  /** The timeline, or why there is none: the page says it in place of the picture. */
  protected async ask(client: lc.LanguageClient, bundle: string): Promise<Answer> {
    try {
      return await client.sendRequest(ext.memoryTimeline, { bundle, bands: 16 });
    } catch (err) {
      return { error: ext.failureMessage(err) };
    }
  }

  protected answered(answer: Answer): void {
    this.data = answer;
  }

  protected failed(err: unknown): void {
    this.data = { error: ext.failureMessage(err) };
    this.post();
  }

  protected serverDown(message: string): void {
    this.data = { error: message };
    this.post();
  }

  protected post(): void {
    if (!this.panel || !this.ready || !this.data) {
      return;
    }
    if ('error' in this.data) {
      this.panel.webview.postMessage({ type: 'error', message: `TVM Explorer: ${this.data.error}` });
    } else {
      this.panel.webview.postMessage({ type: 'timeline', data: this.data });
    }
  }
}
