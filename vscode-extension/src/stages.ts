/**
 * Open Stages Side by Side: a bundle's model document, last Relax, final TIR and generated code
 * in four columns, kept in sync. As the cursor moves in any document of the bundle, the ranges
 * of the same layers in the other stage documents (`tvmExplorer/stageRanges`: through fusion
 * and one-to-many lowering) are highlighted and scrolled into view; a line with no origin
 * clears them. The server answers; this module only opens, asks and paints.
 */
import * as vscode from 'vscode';
import * as lc from 'vscode-languageclient/node';
import type { BundleRegistry } from './bundles';
import type { ServerManager } from './client';
import type { LargeFiles } from './largeFiles';
import * as ext from './lsp_ext';
import type { PassDiffSides } from './passDiffSides';

/** Cursor moves closer together than this make one request (holding an arrow key). */
const DEBOUNCE_MS = 120;
/** How long the visible editors must stay without a stage document before the session ends. */
const SETTLE_MS = 500;
const COLUMNS = [vscode.ViewColumn.One, vscode.ViewColumn.Two, vscode.ViewColumn.Three, vscode.ViewColumn.Four];
const STAGE_NAMES: Readonly<Record<ext.StageDocument['stage'], string>> = {
  model: 'model',
  relax: 'Relax',
  tir: 'TIR',
  code: 'generated code',
};

/** The stage documents a side-by-side shows: the first of each stage (the main code first). */
export function columnsOf(documents: readonly ext.StageDocument[]): ext.StageDocument[] {
  const seen = new Set<string>();
  return documents.filter((d) => !seen.has(d.stage) && seen.add(d.stage));
}

/**
 * A server note in a few words, for the start of a line: "op 2 CONV_2D: input dequantize only
 * — in the kernel of op 1 MAX_POOL_2D" → "op 2's input dequantize only, in op 1's kernel"; "…
 * — a kernel of its own; …" → "op 5's input dequantize only, a kernel of its own".
 */
export function compactNote(text: string): string {
  const m = /^op (\d+) [^:]*: (.*?) only — (?:in the kernel of op (\d+)|(a kernel of its own))/.exec(text);
  if (!m) {
    return text;
  }
  return `op ${m[1]}'s ${m[2]} only, ${m[3] ? `in op ${m[3]}'s kernel` : m[4]}`;
}

export class StageSync implements vscode.Disposable {
  /** The statement itself (theme's find-match colours: readable in light, dark and high contrast). */
  private readonly exact: vscode.TextEditorDecorationType;
  /** Its whole lines (a colour of our own, `tvmExplorer.stageSyncLineBackground`), so a
   * statement off to the right of a narrow column still shows. */
  private readonly lines: vscode.TextEditorDecorationType;
  /** After the first range of a function holding only a part of the layers: what it is. */
  private readonly note: vscode.TextEditorDecorationType;
  private readonly status: vscode.StatusBarItem;
  private readonly disposables: vscode.Disposable[] = [];
  /** The bundle shown side by side (its directory URI as the server names it), if any. */
  private bundleUri: string | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closeCheck: ReturnType<typeof setTimeout> | undefined;
  /** Bumped by every cursor move: an answer to an older one is dropped. */
  private generation = 0;
  /** Editors painted by the last answer (cleared by the next). */
  private painted = new Set<vscode.TextEditor>();
  private opening = false;

  constructor(
    private readonly server: ServerManager,
    private readonly registry: BundleRegistry,
    private readonly largeFiles: LargeFiles,
    private readonly sides: PassDiffSides,
  ) {
    this.exact = vscode.window.createTextEditorDecorationType({
      backgroundColor: new vscode.ThemeColor('editor.findMatchHighlightBackground'),
      borderColor: new vscode.ThemeColor('editor.findMatchHighlightBorder'),
      borderStyle: 'solid',
      borderWidth: '1px',
      overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.findMatchForeground'),
      overviewRulerLane: vscode.OverviewRulerLane.Center,
    });
    this.lines = vscode.window.createTextEditorDecorationType({
      backgroundColor: new vscode.ThemeColor('tvmExplorer.stageSyncLineBackground'),
      isWholeLine: true,
    });
    this.note = vscode.window.createTextEditorDecorationType({
      before: { color: new vscode.ThemeColor('editorCodeLens.foreground'), fontStyle: 'italic' },
    });
    this.status = vscode.window.createStatusBarItem('tvmExplorer.stageSync', vscode.StatusBarAlignment.Left, 10);
    this.status.name = 'TVM Explorer: Stages Side by Side';
    this.disposables.push(
      this.exact,
      this.lines,
      this.note,
      this.status,
      vscode.window.onDidChangeTextEditorSelection((e) => this.cursorMoved(e.textEditor)),
      // Focusing another column shows what its cursor is on, without moving it.
      vscode.window.onDidChangeActiveTextEditor((e) => e && this.cursorMoved(e)),
      vscode.window.onDidChangeVisibleTextEditors(() => this.stopIfClosed()),
      registry.onDidChange(() => this.bundleReloaded()),
    );
  }

  /** Opens the stages of the bundle of `target` (a URI or URI string; default: the active
   * editor's bundle, else the only one loaded, else a pick) in four columns. */
  async open(target?: vscode.Uri | string): Promise<void> {
    if (this.opening) {
      return; // a second run while the columns open (a double click in the palette)
    }
    this.opening = true;
    try {
      await this.openColumns(target);
    } finally {
      this.opening = false;
    }
  }

  private async openColumns(target?: vscode.Uri | string): Promise<void> {
    const client = this.server.client;
    if (!client) {
      void vscode.window.showWarningMessage('TVM Explorer: the language server is not running.');
      return;
    }
    const bundleUri = await this.chooseBundle(target);
    if (!bundleUri) {
      return;
    }
    const result = await client.sendRequest(ext.stageDocuments, { bundle: bundleUri });
    const shown = columnsOf(result?.documents ?? []);
    if (shown.length === 0) {
      void vscode.window.showWarningMessage(`TVM Explorer: ${bundleUri} has no stage documents to show.`);
      return;
    }
    this.bundleUri = bundleUri;
    const start = vscode.window.activeTextEditor;
    const from = start?.document.uri.toString();
    const editors: vscode.TextEditor[] = [];
    for (const [i, doc] of shown.entries()) {
      const uri = client.protocol2CodeConverter.asUri(doc.uri);
      // The document the command was run from opens in its column with its cursor where it was.
      const selection = uri.toString() === from ? start?.selection : undefined;
      const editor = await this.largeFiles.showDocumentAt(uri, {
        viewColumn: COLUMNS[i],
        preview: false,
        preserveFocus: i > 0,
        ...(selection && { selection }),
      });
      if (editor) {
        editors.push(editor);
      }
    }
    // The focus goes back to the document the command was run from when it is one of the
    // columns (its cursor then keeps its place), else to the first column.
    const focus = editors.find((e) => e.document.uri.toString() === from) ?? editors[0];
    if (focus) {
      await vscode.window.showTextDocument(focus.document, { viewColumn: focus.viewColumn, preserveFocus: false });
    }
    this.status.text = '$(split-horizontal) Stages in sync';
    this.status.tooltip = `Moving the cursor in ${shown.map((d) => STAGE_NAMES[d.stage]).join(', ')} highlights the same layers in the others.`;
    this.status.show();
    // What the cursor of the focused column is on, at once (the document the command was run
    // from keeps its cursor: its line is the one to show).
    const active = vscode.window.activeTextEditor;
    if (active) {
      this.cursorMoved(active);
    }
  }

  private async chooseBundle(target?: vscode.Uri | string): Promise<string | undefined> {
    const bundles = this.registry.list();
    const asUri = (t: vscode.Uri | string) => (typeof t === 'string' ? vscode.Uri.parse(t) : t);
    const from = target ? asUri(target) : vscode.window.activeTextEditor?.document.uri;
    const file = from ? (this.sides.bundleFileOf(from) ?? from) : undefined;
    const own = file ? (this.registry.bundleOf(file) ?? bundles.find((b) => b.dir === file.fsPath)) : undefined;
    if (own) {
      return own.info.uri;
    }
    if (bundles.length === 1) {
      return bundles[0].info.uri;
    }
    if (bundles.length === 0) {
      void vscode.window.showWarningMessage('TVM Explorer: no bundle is loaded; compile a model first (Compile Model…).');
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(
      bundles.map((b) => ({ label: b.info.model || b.dir, description: b.dir, uri: b.info.uri })),
      { placeHolder: 'Bundle to show side by side' },
    );
    return pick?.uri;
  }

  private inSession(uri: vscode.Uri): boolean {
    if (!this.bundleUri) {
      return false;
    }
    const bundle = this.registry.bundleOf(this.sides.bundleFileOf(uri) ?? uri);
    return bundle?.info.uri === this.bundleUri;
  }

  private cursorMoved(editor: vscode.TextEditor): void {
    if (!this.inSession(editor.document.uri)) {
      return;
    }
    clearTimeout(this.timer);
    const generation = ++this.generation;
    this.timer = setTimeout(() => void this.sync(editor, generation), DEBOUNCE_MS);
  }

  private async sync(editor: vscode.TextEditor, generation: number): Promise<void> {
    const client = this.server.client;
    if (!client) {
      return;
    }
    let result: ext.StageRangesResult | null = null;
    try {
      result = await client.sendRequest(ext.stageRanges, this.sides.cursorParams(client, editor));
    } catch (err) {
      client.outputChannel.appendLine(`${ext.stageRanges.method} failed: ${String(err)}`);
    }
    if (generation !== this.generation) {
      return; // the cursor moved on meanwhile
    }
    this.paint(client, editor, result);
  }

  private paint(client: lc.LanguageClient, source: vscode.TextEditor, result: ext.StageRangesResult | null): void {
    const byUri = new Map((result?.documents ?? []).map((d) => [client.protocol2CodeConverter.asUri(d.uri).toString(), d]));
    const painted = new Set<vscode.TextEditor>();
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor === source) {
        continue;
      }
      const found = byUri.get(editor.document.uri.toString());
      const ranges = found ? found.ranges.map((r) => client.protocol2CodeConverter.asRange(r)) : [];
      if (ranges.length === 0 && !this.painted.has(editor)) {
        continue;
      }
      editor.setDecorations(this.exact, ranges);
      editor.setDecorations(this.lines, ranges);
      // At the start of the line: after the statement it lay off to the right of a narrow column.
      const notes = (found?.notes ?? []).map((n) => {
        const line = n.range.start.line;
        return {
          range: new vscode.Range(line, 0, line, 0),
          renderOptions: { before: { contentText: `${compactNote(n.text)} ▸ ` } },
          hoverMessage: n.text,
        };
      });
      if (notes.length > 0 || this.painted.has(editor)) {
        editor.setDecorations(this.note, notes);
      }
      if (ranges.length > 0) {
        painted.add(editor);
        // The column shows the server's focus (the same statement, else the layer's own
        // kernel; not a kernel holding only its input dequantize, which may come first in the
        // file), or the first range. A column already showing it stays put (the cursor moving
        // inside a kernel must not make the others jump). To the line's start: revealing the
        // range itself scrolled narrow columns sideways to a deeply indented statement, hiding
        // every line's beginning.
        const focus = found?.focus ? client.protocol2CodeConverter.asRange(found.focus) : ranges[0];
        const onScreen = editor.visibleRanges.some((v) => v.intersection(focus));
        if (!onScreen) {
          const line = focus.start.line;
          editor.revealRange(new vscode.Range(line, 0, line, 0), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
        }
      }
    }
    // The source editor shows the user's own cursor: nothing of the last answer stays there.
    if (this.painted.has(source)) {
      source.setDecorations(this.exact, []);
      source.setDecorations(this.lines, []);
      source.setDecorations(this.note, []);
    }
    this.painted = painted;
    const layers = result?.layers ?? [];
    this.status.text = layers.length
      ? `$(split-horizontal) ${layers
          .slice(0, 2)
          .map((l) => `${l.opcode} ${l.name}`)
          .join(', ')}${layers.length > 2 ? ` +${layers.length - 2}` : ''}`
      : '$(split-horizontal) Stages in sync';
    // What the highlighted functions that are not the layers' kernels hold of them.
    const notes = [...new Set((result?.documents ?? []).flatMap((d) => (d.notes ?? []).map((n) => n.text)))];
    this.status.tooltip = notes.length
      ? `Stages in sync. Also highlighted, outside the layer's own kernel:\n${notes.map((n) => `• ${n}`).join('\n')}`
      : 'Stages in sync: moving the cursor in any column highlights the same layers in the others.';
  }

  /**
   * Ends the session once none of its documents is visible. Not while the columns open, and
   * only once the editors have settled: replacing the editor of a column reports no visible
   * editor for a moment (opening the stages from the generated code, the only column's
   * editor gives way to the model document), which ended the session before it began.
   */
  private stopIfClosed(): void {
    clearTimeout(this.closeCheck);
    if (!this.bundleUri || this.opening) {
      return;
    }
    this.closeCheck = setTimeout(() => {
      const open = vscode.window.visibleTextEditors.some((e) => this.inSession(e.document.uri));
      if (!open && !this.opening) {
        this.bundleUri = undefined;
        this.painted.clear();
        this.status.hide();
      }
    }, SETTLE_MS);
  }

  private bundleReloaded(): void {
    const editor = vscode.window.activeTextEditor;
    if (editor && this.inSession(editor.document.uri)) {
      this.cursorMoved(editor); // the recompiled bundle's ranges
    }
  }

  dispose(): void {
    clearTimeout(this.timer);
    clearTimeout(this.closeCheck);
    this.disposables.forEach((d) => d.dispose());
  }
}
