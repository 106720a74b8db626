/**
 * Opening a `.tflite`, `.onnx` or `.pt2` file shows its model document (the text a bundle's
 * model.tflgraph / model.onnxgraph has; for a `.pt2` the graph as saved, read from the archive's
 * JSON without unpickling anything), rendered by the language server through
 * `tvmExplorer/modelDocument`, read-only, with a "Compile this model…" code lens and title
 * button, instead of VS Code's binary-file page.
 *
 * The model custom editor only hands over: it opens the read-only text document
 * `tvm-explorer-model:<path of the model>` in its place (a text editor keeps search, folding,
 * the outline and the colouring) and closes itself.
 */
import * as vscode from 'vscode';
import { ServerManager } from './client';
import * as ext from './lsp_ext';
import * as md from './markdown';
import { restrictedModel } from './trust';

export const MODEL_SCHEME = 'tvm-explorer-model';
export const TFLITE_VIEW_TYPE = 'tvmExplorer.tfliteModel';
/** `.onnx` and `.pt2` files (a view type of their own: its display name says the kind). */
export const GRAPH_VIEW_TYPE = 'tvmExplorer.graphModel';

/** The language of a model document: TFLite's, or the ONNX / PyTorch graph one. */
export function modelLanguage(file: vscode.Uri): string {
  return /\.tflite$/i.test(file.path) ? 'tflgraph' : 'tvm-modelgraph';
}

/** The read-only model document of a model file. */
export function modelDocumentUri(file: vscode.Uri): vscode.Uri {
  return vscode.Uri.from({ scheme: MODEL_SCHEME, path: file.path });
}

/** The model file of a model document (or the file itself). */
export function modelFileOf(uri: vscode.Uri): vscode.Uri {
  return uri.scheme === MODEL_SCHEME ? vscode.Uri.file(uri.path) : uri;
}

/** Serves `tvm-explorer-model:` documents from the language server. */
export class ModelDocumentProvider implements vscode.TextDocumentContentProvider {
  constructor(
    private readonly server: ServerManager,
    private readonly output: vscode.OutputChannel,
  ) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const file = modelFileOf(uri);
    const client = await this.server.ready();
    if (!client) {
      const why = this.server.problem;
      return header(file, [
        'The TVM Explorer language server is not running, so the model cannot be shown.',
        ...(why ? [why.problem, why.fix] : ['The output channel "TVM Explorer" says why.']),
      ]);
    }
    const started = Date.now();
    try {
      const result = await client.sendRequest(ext.modelDocument, { uri: file.toString() });
      this.output.appendLine(`Model document of ${file.fsPath}: ${Date.now() - started} ms`);
      return result.text;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.output.appendLine(`Model document of ${file.fsPath} failed: ${message}`);
      void vscode.window.showErrorMessage(md.plain(`TVM Explorer: cannot show the model: ${message}`));
      return header(file, [message]);
    }
  }
}

function header(file: vscode.Uri, lines: string[]): string {
  return [`# Cannot show the model ${file.fsPath}`, ...lines.map((l) => `# ${l}`), ''].join('\n');
}

/** The model custom editor: replaces itself with the model document. */
export class ModelEditorProvider implements vscode.CustomReadonlyEditorProvider {
  openCustomDocument(uri: vscode.Uri): vscode.CustomDocument {
    return { uri, dispose: () => undefined };
  }

  async resolveCustomEditor(document: vscode.CustomDocument, panel: vscode.WebviewPanel): Promise<void> {
    panel.webview.html = `<!DOCTYPE html><html><body><p>Opening the model document of ${escapeHtml(
      document.uri.fsPath,
    )}…</p></body></html>`;
    const doc = await vscode.workspace.openTextDocument(modelDocumentUri(document.uri));
    await vscode.languages.setTextDocumentLanguage(doc, modelLanguage(document.uri));
    await vscode.window.showTextDocument(doc, { viewColumn: panel.viewColumn, preview: false });
    panel.dispose();
  }
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c] ?? c);
}

/** "Compile this model…" above the first line of a model document; on a `.pt2` in Restricted
 * Mode, why it is not offered and "Manage Workspace Trust" instead (trust.ts). */
export class CompileLensProvider implements vscode.CodeLensProvider {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.changed.event;
  private readonly trusted = vscode.workspace.onDidGrantWorkspaceTrust(() => this.changed.fire());

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (document.uri.scheme !== MODEL_SCHEME) {
      return [];
    }
    const top = new vscode.Range(0, 0, 0, 0);
    if (restrictedModel(document.uri.path)) {
      return [
        new vscode.CodeLens(top, {
          title: '$(shield) Restricted Mode: compiling a PyTorch file is not offered; trust the workspace first…',
          tooltip: "Loading a .pt2 runs PyTorch's deserializer on the file; this workspace is not trusted",
          command: 'workbench.trust.manage',
        }),
      ];
    }
    return [
      new vscode.CodeLens(top, {
        title: '$(play) Compile this model…',
        tooltip: 'Compile it with TVM into a bundle (target and options next)',
        command: 'tvmExplorer.compileModel',
        arguments: [modelFileOf(document.uri)],
      }),
    ];
  }

  dispose(): void {
    this.trusted.dispose();
    this.changed.dispose();
  }
}
