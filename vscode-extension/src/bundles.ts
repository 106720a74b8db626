/**
 * The bundles the server has loaded, and their passes, fetched with `tvmExplorer/listBundles`
 * and `tvmExplorer/listPasses` and refreshed on `tvmExplorer/bundlesChanged`. Also keeps the
 * context key `tvmExplorer.inBundle` (is the active editor a file of a loaded bundle).
 */
import * as path from 'path';
import * as vscode from 'vscode';
import * as lc from 'vscode-languageclient/node';
import * as ext from './lsp_ext';
import { ServerManager } from './client';
import { PassDiffSides } from './passDiffSides';

/** A loaded bundle with its passes (fetched lazily). */
export interface Bundle {
  info: ext.BundleInfo;
  /** File-system path of the bundle directory. */
  dir: string;
  passes?: ext.PassInfo[];
}

/** Path of a bundle directory from what the server sent (`uri`, else `root`). */
function bundleDir(info: ext.BundleInfo): string {
  const raw = info.uri || info.root;
  return raw.startsWith('file:') ? vscode.Uri.parse(raw).fsPath : raw;
}

export class BundleRegistry implements vscode.Disposable {
  private bundles: Bundle[] = [];
  private readonly changed = new vscode.EventEmitter<void>();
  private readonly disposables: vscode.Disposable[] = [];
  private notification: vscode.Disposable | undefined;
  readonly onDidChange = this.changed.event;

  constructor(private readonly server: ServerManager, private readonly sides: PassDiffSides) {
    this.disposables.push(
      server.onDidStart((client) => this.attach(client)),
      server.onDidStop(() => this.clear()),
      vscode.window.onDidChangeActiveTextEditor(() => this.updateContext()),
      this.changed,
    );
  }

  /** All loaded bundles, in the server's order. */
  list(): readonly Bundle[] {
    return this.bundles;
  }

  /** The bundle containing a document, if any. */
  bundleOf(uri: vscode.Uri): Bundle | undefined {
    if (uri.scheme !== 'file') {
      return undefined;
    }
    const file = uri.fsPath;
    return this.bundles.find((b) => file === b.dir || file.startsWith(b.dir + path.sep));
  }

  /** The passes of a bundle, asked of the server once per refresh. */
  async passes(bundle: Bundle): Promise<ext.PassInfo[]> {
    if (!bundle.passes) {
      const client = this.server.client;
      if (!client) {
        return [];
      }
      const result = await client.sendRequest(ext.listPasses, { bundle: bundle.info.uri });
      bundle.passes = result?.passes ?? [];
    }
    return bundle.passes;
  }

  /** Asks the server for the bundle list again. */
  async refresh(): Promise<void> {
    const client = this.server.client;
    if (!client) {
      this.clear();
      return;
    }
    // A busy server (the first load of big bundles) may fail a request: ask again a few
    // times rather than show an empty pass view until the next change on disk.
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await client.sendRequest(ext.listBundles, {});
        this.bundles = (result?.bundles ?? []).map((info) => ({ info, dir: bundleDir(info) }));
        break;
      } catch (err) {
        client.outputChannel.appendLine(`${ext.listBundles.method} failed (attempt ${attempt}): ${String(err)}`);
        this.bundles = [];
        if (attempt >= 5 || !client.isRunning()) {
          break;
        }
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
    this.updateContext();
    this.changed.fire();
  }

  dispose(): void {
    this.notification?.dispose();
    this.disposables.forEach((d) => d.dispose());
  }

  private attach(client: lc.LanguageClient): void {
    this.notification?.dispose();
    this.notification = client.onNotification(ext.bundlesChanged, () => void this.refresh());
    void this.refresh();
  }

  private clear(): void {
    this.bundles = [];
    this.updateContext();
    this.changed.fire();
  }

  private updateContext(): void {
    const doc = vscode.window.activeTextEditor?.document;
    const file = doc && this.sides.bundleFileOf(doc.uri);
    const inBundle = !!file && !!this.bundleOf(file);
    void vscode.commands.executeCommand('setContext', 'tvmExplorer.inBundle', inBundle);
  }
}
