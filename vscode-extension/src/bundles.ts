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

  constructor(
    private readonly server: ServerManager,
    private readonly sides: PassDiffSides,
  ) {
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

  /** The folder name of the loaded bundle a result's file URI (as the server sends it) is in,
   * for a view to say whose layer it shows; undefined when that bundle is no longer loaded. */
  nameOf(uri: string): string | undefined {
    const bundle = this.bundleOf(vscode.Uri.parse(uri));
    return bundle && path.basename(bundle.dir);
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
    this.notification = client.onNotification(ext.bundlesChanged, () => {
      this.sides.forget();
      void this.refresh();
    });
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

/** What finding a command's bundle needs of the extension (a part of its `Ctx`). */
export interface BundleContext {
  readonly registry: BundleRegistry;
  readonly server: ServerManager;
  readonly sides: PassDiffSides;
}

/** The loaded bundles; right after start-up, once the server has listed them (at most a minute). */
export async function loadedBundles(ctx: BundleContext): Promise<readonly Bundle[]> {
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

/** The bundle a view command is about: `target` (a bundle, or a file of one), else the bundle of
 * the active editor's file, else `shown` (the view's current one), else the only loaded bundle,
 * else the one the user picks; undefined, after saying so, when no bundle is loaded. */
export async function chooseBundle(
  ctx: BundleContext,
  title: string,
  target: vscode.Uri | string | undefined,
  shown: string | undefined,
): Promise<string | undefined> {
  const bundles = await loadedBundles(ctx);
  let uri: string | undefined = typeof target === 'string' ? target : target?.toString();
  if (uri) {
    const file = ctx.sides.bundleFileOf(vscode.Uri.parse(uri));
    uri = (file && ctx.registry.bundleOf(file)?.info.uri) ?? uri;
  } else {
    const active = vscode.window.activeTextEditor?.document.uri;
    const file = active && ctx.sides.bundleFileOf(active);
    uri = (file && ctx.registry.bundleOf(file)?.info.uri) ?? shown;
  }
  if (!uri && bundles.length === 1) {
    uri = bundles[0].info.uri;
  }
  if (!uri && bundles.length > 1) {
    const pick = await vscode.window.showQuickPick(
      bundles.map((b) => ({ label: b.info.model || b.dir, description: `${b.info.target} · ${b.dir}`, uri: b.info.uri })),
      { title: `${title}: which bundle` },
    );
    uri = pick?.uri;
  }
  if (!uri) {
    void vscode.window.showInformationMessage('TVM Explorer: no bundle is loaded; compile a model or open a folder with a bundle.');
  }
  return uri;
}

/** A tree view of the loaded bundles, drawn again whenever they change (`refresh`). */
export abstract class BundleTree<Node> implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  protected readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  protected readonly disposables: vscode.Disposable[] = [];

  constructor(
    protected readonly registry: BundleRegistry,
    protected readonly server: ServerManager,
  ) {
    this.disposables.push(
      registry.onDidChange(() => this.refresh()),
      this.changed,
    );
  }

  abstract refresh(): void;
  abstract getChildren(node?: Node): Promise<Node[]>;
  abstract getTreeItem(node: Node): vscode.TreeItem | Promise<vscode.TreeItem>;

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }
}
