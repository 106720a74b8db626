/**
 * Generated files of a bundle above the editor's size limit: VS Code shows a file larger than
 * `workbench.editorLargeFileConfirmation` (10 MB in a remote window such as code-server, 50 MB
 * in the web, 1 GB locally) only after a click, with no word of why. When a tab opens on such
 * a file of a bundle (from the Passes view, a jump, a definition, Quick Open), the extension
 * says so once, naming the file, its size and the limit, and offers to open it anyway (raising
 * the limit for this workspace) or to show one function of it: a virtual document of that
 * function's lines, which map back to the file so that hover, definition and the rest are the
 * server's answers for the file itself (passDiffSides.ts).
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { BundleRegistry } from './bundles';
import { PASSDIFF_SCHEME, PassDiffSides } from './passDiffSides';

const MB = 1024 * 1024;
const SETTING = 'workbench.editorLargeFileConfirmation';
/** VS Code hands no document above this size to extensions: no hover even when open. */
const EXTENSION_LIMIT_MB = 50;

/** The limit (MB) above which the editor asks before showing `uri`. */
export function editorLimitMb(uri: vscode.Uri): number {
  const set = vscode.workspace.getConfiguration(undefined, uri).inspect<number>(SETTING);
  const own = set?.workspaceFolderValue ?? set?.workspaceValue ?? set?.globalValue;
  if (typeof own === 'number') {
    return own;
  }
  // VS Code's own default depends on where the file lives: a file of a web window's `file:`
  // scheme is on the remote machine (code-server).
  const remote = !!vscode.env.remoteName || uri.scheme === 'vscode-remote'
    || (vscode.env.uiKind === vscode.UIKind.Web && uri.scheme === 'file');
  if (remote) {
    return 10;
  }
  return vscode.env.uiKind === vscode.UIKind.Web ? 50 : 1024;
}

export interface FunctionPart {
  name: string;
  /** First and last line (0-based, inclusive) of the function in its file. */
  start: number;
  end: number;
}

/** The functions of a generated file (LLVM IR `define … {`…`}`, C/CUDA `… name(…) {`…`}`). */
export function functionsOf(text: string): FunctionPart[] {
  const lines = text.split('\n');
  const out: FunctionPart[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (!line.trimEnd().endsWith('{') || /^\s/.test(line) || line.startsWith('}')) {
      continue;
    }
    const name = /^define\b.*?@("?)([^\s("]+)\1\(/.exec(line)?.[2] ?? /([A-Za-z_]\w*)\s*\(/.exec(line)?.[1];
    if (!name || /^(struct|typedef|union|enum|namespace|extern "C" \{)/.test(line)) {
      continue;
    }
    let end = i + 1;
    while (end < lines.length && !lines[end].startsWith('}')) {
      end++;
    }
    out.push({ name, start: i, end: Math.min(end, lines.length - 1) });
    i = end;
  }
  return out;
}

export class LargeFiles implements vscode.Disposable {
  /** Files told about while their tab is open. */
  private readonly told = new Set<string>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly registry: BundleRegistry, private readonly sides: PassDiffSides) {
    this.disposables.push(
      vscode.window.tabGroups.onDidChangeTabs((e) => {
        for (const tab of [...e.opened, ...e.changed]) {
          if (tab.input instanceof vscode.TabInputText) {
            void this.check(tab.input.uri);
          }
        }
        // Told once per opening: a file closed and opened again is told again.
        for (const tab of e.closed) {
          if (tab.input instanceof vscode.TabInputText) {
            this.told.delete(tab.input.uri.toString());
          }
        }
      }),
      vscode.commands.registerCommand('tvmExplorer.showFunctionOfFile', (uri?: vscode.Uri) => this.pickFunction(uri)),
    );
  }

  private async check(uri: vscode.Uri): Promise<void> {
    const bundle = this.registry.bundleOf(uri);
    if (!bundle || this.told.has(uri.toString())) {
      return;
    }
    const size = await vscode.workspace.fs.stat(uri).then((s) => s.size, () => 0);
    const limit = editorLimitMb(uri);
    if (size <= limit * MB || this.told.has(uri.toString())) {
      return;
    }
    this.told.add(uri.toString());
    const name = path.relative(path.dirname(bundle.dir), uri.fsPath);
    const mb = (size / MB).toFixed(1);
    const served = size / MB <= EXTENSION_LIMIT_MB ? ''
      : ` Above ${EXTENSION_LIMIT_MB} MB VS Code gives extensions no text: hover and definition answer only in a function's view.`;
    const anyway = 'Open Anyway';
    const part = 'Show One Function…';
    const choice = await vscode.window.showWarningMessage(
      `${name} is ${mb} MB, above this window's ${limit} MB limit for the text editor `
        + `(${SETTING}), so VS Code does not display it.${served} Open it anyway (raises the limit `
        + `for this workspace to ${Math.ceil(size / MB) + 1} MB), or show one of its functions, with hovers and definitions.`,
      anyway,
      part,
    );
    if (choice === anyway) {
      await this.openAnyway(uri, size);
    } else if (choice === part) {
      await this.pickFunction(uri);
    }
  }

  private async openAnyway(uri: vscode.Uri, size: number): Promise<void> {
    const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    await vscode.workspace.getConfiguration().update(SETTING, Math.ceil(size / MB) + 1, target);
    // The editor placeholder does not look at the setting again: open the tab anew.
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === uri.toString());
    await vscode.window.tabGroups.close(tabs);
    await vscode.window.showTextDocument(uri, { preview: false });
  }

  /** Asks for a function of `uri` (default: the active tab's file) and opens its view. */
  async pickFunction(uri?: vscode.Uri): Promise<void> {
    const active = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    const file = uri ?? (active instanceof vscode.TabInputText ? active.uri : undefined);
    const bundle = file && this.registry.bundleOf(file);
    if (!file || !bundle) {
      void vscode.window.showInformationMessage('Show One Function: open a generated file of a bundle first.');
      return;
    }
    const text = new TextDecoder().decode(await vscode.workspace.fs.readFile(file));
    const parts = functionsOf(text);
    if (parts.length === 0) {
      void vscode.window.showWarningMessage(`${path.basename(file.fsPath)} has no function definitions to show.`);
      return;
    }
    const picked = await vscode.window.showQuickPick(
      parts.map((p) => ({ label: p.name, description: `lines ${p.start + 1}–${p.end + 1} (${p.end - p.start + 1} lines)`, part: p })),
      { title: `A function of ${path.basename(file.fsPath)}`, placeHolder: 'Function to show (hover and definition work in it)', matchOnDescription: false },
    );
    if (!picked) {
      return;
    }
    const { name, start, end } = picked.part;
    const lines = text.split('\n').slice(start, end + 1);
    const bundleName = path.basename(bundle.dir);
    const view = vscode.Uri.from({
      scheme: PASSDIFF_SCHEME,
      path: `/${bundleName}/${path.basename(file.fsPath)}/${name.replace(/[\\/]/g, '_')}${path.extname(file.fsPath)}`,
    });
    this.sides.showPart(view, file, lines.join('\n'), [{ side: 0, file: start, count: lines.length }]);
    await vscode.window.showTextDocument(view, { preview: false });
  }

  dispose(): void {
    vscode.Disposable.from(...this.disposables).dispose();
  }
}
