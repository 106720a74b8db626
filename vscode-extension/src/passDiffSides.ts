/**
 * The two sides of a bundle's pass diff tab: virtual documents with stable URIs
 * (`tvm-explorer-passdiff:/<bundle>/before.relax` and `.../after.relax`, the extension keeping
 * the language) whose text is the bundle file each side stands for at the moment. Stepping to
 * another pass rewrites their text (`onDidChange`): VS Code updates the open diff in place and
 * recomputes its markings, where a diff with new URIs would be a new input that it shows blank
 * until the new diff is computed and laid out.
 *
 * A side's text equals its file, so language features at a position of a side are the
 * server's answers for that file at the same position (`registerSideFeatures`), and commands
 * that ask the server about the cursor use `bundleFileOf`.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import * as lc from 'vscode-languageclient/node';
import { ServerManager } from './client';
import { LineEdit, lineEdits } from './lineEdits';

export const PASSDIFF_SCHEME = 'tvm-explorer-passdiff';

/** Which file each open side shows (undefined: the empty side before a first pass). */
const shownFiles = new Map<string, vscode.Uri | undefined>();

/** The bundle file a document stands for: itself, or the file a pass diff side shows now. */
export function bundleFileOf(uri: vscode.Uri): vscode.Uri | undefined {
  return uri.scheme === PASSDIFF_SCHEME ? shownFiles.get(uri.toString()) : uri;
}

/** Request parameters for the cursor of `editor`, on the bundle file it shows. */
export function cursorParams(client: lc.LanguageClient, editor: vscode.TextEditor): lc.TextDocumentPositionParams {
  const uri = bundleFileOf(editor.document.uri) ?? editor.document.uri;
  return {
    textDocument: { uri: client.code2ProtocolConverter.asUri(uri) },
    position: client.code2ProtocolConverter.asPosition(editor.selection.active),
  };
}

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
  private updates: Promise<void> = Promise.resolve();
  /** Line edits between files (`<from>|<to>`), worked out ahead for the likely next steps. */
  private readonly edits = new Map<string, Promise<LineEdit[]>>();

  /**
   * Makes each side show its file (undefined: empty) and rewrites the text of the open ones
   * with line edits, all in one workspace edit (both sides change in the same frame). Firing
   * `onDidChange` instead would have VS Code compute a character diff of each whole text in
   * its editor worker first, for up to a second. Updates run one after the other.
   */
  show(sides: [vscode.Uri, vscode.Uri | undefined][]): Promise<void> {
    const run = this.updates.then(() => this.update(sides));
    this.updates = run.catch(() => undefined);
    return run;
  }

  private async update(sides: [vscode.Uri, vscode.Uri | undefined][]): Promise<void> {
    const edit = new vscode.WorkspaceEdit();
    const rewritten: [vscode.TextDocument, string][] = [];
    for (const [side, file] of sides) {
      const text = file ? await this.text(file) : '';
      const key = side.toString();
      const from = shownFiles.get(key);
      shownFiles.set(key, file);
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
      if (!doc || doc.isClosed) {
        continue; // opened later with this text, from provideTextDocumentContent
      }
      const old = doc.getText();
      if (old === text) {
        continue;
      }
      const before = old.split('\n');
      const planned = old === (from ? await this.text(from) : '') ? this.edits.get(transition(from, file)) : undefined;
      for (const e of (await planned) ?? lineEdits(before, text.split('\n'))) {
        const { range, newText } = editOf(before, e);
        edit.replace(side, range, newText);
      }
      rewritten.push([doc, text]);
    }
    if (rewritten.length === 0) {
      return;
    }
    const applied = await vscode.workspace.applyEdit(edit);
    for (const [doc, text] of rewritten) {
      if (!applied || doc.getText() !== text) {
        this.changed.fire(doc.uri); // VS Code reads the text again
      }
    }
  }

  /**
   * Reads the files of the passes around the shown one ahead, and works out the line edits of
   * the steps to them (`steps`: a side's file now → after the step); forgets the others.
   */
  async keep(files: vscode.Uri[], steps: [vscode.Uri | undefined, vscode.Uri | undefined][]): Promise<void> {
    const wanted = new Set(files.map((f) => f.toString()));
    for (const shown of shownFiles.values()) {
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
      if (!this.edits.has(key) && key.split('|')[0] !== key.split('|')[1]) {
        const read = (f: vscode.Uri | undefined) => (f ? this.text(f) : Promise.resolve(''));
        const plan = Promise.all([read(from), read(to)]).then(([a, b]) => lineEdits(a.split('\n'), b.split('\n')));
        plan.catch(() => this.edits.delete(key));
        this.edits.set(key, plan);
        await plan.catch(() => undefined);
      }
    }
  }

  provideTextDocumentContent(uri: vscode.Uri): Promise<string> | string {
    const file = shownFiles.get(uri.toString());
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
function onSide<T extends vscode.Location | vscode.LocationLink>(item: T, side: vscode.Uri, file: vscode.Uri): T {
  if (item instanceof vscode.Location) {
    return (item.uri.toString() === file.toString() ? new vscode.Location(side, item.range) : item) as T;
  }
  const link = item as vscode.LocationLink;
  return (link.targetUri.toString() === file.toString() ? { ...link, targetUri: side } : link) as T;
}

function onSides(
  items: vscode.Location | vscode.Location[] | vscode.LocationLink[] | undefined | null,
  side: vscode.Uri,
  file: vscode.Uri,
): vscode.Location[] | vscode.LocationLink[] | undefined {
  if (!items) {
    return undefined;
  }
  const list: (vscode.Location | vscode.LocationLink)[] = Array.isArray(items) ? items : [items];
  return list.map((i) => onSide(i, side, file)) as vscode.Location[] | vscode.LocationLink[];
}

/**
 * Hover, definition, declaration (previous stage), references, highlights and links in the
 * sides of a pass diff: the server's answers for the file a side shows, at the same position.
 */
export function registerSideFeatures(server: ServerManager): vscode.Disposable {
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
    const file = bundleFileOf(document.uri);
    const client = server.client;
    if (!file || !client) {
      return undefined;
    }
    const c2p = client.code2ProtocolConverter;
    const params = { textDocument: { uri: c2p.asUri(file) }, ...(position && { position: c2p.asPosition(position) }), ...extra };
    const answer = await client.sendRequest(type, params as P, token);
    return { answer, convert: client.protocol2CodeConverter, file };
  };
  return vscode.Disposable.from(
    vscode.languages.registerHoverProvider(selector, {
      async provideHover(document, position, token) {
        const got = await ask(lc.HoverRequest.type, document, position, token);
        return got && got.convert.asHover(got.answer);
      },
    }),
    vscode.languages.registerDefinitionProvider(selector, {
      async provideDefinition(document, position, token) {
        const got = await ask(lc.DefinitionRequest.type, document, position, token);
        return got && onSides(await got.convert.asDefinitionResult(got.answer, token), document.uri, got.file);
      },
    }),
    vscode.languages.registerDeclarationProvider(selector, {
      async provideDeclaration(document, position, token) {
        const got = await ask(lc.DeclarationRequest.type, document, position, token);
        return got && onSides(await got.convert.asDeclarationResult(got.answer, token), document.uri, got.file);
      },
    }),
    vscode.languages.registerReferenceProvider(selector, {
      async provideReferences(document, position, context, token) {
        const got = await ask(lc.ReferencesRequest.type, document, position, token, { context });
        return got && (onSides(await got.convert.asReferences(got.answer, token), document.uri, got.file) as vscode.Location[] | undefined);
      },
    }),
    vscode.languages.registerDocumentHighlightProvider(selector, {
      async provideDocumentHighlights(document, position, token) {
        const got = await ask(lc.DocumentHighlightRequest.type, document, position, token);
        return got && got.convert.asDocumentHighlights(got.answer, token);
      },
    }),
    vscode.languages.registerDocumentLinkProvider(selector, {
      async provideDocumentLinks(document, token) {
        const got = await ask(lc.DocumentLinkRequest.type, document, undefined, token);
        return got && got.convert.asDocumentLinks(got.answer, token);
      },
    }),
  );
}
