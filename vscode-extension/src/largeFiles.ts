/**
 * Generated files of a bundle above the editor's size limit: VS Code shows a file larger than
 * `workbench.editorLargeFileConfirmation` (10 MB in a remote window such as code-server, 50 MB
 * in the web, 1 GB locally) only after a click, with no word of why. When a tab of such a file
 * of a bundle shows that page (Quick Open, the explorer, VS Code's own definition/references),
 * the extension says so once per opening, naming the file, its size and the limit, and offers
 * to open it anyway (raising the limit for this workspace) or to show one function of it: a
 * virtual document of that function's lines, which map back to the file so that hover,
 * definition and the rest are the server's answers for the file itself (passDiffSides.ts).
 * The extension's own opens (`LargeFiles.showDocumentAt`) load the document first, which VS Code shows
 * whatever the limit; above 50 MB it cannot be loaded, and the notice then offers the
 * function holding the place that was to be shown, opened there.
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
  const remote =
    !!vscode.env.remoteName || uri.scheme === 'vscode-remote' || (vscode.env.uiKind === vscode.UIKind.Web && uri.scheme === 'file');
  if (remote) {
    return 10;
  }
  return vscode.env.uiKind === vscode.UIKind.Web ? 50 : 1024;
}

/** Words before a parenthesis in a C/CUDA signature that are not the function's name. */
const ATTRIBUTES: ReadonlySet<string> = new Set(['__launch_bounds__', '__attribute__', '__declspec', 'alignas', 'TVM_ATTRIBUTE_UNUSED']);

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
    const name =
      /^define\b.*?@("?)([^\s("]+)\1\(/.exec(line)?.[2] ??
      [...line.matchAll(/([A-Za-z_]\w*)\s*\(/g)].map((m) => m[1]).find((n) => !ATTRIBUTES.has(n));
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
  private readonly disposables: vscode.Disposable[] = [];
  private cached: { key: string; text: Promise<string> } | undefined;
  /** Where the extension's own opens of a file meant to put the cursor (Layer Places, jumps,
   * Reveal in Model, Numerics, a compile's first kernel): the function view opens there. */
  private readonly targets = new Map<string, vscode.Position>();
  /** Files told about while their tab is open (a new target is told anew). */
  private readonly told = new Set<string>();

  constructor(
    private readonly registry: BundleRegistry,
    private readonly sides: PassDiffSides,
  ) {
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
    );
  }

  /**
   * `showTextDocument` for the extension's own opens of bundle files: notes where the cursor was
   * meant to go, and answers undefined (no text editor) when the editor does not display the file
   * because of its size — the notification of `check` then offers the way in.
   */
  async showDocumentAt(uri: vscode.Uri, options: vscode.TextDocumentShowOptions): Promise<vscode.TextEditor | undefined> {
    if (options.selection) {
      this.targets.set(uri.toString(), options.selection.start);
      this.told.delete(uri.toString());
    }
    try {
      const editor = await vscode.window.showTextDocument(uri, options);
      if (editor.document.uri.toString() === uri.toString()) {
        this.targets.delete(uri.toString());
        return editor;
      }
    } catch (err) {
      const size = await vscode.workspace.fs.stat(uri).then(
        (st) => st.size,
        () => 0,
      );
      if (size <= editorLimitMb(uri) * MB) {
        throw err;
      }
    }
    // A tab already open raises no tab event: check it here.
    void this.check(uri);
    return undefined;
  }

  private async check(uri: vscode.Uri): Promise<void> {
    const bundle = this.registry.bundleOf(uri);
    if (!bundle || this.told.has(uri.toString())) {
      return;
    }
    const size = await vscode.workspace.fs.stat(uri).then(
      (s) => s.size,
      () => 0,
    );
    const limit = editorLimitMb(uri);
    if (size <= limit * MB || this.told.has(uri.toString())) {
      return;
    }
    // A document the extension host has loaded (the extension's own opens) is shown whatever its
    // size; only a tab without a text editor is VS Code's "not displayed" page.
    await new Promise((r) => setTimeout(r, 500));
    if (this.told.has(uri.toString()) || vscode.window.visibleTextEditors.some((e) => e.document.uri.toString() === uri.toString())) {
      return;
    }
    this.told.add(uri.toString());
    const name = path.relative(path.dirname(bundle.dir), uri.fsPath);
    const mb = (size / MB).toFixed(1);
    const served =
      size / MB <= EXTENSION_LIMIT_MB
        ? ''
        : ` Above ${EXTENSION_LIMIT_MB} MB VS Code gives extensions no text: hover and definition answer only in a function's view.`;
    const anyway = 'Open Anyway';
    const target = this.targets.get(uri.toString());
    this.targets.delete(uri.toString());
    const at = target && functionsOf(await this.read(uri)).find((f) => f.start <= target.line && target.line <= f.end);
    const part = at ? `Show ${at.name}` : 'Show One Function…';
    const choice = await vscode.window.showWarningMessage(
      `${name} is ${mb} MB, above this window's ${limit} MB limit for the text editor ` +
        `(${SETTING}), so VS Code does not display it.${served} Open it anyway (raises the limit ` +
        `for this workspace to ${Math.ceil(size / MB) + 1} MB), or show one of its functions, with hovers and definitions.`,
      anyway,
      part,
    );
    if (choice === anyway) {
      await this.openAnyway(uri, size, target);
    } else if (choice === part && at && target) {
      await this.showFunction(uri, at, target);
    } else if (choice === part) {
      await this.pickFunction(uri);
    }
  }

  private async openAnyway(uri: vscode.Uri, size: number, at?: vscode.Position): Promise<void> {
    const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    await vscode.workspace.getConfiguration().update(SETTING, Math.ceil(size / MB) + 1, target);
    // The editor placeholder does not look at the setting again: open the tab anew.
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === uri.toString());
    await vscode.window.tabGroups.close(tabs);
    const editor = await vscode.window.showTextDocument(uri, { preview: false, selection: at && new vscode.Range(at, at) });
    if (at) {
      editor.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.InCenter);
    }
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
    const parts = functionsOf(await this.read(file));
    if (parts.length === 0) {
      void vscode.window.showWarningMessage(`${path.basename(file.fsPath)} has no function definitions to show.`);
      return;
    }
    const picked = await vscode.window.showQuickPick(
      parts.map((p) => ({ label: p.name, description: `lines ${p.start + 1}–${p.end + 1} (${p.end - p.start + 1} lines)`, part: p })),
      {
        title: `A function of ${path.basename(file.fsPath)}`,
        placeHolder: 'Function to show (hover and definition work in it)',
        matchOnDescription: false,
      },
    );
    if (picked) {
      await this.showFunction(file, picked.part);
    }
  }

  /** Opens the view of one function of `file` (the cursor at `at`, a position of the file). */
  private async showFunction(file: vscode.Uri, { name, start, end }: FunctionPart, at?: vscode.Position): Promise<void> {
    const bundle = this.registry.bundleOf(file);
    const lines = (await this.read(file)).split('\n').slice(start, end + 1);
    const view = vscode.Uri.from({
      scheme: PASSDIFF_SCHEME,
      path: `/${path.basename(bundle?.dir ?? 'bundle')}/${path.basename(file.fsPath)}/${name.replace(/[\\/]/g, '_')}${path.extname(file.fsPath)}`,
    });
    this.sides.showPart(view, file, lines.join('\n'), [{ side: 0, file: start, count: lines.length }]);
    const cursor = at && new vscode.Position(at.line - start, at.character);
    const editor = await vscode.window.showTextDocument(view, { preview: false, selection: cursor && new vscode.Range(cursor, cursor) });
    if (cursor) {
      editor.revealRange(new vscode.Range(cursor, cursor), vscode.TextEditorRevealType.InCenter);
    }
  }

  /** The text of a file (the last one read is kept: a user picks functions of one file). */
  private read(file: vscode.Uri): Promise<string> {
    if (this.cached?.key !== file.toString()) {
      const text = Promise.resolve(vscode.workspace.fs.readFile(file)).then((b) => new TextDecoder().decode(b));
      this.cached = { key: file.toString(), text };
      text.catch(() => (this.cached = undefined));
    }
    return this.cached.text;
  }

  dispose(): void {
    vscode.Disposable.from(...this.disposables).dispose();
  }
}
