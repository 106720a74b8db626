/**
 * A view of one loaded bundle in a webview beside the editor (the model graph, the memory
 * timeline): which bundle (`chooseBundle`), the panel and its page (the extension's own script
 * and stylesheet, under a nonce), and the server's answer asked again when the bundles change,
 * the latest request winning. The views say what to ask and how to draw it.
 */
import { randomBytes } from 'crypto';
import * as vscode from 'vscode';
import type * as lc from 'vscode-languageclient/node';
import { chooseBundle } from './bundles';
import type { Ctx } from './ctx';

/** The page of a view: `out/NAME.js` and `out/NAME.css`; nothing else loads, no network. */
export interface ViewPage {
  viewType: string;
  title: string;
  name: string;
  /** Content-Security-Policy directives beyond the script, the stylesheet and images, given
   * the webview's own source. */
  allow?: (source: string) => string;
  bodyClass: string;
  /** What the body holds before the script runs. */
  content: string;
  /** Other files of `out/` the script reads, handed to it as `data-NAME` attributes of its tag
   * (their webview URIs): the graph's layout worker script (`elk`). */
  files?: Record<string, string>;
}

export abstract class BundleView<Answer, Message extends { type: string }> implements vscode.Disposable {
  protected panel: vscode.WebviewPanel | undefined;
  protected bundleUri: string | undefined;
  protected ready = false;
  private asked = 0;
  protected readonly disposables: vscode.Disposable[] = [];

  constructor(
    protected readonly ctx: Ctx,
    private readonly page: ViewPage,
  ) {
    this.disposables.push(ctx.registry.onDidChange(() => void this.reload()));
  }

  /** Opens (or reveals) the view of `target`'s bundle, else of the active editor's, else asks. */
  async show(target?: vscode.Uri | string): Promise<void> {
    const uri = await chooseBundle(this.ctx, `Show ${this.page.title}`, target, this.bundleUri);
    if (!uri) {
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
    const { viewType, title, name, allow, bodyClass, content, files } = this.page;
    const media = vscode.Uri.joinPath(this.ctx.extCtx.extensionUri, 'out');
    const panel = vscode.window.createWebviewPanel(
      viewType,
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, retainContextWhenHidden: true, localResourceRoots: [media] },
    );
    const webview = panel.webview;
    const nonce = randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, `${name}.js`));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, `${name}.css`));
    const data = Object.entries(files ?? {})
      .map(([key, file]) => ` data-${key}="${webview.asWebviewUri(vscode.Uri.joinPath(media, file))}"`)
      .join('');
    const csp = `default-src 'none'; script-src 'nonce-${nonce}'; style-src ${webview.cspSource}; img-src ${webview.cspSource} data:;${allow ? ` ${allow(webview.cspSource)}` : ''}`;
    webview.html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<link rel="stylesheet" href="${style}"><title>${title}</title></head>
<body class="${bodyClass}">${content}<script nonce="${nonce}" src="${script}"${data}></script></body></html>`;
    this.ready = false;
    panel.onDidDispose(() => {
      this.panel = undefined;
      this.ready = false;
    });
    webview.onDidReceiveMessage((msg: Message) => void this.receivedMessage(msg));
    return panel;
  }

  private async receivedMessage(msg: Message): Promise<void> {
    if (msg.type === 'ready') {
      this.ready = true;
      this.post();
    } else {
      await this.received(msg);
    }
  }

  /** Asks the server about the current bundle again (shown first, switched, or recompiled). */
  async reload(): Promise<void> {
    if (!this.panel || !this.bundleUri) {
      return;
    }
    const client = await this.ctx.server.ready();
    if (!client) {
      this.serverDown('The TVM Explorer language server is not running.');
      return;
    }
    const loaded = this.ctx.registry.list();
    if (loaded.length && !loaded.some((b) => b.info.uri === this.bundleUri)) {
      this.bundleUri = loaded[0].info.uri; // the bundle went away: show another
    }
    const asked = ++this.asked;
    let answer: Answer;
    try {
      answer = await this.ask(client, this.bundleUri);
    } catch (err) {
      if (asked === this.asked && this.panel) {
        this.failed(err);
      }
      return;
    }
    if (asked !== this.asked || !this.panel) {
      return;
    }
    this.answered(answer);
    const info = loaded.find((b) => b.info.uri === this.bundleUri)?.info;
    this.panel.title = `${this.page.title}${info?.model ? `: ${info.model}` : ''}`;
    this.post();
  }

  /** The server's answer for `bundle`; a rejection goes to `failed`. */
  protected abstract ask(client: lc.LanguageClient, bundle: string): Promise<Answer>;
  protected abstract answered(answer: Answer): void;
  protected abstract failed(err: unknown): void;
  protected abstract serverDown(message: string): void;
  /** Sends the page what it draws, once it is ready. */
  protected abstract post(): void;
  /** A message of the page's other than `ready`. */
  protected abstract received(msg: Message): Promise<void>;

  dispose(): void {
    this.panel?.dispose();
    this.disposables.forEach((d) => d.dispose());
  }
}
