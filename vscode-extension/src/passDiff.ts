/**
 * Opens the IR before and after a pass side by side (`vscode.diff`), titled with the pass name,
 * and steps to the next/previous pass. Diff sides are the bundle's own files, so a diff tab's
 * URIs are deterministic (reopening a pass focuses its tab) and keep hover/definition working;
 * a pass with nothing before it is diffed against `tvm-explorer-empty:/<bundle>/<index>-<name>`.
 */
import * as vscode from 'vscode';
import { Bundle, BundleRegistry } from './bundles';
import { PassInfo } from './lsp_ext';
import { PassTreeProvider, visiblePasses } from './passView';

export const EMPTY_SCHEME = 'tvm-explorer-empty';

/** Content of the empty left side of a first pass. */
export class EmptyDocumentProvider implements vscode.TextDocumentContentProvider {
  provideTextDocumentContent(): string {
    return '';
  }
}

/** The two sides of the diff of a pass. */
export function diffUris(bundle: Bundle, pass: PassInfo): { left: vscode.Uri; right: vscode.Uri } {
  const right = vscode.Uri.parse(pass.after);
  const left = pass.before
    ? vscode.Uri.parse(pass.before)
    : vscode.Uri.from({
        scheme: EMPTY_SCHEME,
        path: `/${bundle.dir.split(/[\\/]/).pop()}/${pass.index}-${pass.name}`,
      });
  return { left, right };
}

/** Title of a pass diff tab. */
export function diffTitle(pass: PassInfo): string {
  return `${pass.name} (${pass.stage} pass #${pass.index})${pass.changed ? '' : ' · unchanged'}`;
}

export class PassDiffs implements vscode.Disposable {
  /** Open pass diffs by `<left>|<right>`, to know which pass the active tab shows. */
  private readonly open = new Map<string, { bundle: Bundle; pass: PassInfo }>();
  private current: { bundle: Bundle; pass: PassInfo } | undefined;
  /** Documents of neighbouring passes, loaded ahead of a step (held so they stay loaded). */
  private readonly warm = new Map<string, vscode.TextDocument>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly registry: BundleRegistry,
    private readonly tree: PassTreeProvider,
    private readonly view: vscode.TreeView<unknown>,
  ) {
    this.disposables.push(
      vscode.window.tabGroups.onDidChangeTabs(() => this.updateActive()),
      vscode.window.tabGroups.onDidChangeTabGroups(() => this.updateActive()),
    );
  }

  /** Opens the diff of pass `index` of the bundle with URI `bundleUri`. */
  async openPass(bundleUri: string, index: number): Promise<void> {
    const bundle = this.registry.list().find((b) => b.info.uri === bundleUri);
    if (!bundle) {
      void vscode.window.showWarningMessage(`TVM Explorer: bundle not loaded: ${bundleUri}`);
      return;
    }
    const pass = (await this.registry.passes(bundle)).find((p) => p.index === index);
    if (!pass) {
      void vscode.window.showWarningMessage(`TVM Explorer: no pass #${index} in ${bundle.dir}`);
      return;
    }
    await this.show(bundle, pass);
  }

  /** Steps `delta` passes (among those the pass view shows) from the current diff. */
  async step(delta: 1 | -1): Promise<void> {
    const cur = this.current;
    if (!cur) {
      void vscode.window.showInformationMessage('TVM Explorer: open a pass diff from the Passes view first.');
      return;
    }
    const passes = visiblePasses(await this.registry.passes(cur.bundle));
    // The current pass may be hidden (unchanged): step from where it would be listed.
    const later = passes.filter((p) => p.index > cur.pass.index);
    const earlier = passes.filter((p) => p.index < cur.pass.index);
    const next = delta > 0 ? later[0] : earlier[earlier.length - 1];
    if (!next) {
      void vscode.window.showInformationMessage(
        `TVM Explorer: no ${delta > 0 ? 'later' : 'earlier'} pass.`,
      );
      return;
    }
    await this.show(cur.bundle, next);
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }

  private async show(bundle: Bundle, pass: PassInfo): Promise<void> {
    const { left, right } = diffUris(bundle, pass);
    this.open.set(`${left.toString()}|${right.toString()}`, { bundle, pass });
    this.current = { bundle, pass };
    await vscode.commands.executeCommand('vscode.diff', left, right, diffTitle(pass), {
      preview: true,
    });
    this.updateActive();
    void this.warmNeighbours(bundle, pass);
    const node = this.tree.nodeOf(bundle, pass);
    if (node && this.view.visible) {
      await this.view.reveal(node, { select: true, focus: false });
    }
  }

  /**
   * Loads the documents of the passes next to `pass` (as the pass view lists them) into the
   * editor's document model ahead of a step, so that the next diff renders at once instead of
   * waiting for its files to be read (and the server to see them opened).
   */
  private async warmNeighbours(bundle: Bundle, pass: PassInfo): Promise<void> {
    const passes = visiblePasses(await this.registry.passes(bundle));
    const later = passes.find((p) => p.index > pass.index);
    const earlier = [...passes].reverse().find((p) => p.index < pass.index);
    const uris = new Set<string>();
    for (const p of [later, earlier]) {
      if (!p) {
        continue;
      }
      const { left, right } = diffUris(bundle, p);
      for (const uri of [left, right]) {
        if (uri.scheme === 'file' && !this.warm.has(uri.toString())) {
          uris.add(uri.toString());
        }
      }
    }
    for (const uri of uris) {
      try {
        this.warm.set(uri, await vscode.workspace.openTextDocument(vscode.Uri.parse(uri)));
      } catch {
        // a document that cannot be read shows its error when its diff is opened
      }
    }
    // Keep only the documents around the current pass (VS Code frees the rest when unused).
    const keep = new Set<string>();
    for (const p of [later, earlier, pass]) {
      if (p) {
        const { left, right } = diffUris(bundle, p);
        keep.add(left.toString());
        keep.add(right.toString());
      }
    }
    for (const key of [...this.warm.keys()]) {
      if (!keep.has(key)) {
        this.warm.delete(key);
      }
    }
  }

  /** Sets `tvmExplorer.passDiffActive` and makes the active pass diff the current one. */
  private updateActive(): void {
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    let found: { bundle: Bundle; pass: PassInfo } | undefined;
    if (input instanceof vscode.TabInputTextDiff) {
      found = this.open.get(`${input.original.toString()}|${input.modified.toString()}`);
    }
    if (found) {
      this.current = found;
    }
    void vscode.commands.executeCommand('setContext', 'tvmExplorer.passDiffActive', !!found);
  }
}
