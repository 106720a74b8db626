/**
 * The two sides of a bundle's pass diff tab: virtual documents with stable URIs
 * (`tvm-explorer-passdiff:/<bundle>/before.relax` and `.../after.relax`, the extension keeping
 * the language) whose text is the bundle file each side stands for at the moment. Stepping to
 * another pass rewrites their text (`onDidChange`): VS Code updates the open diff in place and
 * recomputes its markings, where a diff with new URIs would be a new input that it shows blank
 * until the new diff is computed and laid out.
 *
 * Between two IR documents (Relax, TIR) the sides hold only the functions the pass changed,
 * aligned by name as the server says (`tvmExplorer/passDiffAlignment`, laid out by
 * passDiffAlign.ts); otherwise (or with no server to ask) a side's text is its whole file. Either way a
 * side's lines map to lines of its file (`fileRange`), so language features at a position of a
 * side are the server's answers for that file at the mapped position (`registerSideFeatures`),
 * and commands that ask the server about the cursor use `bundleFileOf` and `cursorParams`.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import * as lc from 'vscode-languageclient/node';
import { ServerManager } from './client';
import { LineEdit, lineEdits } from './lineEdits';
import * as ext from './lsp_ext';
import { alignByFunction, firstColumnOf, firstDifference, Segment, toFileLine, toSideLine } from './passDiffAlign';

export const PASSDIFF_SCHEME = 'tvm-explorer-passdiff';

/** A side longer than this written into an empty document gets its head first (`update`). */
const HEAD_CHARS = 256 * 1024;
/** The head: the lines down to the first change and this many after it. */
const HEAD_LINES = 400;

const IR_EXTENSIONS: ReadonlySet<string> = new Set(['.relax', '.tir']);
const isIr = (f: vscode.Uri | undefined) => !!f && IR_EXTENSIONS.has(path.extname(f.path));

/** The side URI of a bundle's diff showing `file` (or nothing: `none`) as side `side`. */
export function sideUri(bundleDir: string, side: 'before' | 'after', file: vscode.Uri | undefined, ext: string): vscode.Uri {
  const name = bundleDir.split(/[\\/]/).pop() ?? 'bundle';
  const suffix = file ? path.extname(file.path) : ext;
  return vscode.Uri.from({ scheme: PASSDIFF_SCHEME, path: `/${name}/${side}${suffix}` });
}

/** Content provider of the sides; holds the text of the files around the shown pass. */
export class PassDiffSides implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  /** Text of bundle files by URI: the shown ones and those loaded ahead of a step. */
  private readonly texts = new Map<string, Promise<string>>();
  /** The text each side shows now (its file, or the aligned functions). */
  private readonly sideTexts = new Map<string, string>();
  /** The sides of diffs by `<before>|<after>`: the shown one and those of the next steps. */
  private readonly pairs = new Map<string, Promise<PairContents>>();
  /** The server's alignment of the functions of those diffs' documents, by `<before>|<after>`. */
  private readonly alignments = new Map<string, Promise<ext.PassDiffAlignmentResult | null | undefined>>();
  private updates: Promise<void> = Promise.resolve();
  /** Line edits between files (`<from>|<to>`), worked out ahead for the likely next steps. */
  private readonly edits = new Map<string, Promise<LineEdit[]>>();

  /** Which file each open side shows (undefined: the empty side before a first pass). */
  private readonly shownFiles = new Map<string, vscode.Uri | undefined>();
  /** How each open side's lines map to its file (undefined: line n is line n). */
  private readonly shownSegments = new Map<string, Segment[] | undefined>();
  /** Where the two sides of a bundle's diff first differ (line, character), and its pages, by
   * the right side's URI. */
  private readonly firstChanges = new Map<string, { line: number; character: number; page: number; pages: number }>();

  constructor(
    private readonly server?: ServerManager,
    private readonly output?: vscode.OutputChannel,
  ) {}

  /** The bundle file a document stands for: itself, or the file a pass diff side shows now. */
  bundleFileOf(uri: vscode.Uri): vscode.Uri | undefined {
    return uri.scheme === PASSDIFF_SCHEME ? this.shownFiles.get(uri.toString()) : uri;
  }

  /** A position of a document as a position of the file it stands for (undefined on a line of
   * a side's own: its note, a separator). */
  filePosition(uri: vscode.Uri, pos: vscode.Position): vscode.Position | undefined {
    if (uri.scheme !== PASSDIFF_SCHEME) {
      return pos;
    }
    const line = toFileLine(this.shownSegments.get(uri.toString()), pos.line);
    return line === undefined ? undefined : new vscode.Position(line, pos.character);
  }

  /** A range of a side's file as a range of the side (undefined when the side does not show it). */
  sideRange(side: vscode.Uri, range: vscode.Range): vscode.Range | undefined {
    const segments = this.shownSegments.get(side.toString());
    const start = toSideLine(segments, range.start.line);
    const end = toSideLine(segments, range.end.line);
    return start === undefined || end === undefined ? undefined : new vscode.Range(start, range.start.character, end, range.end.character);
  }

  /** A selection of a side as a selection of its file (for opening the file there). */
  fileSelection(uri: vscode.Uri, sel: vscode.Selection): vscode.Selection | undefined {
    const a = this.filePosition(uri, sel.anchor);
    const b = this.filePosition(uri, sel.active);
    return a && b ? new vscode.Selection(a, b) : undefined;
  }

  /** The first line where the sides of the diff whose right side is `right` differ (-1: none). */
  firstChangeOf(right: vscode.Uri): number {
    return this.firstChanges.get(right.toString())?.line ?? -1;
  }

  /** The first character of that line where they differ. */
  firstColumnOf(right: vscode.Uri): number {
    return this.firstChanges.get(right.toString())?.character ?? 0;
  }

  /** The page the diff whose right side is `right` shows (0-based) and how many it has. */
  pageOf(right: vscode.Uri): { page: number; pages: number } {
    const got = this.firstChanges.get(right.toString());
    return { page: got?.page ?? 0, pages: got?.pages ?? 1 };
  }

  /** Request parameters for the cursor of `editor`, on the bundle file it shows. */
  cursorParams(client: lc.LanguageClient, editor: vscode.TextEditor): lc.TextDocumentPositionParams {
    const uri = this.bundleFileOf(editor.document.uri) ?? editor.document.uri;
    const pos = this.filePosition(editor.document.uri, editor.selection.active) ?? editor.selection.active;
    return {
      textDocument: { uri: client.code2ProtocolConverter.asUri(uri) },
      position: client.code2ProtocolConverter.asPosition(pos),
    };
  }

  /**
   * Makes each side show its file (undefined: empty) and rewrites the text of the open ones
   * with line edits, all in one workspace edit (both sides change in the same frame). Firing
   * `onDidChange` instead would have VS Code compute a character diff of each whole text in
   * its editor worker first, for up to a second. Updates run one after the other.
   */
  show(sides: [vscode.Uri, vscode.Uri | undefined][], onHead?: () => Promise<void>, page = 0): Promise<void> {
    const run = this.updates.then(() => this.update(sides, onHead, page));
    this.updates = run.catch(() => undefined);
    return run;
  }

  /** The texts and line maps of the sides `[left, right]` showing `before` → `after`. */
  private async sideContents(
    sides: [vscode.Uri, vscode.Uri | undefined][],
    page: number,
  ): Promise<{ text: string; segments?: Segment[] }[]> {
    if (sides.length !== 2) {
      return Promise.all(sides.map(async ([, file]) => ({ text: file ? await this.text(file) : '' })));
    }
    const pair = await this.pairOf(sides[0][1], sides[1][1], page);
    this.firstChanges.set(sides[1][0].toString(), {
      line: pair.firstChange,
      character: pair.firstColumn,
      page: pair.page,
      pages: pair.pages,
    });
    return pair.sides;
  }

  /** Starts working out the sides of `before` → `after` (while a diff tab opens). */
  prepare(before: vscode.Uri | undefined, after: vscode.Uri | undefined, page = 0): void {
    this.pairOf(before, after, page).catch(() => undefined);
  }

  /** The sides of page `page` of the diff `before` → `after` (worked out once; `keep` does it
   * ahead of a step). */
  private pairOf(before: vscode.Uri | undefined, after: vscode.Uri | undefined, page = 0): Promise<PairContents> {
    const key = `${transition(before, after)}|${page}`;
    let got = this.pairs.get(key);
    if (!got) {
      got = Promise.all([before ? this.text(before) : '', after ? this.text(after) : '', this.alignmentOf(before, after)]).then(
        ([a, b, alignment]) => {
          if (alignment === undefined && before && after) {
            this.pairs.delete(key); // whole documents for now: asked again when shown again
          }
          const aligned = alignment ? alignByFunction(a, b, alignment, { page }) : undefined;
          if (aligned) {
            const { firstChange, firstColumn, pages } = aligned;
            return { sides: [aligned.left, aligned.right], firstChange, firstColumn, page: aligned.page, pages };
          }
          const [left, right] = [a.split('\n'), b.split('\n')];
          const firstChange = firstDifference(left, right);
          const firstColumn = firstChange >= 0 ? firstColumnOf(left[firstChange] ?? '', right[firstChange] ?? '') : 0;
          return { sides: [{ text: a }, { text: b }], firstChange, firstColumn, page: 0, pages: 1 };
        },
      );
      got.catch(() => this.pairs.delete(key));
      this.pairs.set(key, got);
    }
    return got;
  }

  /**
   * The server's alignment of the functions of `before` → `after` (asked once per pair): null
   * when they are not two Relax or two TIR documents; undefined when no server runs or it could
   * not answer (its message goes to the output channel). Either way the diff shows whole documents.
   */
  private alignmentOf(
    before: vscode.Uri | undefined,
    after: vscode.Uri | undefined,
  ): Promise<ext.PassDiffAlignmentResult | null | undefined> {
    const client = this.server?.client;
    if (!before || !after) {
      return Promise.resolve(null);
    }
    if (!client) {
      return Promise.resolve(undefined);
    }
    const key = transition(before, after);
    let got = this.alignments.get(key);
    if (!got) {
      const c2p = client.code2ProtocolConverter;
      got = Promise.resolve(client.sendRequest(ext.passDiffAlignment, { before: c2p.asUri(before), after: c2p.asUri(after) })).catch(
        (err: unknown) => {
          this.alignments.delete(key);
          this.output?.appendLine(`Pass diff of ${before.fsPath} and ${after.fsPath}: whole documents (${ext.failureMessage(err)})`);
          return undefined;
        },
      );
      this.alignments.set(key, got);
    }
    return got;
  }

  /**
   * `onHead` runs once the sides show the text down to past their first change: a side written
   * into an empty document (a diff just opened) gets its first lines in one edit and the rest
   * in a second, so that VS Code paints and diffs the first changes without waiting for
   * megabytes of text below them.
   */
  private async update(sides: [vscode.Uri, vscode.Uri | undefined][], onHead?: () => Promise<void>, page = 0): Promise<void> {
    const edit = new vscode.WorkspaceEdit();
    const rest = new vscode.WorkspaceEdit();
    let staged = false;
    const rewritten: [vscode.TextDocument, string][] = [];
    const contents = await this.sideContents(sides, page);
    const firstChange = sides.length === 2 ? Math.max(0, this.firstChangeOf(sides[1][0])) : 0;
    for (const [k, [side, file]] of sides.entries()) {
      const { text, segments } = contents[k];
      const key = side.toString();
      const from = this.shownFiles.get(key);
      const wasWhole = !this.shownSegments.get(key);
      this.shownFiles.set(key, file);
      this.shownSegments.set(key, segments);
      this.sideTexts.set(key, text);
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
      if (!doc || doc.isClosed) {
        continue; // opened later with this text, from provideTextDocumentContent
      }
      const old = doc.getText();
      if (old === text) {
        continue;
      }
      if (old === '' && text.length > HEAD_CHARS) {
        const lines = text.split('\n');
        const cut = firstChange + HEAD_LINES;
        if (cut < lines.length) {
          const head = lines.slice(0, cut);
          edit.insert(side, new vscode.Position(0, 0), head.join('\n'));
          rest.insert(side, new vscode.Position(cut - 1, head[cut - 1].length), `\n${lines.slice(cut).join('\n')}`);
          staged = true;
          rewritten.push([doc, text]);
          continue;
        }
      }
      const before = old.split('\n');
      // Edits worked out ahead are between whole files: of use only from and to whole files.
      const whole = wasWhole && !segments && old === (from ? await this.text(from) : '');
      const planned = whole ? this.edits.get(transition(from, file)) : undefined;
      for (const e of (await planned) ?? lineEdits(before, text.split('\n'))) {
        const { range, newText } = editOf(before, e);
        edit.replace(side, range, newText);
      }
      rewritten.push([doc, text]);
    }
    if (rewritten.length === 0) {
      await onHead?.();
      return;
    }
    let applied = await vscode.workspace.applyEdit(edit);
    if (staged && applied) {
      await onHead?.();
      applied = await vscode.workspace.applyEdit(rest);
    }
    for (const [doc, text] of rewritten) {
      if (!applied || doc.getText() !== text) {
        this.changed.fire(doc.uri); // VS Code reads the text again
      }
    }
    if (!staged || !applied) {
      await onHead?.();
    }
  }

  /**
   * Reads the files of the passes around the shown one ahead, and works out the line edits of
   * the steps to them (`steps`: a side's file now → after the step); forgets the others.
   */
  async keep(
    files: vscode.Uri[],
    steps: [vscode.Uri | undefined, vscode.Uri | undefined][],
    pairs: [vscode.Uri | undefined, vscode.Uri][] = [],
  ): Promise<void> {
    const wantedPairs = new Set(pairs.map(([b, a]) => transition(b, a)));
    for (const key of [...this.pairs.keys()]) {
      if (!wantedPairs.has(key.slice(0, key.lastIndexOf('|')))) {
        this.pairs.delete(key); // every page of a wanted pair is kept
      }
    }
    for (const key of [...this.alignments.keys()]) {
      if (!wantedPairs.has(key)) {
        this.alignments.delete(key);
      }
    }
    for (const [b, a] of pairs) {
      await this.pairOf(b, a).catch(() => undefined);
    }
    const wanted = new Set(files.map((f) => f.toString()));
    for (const shown of this.shownFiles.values()) {
      if (shown) {
        wanted.add(shown.toString());
      }
    }
    for (const key of [...this.texts.keys()]) {
      if (!wanted.has(key)) {
        this.texts.delete(key);
      }
    }
    await Promise.all(files.map((f) => this.text(f).catch(() => '')));
    const planned = new Set(steps.map(([from, to]) => transition(from, to)));
    for (const key of [...this.edits.keys()]) {
      if (!planned.has(key)) {
        this.edits.delete(key);
      }
    }
    for (const [from, to] of steps) {
      const key = transition(from, to);
      // Between IR documents the sides are aligned functions, not whole files: nothing to plan.
      if (!this.edits.has(key) && key.split('|')[0] !== key.split('|')[1] && !(isIr(from) && isIr(to))) {
        const read = (f: vscode.Uri | undefined) => (f ? this.text(f) : Promise.resolve(''));
        const plan = Promise.all([read(from), read(to)]).then(([a, b]) => lineEdits(a.split('\n'), b.split('\n')));
        plan.catch(() => this.edits.delete(key));
        this.edits.set(key, plan);
        await plan.catch(() => undefined);
      }
    }
  }

  /** Forgets the files read and the diffs worked out ahead (bundles were reloaded: a recompiled
   * bundle has new texts and a new alignment under the same URIs). What is shown stays. */
  forget(): void {
    this.texts.clear();
    this.pairs.clear();
    this.alignments.clear();
    this.edits.clear();
  }

  /** Makes `view` show `text`, lines of `file` mapped by `segments` (one function of a file too
   * large for the editor, largeFiles.ts): the side features answer there as in the file. */
  showPart(view: vscode.Uri, file: vscode.Uri, text: string, segments: Segment[]): void {
    const key = view.toString();
    this.shownFiles.set(key, file);
    this.shownSegments.set(key, segments);
    const old = this.sideTexts.get(key);
    this.sideTexts.set(key, text);
    if (old !== undefined && old !== text) {
      this.changed.fire(view);
    }
  }

  provideTextDocumentContent(uri: vscode.Uri): Promise<string> | string {
    const shown = this.sideTexts.get(uri.toString());
    if (shown !== undefined) {
      return shown;
    }
    const file = this.shownFiles.get(uri.toString());
    return file ? this.text(file) : '';
  }

  dispose(): void {
    this.changed.dispose();
  }

  private text(file: vscode.Uri): Promise<string> {
    const key = file.toString();
    let got = this.texts.get(key);
    if (!got) {
      got = Promise.resolve(vscode.workspace.fs.readFile(file)).then((bytes) => new TextDecoder().decode(bytes));
      got.catch(() => this.texts.delete(key));
      this.texts.set(key, got);
    }
    return got;
  }
}

interface PairContents {
  sides: { text: string; segments?: Segment[] }[];
  firstChange: number;
  firstColumn: number;
  page: number;
  pages: number;
}

function transition(from: vscode.Uri | undefined, to: vscode.Uri | undefined): string {
  return `${from?.toString() ?? ''}|${to?.toString() ?? ''}`;
}

/** The document edit of a line edit of `lines` (the last line has no line break after it). */
function editOf(lines: string[], e: LineEdit): { range: vscode.Range; newText: string } {
  if (e.end < lines.length) {
    return { range: new vscode.Range(e.start, 0, e.end, 0), newText: e.lines.map((l) => `${l}\n`).join('') };
  }
  const end = new vscode.Position(lines.length - 1, lines[lines.length - 1].length);
  if (e.start === 0) {
    return { range: new vscode.Range(new vscode.Position(0, 0), end), newText: e.lines.join('\n') };
  }
  const start = new vscode.Position(e.start - 1, lines[e.start - 1].length);
  return { range: new vscode.Range(start, end), newText: e.lines.map((l) => `\n${l}`).join('') };
}

/** A location of the server's answer: on the file a side shows, it is on the side itself (so
 * that a jump within the document stays in the diff). */
function onSide<T extends vscode.Location | vscode.LocationLink>(sides: PassDiffSides, item: T, side: vscode.Uri, file: vscode.Uri): T {
  if (item instanceof vscode.Location) {
    const range = item.uri.toString() === file.toString() ? sides.sideRange(side, item.range) : undefined;
    return (range ? new vscode.Location(side, range) : item) as T;
  }
  const link = item as vscode.LocationLink;
  const range = link.targetUri.toString() === file.toString() ? sides.sideRange(side, link.targetRange) : undefined;
  const selection = link.targetSelectionRange && sides.sideRange(side, link.targetSelectionRange);
  return (range ? { ...link, targetUri: side, targetRange: range, targetSelectionRange: selection ?? range } : link) as T;
}

function onSides(
  sides: PassDiffSides,
  items: vscode.Location | vscode.Location[] | vscode.LocationLink[] | undefined | null,
  side: vscode.Uri,
  file: vscode.Uri,
): vscode.Location[] | vscode.LocationLink[] | undefined {
  if (!items) {
    return undefined;
  }
  const list: (vscode.Location | vscode.LocationLink)[] = Array.isArray(items) ? items : [items];
  return list.map((i) => onSide(sides, i, side, file)) as vscode.Location[] | vscode.LocationLink[];
}

/**
 * Asks the server `request` about the layer at `position` of a document (of a pass diff side:
 * at its file's line). When there is no answer it says why (the server is not running, or no
 * layer is known there: no result, or one `found` rejects) and returns undefined.
 */
export async function askLayerAt<R>(
  server: ServerManager,
  sides: PassDiffSides,
  request: lc.RequestType<lc.TextDocumentPositionParams, R | null, void>,
  uri: vscode.Uri,
  position: vscode.Position,
  found: (result: R) => boolean,
): Promise<R | undefined> {
  const client = await server.ready();
  if (!client) {
    void vscode.window.showWarningMessage('TVM Explorer: the language server is not running.');
    return undefined;
  }
  const at = sides.filePosition(uri, position) ?? position; // a side's own line: as it is
  const result = await client.sendRequest(request, {
    textDocument: { uri: (sides.bundleFileOf(uri) ?? uri).toString() },
    position: { line: at.line, character: at.character },
  });
  if (!result || !found(result)) {
    void vscode.window.showInformationMessage('TVM Explorer: no layer is known at this position.');
    return undefined;
  }
  return result;
}

/**
 * Hover, definition, declaration (previous stage), references, highlights and links in the
 * sides of a pass diff: the server's answers for the file a side shows, at the same position.
 */
export function registerSideFeatures(server: ServerManager, sides: PassDiffSides): vscode.Disposable {
  const selector: vscode.DocumentSelector = { scheme: PASSDIFF_SCHEME };
  /**
   * The server's answer to `type` for the file the side `document` shows (at `position`, with
   * `extra` parameters), with the client's converter and that file; undefined when `document`
   * shows no bundle file or no server runs.
   */
  const ask = async <P, R, PR, E, RO>(
    type: lc.ProtocolRequestType<P, R, PR, E, RO>,
    document: vscode.TextDocument,
    position: vscode.Position | undefined,
    token: vscode.CancellationToken,
    extra: object = {},
  ) => {
    const file = sides.bundleFileOf(document.uri);
    const client = server.client;
    const at = position && sides.filePosition(document.uri, position);
    if (!file || !client || (position && !at)) {
      return undefined;
    }
    const c2p = client.code2ProtocolConverter;
    const params = { textDocument: { uri: c2p.asUri(file) }, ...(at && { position: c2p.asPosition(at) }), ...extra };
    const answer = await client.sendRequest(type, params as P, token);
    return { answer, convert: client.protocol2CodeConverter, file };
  };
  return vscode.Disposable.from(
    vscode.languages.registerHoverProvider(selector, {
      async provideHover(document, position, token) {
        const got = await ask(lc.HoverRequest.type, document, position, token);
        const hover = got && got.convert.asHover(got.answer);
        if (hover?.range) {
          hover.range = sides.sideRange(document.uri, hover.range);
        }
        return hover;
      },
    }),
    vscode.languages.registerDefinitionProvider(selector, {
      async provideDefinition(document, position, token) {
        const got = await ask(lc.DefinitionRequest.type, document, position, token);
        return got && onSides(sides, await got.convert.asDefinitionResult(got.answer, token), document.uri, got.file);
      },
    }),
    vscode.languages.registerDeclarationProvider(selector, {
      async provideDeclaration(document, position, token) {
        const got = await ask(lc.DeclarationRequest.type, document, position, token);
        return got && onSides(sides, await got.convert.asDeclarationResult(got.answer, token), document.uri, got.file);
      },
    }),
    vscode.languages.registerReferenceProvider(selector, {
      async provideReferences(document, position, context, token) {
        const got = await ask(lc.ReferencesRequest.type, document, position, token, { context });
        return (
          got &&
          (onSides(sides, await got.convert.asReferences(got.answer, token), document.uri, got.file) as vscode.Location[] | undefined)
        );
      },
    }),
    vscode.languages.registerDocumentHighlightProvider(selector, {
      async provideDocumentHighlights(document, position, token) {
        const got = await ask(lc.DocumentHighlightRequest.type, document, position, token);
        const found = got && (await got.convert.asDocumentHighlights(got.answer, token));
        return found?.flatMap((h) => {
          const range = sides.sideRange(document.uri, h.range);
          return range ? [new vscode.DocumentHighlight(range, h.kind)] : [];
        });
      },
    }),
    vscode.languages.registerDocumentLinkProvider(selector, {
      async provideDocumentLinks(document, token) {
        const got = await ask(lc.DocumentLinkRequest.type, document, undefined, token);
        const found = got && (await got.convert.asDocumentLinks(got.answer, token));
        return found?.flatMap((l) => {
          const range = sides.sideRange(document.uri, l.range);
          return range ? [Object.assign(l, { range })] : [];
        });
      },
    }),
  );
}
