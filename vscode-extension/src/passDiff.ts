/**
 * Opens the IR before and after a pass side by side (`vscode.diff`) and steps to the
 * next/previous pass in the same tab. The sides are the virtual documents of passDiffSides.ts
 * (stable URIs per bundle, text = the pass's files): a step rewrites their text, so the diff
 * stays on screen and only its markings are recomputed. Which pass is shown: the status bar
 * item (also the button that opens the pass's own document) and the Passes view's selection.
 */
import * as vscode from 'vscode';
import { Bundle, BundleRegistry } from './bundles';
import { PassInfo } from './lsp_ext';
import { PassDiffSides, PASSDIFF_SCHEME, sideUri } from './passDiffSides';
import { PassTreeProvider, visiblePasses } from './passView';
import * as md from './markdown';
import { LargeFiles } from './largeFiles';

/** How many characters from the first change on are brought into view with it. */
const REVEAL_CHARACTERS = 40;

/** The files of a pass's diff (`before` undefined: the pass has nothing before it). */
export function passFiles(pass: PassInfo): { before: vscode.Uri | undefined; after: vscode.Uri } {
  return { before: pass.before ? vscode.Uri.parse(pass.before) : undefined, after: vscode.Uri.parse(pass.after) };
}

/** The two sides (virtual documents) of the diff tab of a bundle when it shows `pass`. */
export function diffUris(bundle: Bundle, pass: PassInfo): { left: vscode.Uri; right: vscode.Uri } {
  const { before, after } = passFiles(pass);
  const ext = after.path.slice(after.path.lastIndexOf('.'));
  return { left: sideUri(bundle.dir, 'before', before, ext), right: sideUri(bundle.dir, 'after', after, ext) };
}

/** What the diff shows, for the status bar: "FuseOps · relax pass #12". */
export function diffTitle(pass: PassInfo): string {
  return `${pass.name} · ${pass.stage} pass #${pass.index}${pass.changed ? '' : ' · unchanged'}`;
}

/** The tab title of a bundle's pass diff (it stays while stepping). */
export function tabTitle(bundle: Bundle): string {
  return `Pass Diff · ${bundle.dir.split(/[\\/]/).pop()}`;
}

/** Puts `line` at the top of both sides of the diff `left` ↔ `right` and the cursor on it at
 * `character`, with the characters from there in view (revealing only the line left a change at
 * column 200 off to the right of a side). A diff tab just opened lists its editors a moment
 * later: waits up to a second for them. */
export async function revealLine(left: vscode.Uri, right: vscode.Uri, line: number, character = 0): Promise<void> {
  const at = new vscode.Range(line, character, line, character);
  const changed = new vscode.Range(line, character, line, character + REVEAL_CHARACTERS);
  for (let tries = 0; tries < 20; tries++) {
    const editors = vscode.window.visibleTextEditors.filter((e) => [left.toString(), right.toString()].includes(e.document.uri.toString()));
    const modified = editors.find((e) => e.document.uri.toString() === right.toString());
    if (modified) {
      for (const editor of editors) {
        editor.selection = new vscode.Selection(at.start, at.start);
        editor.revealRange(changed, vscode.TextEditorRevealType.AtTop);
      }
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export class PassDiffs implements vscode.Disposable {
  /** The pass (and page of it) each open diff tab shows, by its right side's URI. */
  private readonly open = new Map<string, { bundle: Bundle; pass: PassInfo; page: number }>();
  private current: { bundle: Bundle; pass: PassInfo; page: number } | undefined;
  private readonly status = vscode.window.createStatusBarItem('tvmExplorer.passDiff', vscode.StatusBarAlignment.Left, 50);
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly registry: BundleRegistry,
    private readonly tree: PassTreeProvider,
    private readonly view: vscode.TreeView<unknown>,
    private readonly sides: PassDiffSides,
    private readonly largeFiles: LargeFiles,
  ) {
    this.status.name = 'TVM Explorer Pass Diff';
    this.status.command = 'tvmExplorer.openPassDocument';
    this.disposables.push(
      this.status,
      vscode.window.tabGroups.onDidChangeTabs(() => this.updateActive()),
      vscode.window.tabGroups.onDidChangeTabGroups(() => this.updateActive()),
    );
  }

  /** Opens the diff of pass `index` of the bundle with URI `bundleUri`. */
  async openPass(bundleUri: string, index: number): Promise<void> {
    const bundle = this.registry.list().find((b) => b.info.uri === bundleUri);
    if (!bundle) {
      void vscode.window.showWarningMessage(md.plain(`TVM Explorer: bundle not loaded: ${bundleUri}`));
      return;
    }
    const pass = (await this.registry.passes(bundle)).find((p) => p.index === index);
    if (!pass) {
      void vscode.window.showWarningMessage(md.plain(`TVM Explorer: no pass #${index} in ${bundle.dir}`));
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
      void vscode.window.showInformationMessage(md.plain(`TVM Explorer: no ${delta > 0 ? 'later' : 'earlier'} pass.`));
      return;
    }
    await this.show(cur.bundle, next);
  }

  /** Shows the next (`delta` 1) or previous page of a pass diff too big for one page
   * (passDiffAlign.ts: `PAGE_COST`), in the same tab. */
  async stepPage(delta: 1 | -1): Promise<void> {
    const cur = this.current;
    if (!cur) {
      void vscode.window.showInformationMessage('TVM Explorer: open a pass diff from the Passes view first.');
      return;
    }
    const { right } = diffUris(cur.bundle, cur.pass);
    const { page, pages } = this.sides.pageOf(right);
    const next = page + delta;
    if (next < 0 || next >= pages) {
      const where = pages > 1 ? `this is page ${page + 1} of ${pages}` : 'this pass diff has one page';
      void vscode.window.showInformationMessage('TVM Explorer: ' + where + '.');
      return;
    }
    await this.show(cur.bundle, cur.pass, next);
  }

  /**
   * Opens the bundle file of the focused side of the pass diff (the right one if neither is
   * focused) at the same selection: "Open This Pass's Document".
   */
  async openDocument(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const onSide = editor?.document.uri.scheme === PASSDIFF_SCHEME ? editor : undefined;
    const file = onSide ? this.sides.bundleFileOf(onSide.document.uri) : this.current && passFiles(this.current.pass).after;
    if (!file) {
      void vscode.window.showInformationMessage('TVM Explorer: this side of the diff has no document (nothing before the first pass).');
      return;
    }
    const selection = onSide && this.sides.fileSelection(onSide.document.uri, onSide.selection);
    await this.largeFiles.showDocumentAt(file, { preview: false, selection });
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }

  private async show(bundle: Bundle, pass: PassInfo, page = 0): Promise<void> {
    const { left, right } = diffUris(bundle, pass);
    const files = passFiles(pass);
    this.open.set(right.toString(), { bundle, pass, page });
    this.current = { bundle, pass, page };
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    const showing =
      input instanceof vscode.TabInputTextDiff &&
      input.original.toString() === left.toString() &&
      input.modified.toString() === right.toString();
    if (files.before) {
      this.sides.prepare(files.before, files.after, page);
    }
    if (!showing) {
      // A new diff input stays blank until VS Code has diffed its two texts (seconds for a
      // multi-MB TIR pass): open it on empty sides, then write the texts in place, which shows
      // them at once and marks the differences when the diff is done.
      await this.sides.show([
        [left, undefined],
        [right, undefined],
      ]);
      await vscode.commands.executeCommand('vscode.diff', left, right, tabTitle(bundle), { preview: true });
    }
    await this.sides.show(
      [
        [left, files.before],
        [right, files.after],
      ],
      () => this.revealFirstChange(left, right),
      page,
    );
    this.updateActive();
    void this.loadNeighbours(bundle, pass);
    const node = this.tree.nodeOf(bundle, pass);
    if (node && this.view.visible) {
      await this.view.reveal(node, { select: true, focus: false });
    }
  }

  /** Puts the first line where the sides differ at the top of both (a step would otherwise
   * leave the view where it was, on lines the pass did not touch), scrolled sideways to the
   * first character that differs when that lies off to the right. */
  private async revealFirstChange(left: vscode.Uri, right: vscode.Uri): Promise<void> {
    await revealLine(left, right, Math.max(0, this.sides.firstChangeOf(right)), this.sides.firstColumnOf(right));
  }

  /** Reads the files of the passes next to `pass` (as the pass view lists them) ahead of a step. */
  private async loadNeighbours(bundle: Bundle, pass: PassInfo): Promise<void> {
    const passes = visiblePasses(await this.registry.passes(bundle));
    const later = passes.find((p) => p.index > pass.index);
    const earlier = [...passes].reverse().find((p) => p.index < pass.index);
    const files: vscode.Uri[] = [];
    const steps: [vscode.Uri | undefined, vscode.Uri | undefined][] = [];
    const now = passFiles(pass);
    const pairs: [vscode.Uri | undefined, vscode.Uri][] = [[now.before, now.after]];
    for (const p of [later, earlier]) {
      if (p) {
        const { before, after } = passFiles(p);
        files.push(...(before ? [before, after] : [after]));
        steps.push([now.before, before], [now.after, after]);
        pairs.push([before, after]);
      }
    }
    await this.sides.keep(files, steps, pairs);
  }

  /** Sets `tvmExplorer.passDiffActive` and the status bar item; makes the active pass diff current. */
  private updateActive(): void {
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    let found: { bundle: Bundle; pass: PassInfo; page: number } | undefined;
    if (input instanceof vscode.TabInputTextDiff && input.modified.scheme === PASSDIFF_SCHEME) {
      found = this.open.get(input.modified.toString());
    }
    if (found) {
      this.current = found;
      const { pass, bundle } = found;
      const { before, after } = passFiles(pass);
      const base = (u: vscode.Uri | undefined) => (u ? u.path.split('/').pop() : '(nothing)');
      const { page, pages } = this.sides.pageOf(diffUris(bundle, pass).right);
      const paged = pages > 1 ? ` · page ${page + 1}/${pages}` : '';
      this.status.text = `$(git-compare) ${diffTitle(pass)}${paged}`;
      this.status.tooltip = `Pass diff of ${bundle.dir.split(/[\\/]/).pop()}: ${base(before)} → ${base(after)}${
        pages > 1 ? `\nPage ${page + 1} of ${pages} of the functions it changed (Alt+PageDown / Alt+PageUp)` : ''
      }\nClick to open this pass's document`;
      this.status.accessibilityInformation = { label: `Pass diff: ${diffTitle(pass)}` };
      this.status.show();
    } else {
      this.status.hide();
    }
    void vscode.commands.executeCommand('setContext', 'tvmExplorer.passDiffActive', !!found);
    const paged = !!found && this.sides.pageOf(diffUris(found.bundle, found.pass).right).pages > 1;
    void vscode.commands.executeCommand('setContext', 'tvmExplorer.passDiffPaged', paged);
  }
}
