/**
 * The first minutes with the extension: "Compile Model…" and "Bisect Model…", the model
 * viewer (`.tflite`, `.onnx`, `.pt2`), and a pass view that says why it is empty (no bundle yet, the server starting,
 * or a Python interpreter that is missing or lacks tvm-explorer, with how to fix it).
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { bisectModelCommand } from './bisect';
import { reduceModelCommand } from './reduce';
import { compileModelCommand } from './compile';
import type { Cmd, Ctx } from './ctx';
import * as ext from './lsp_ext';
import {
  CompileLensProvider,
  GRAPH_VIEW_TYPE,
  MODEL_SCHEME,
  modelFileOf,
  ModelDocumentProvider,
  ModelEditorProvider,
  TFLITE_VIEW_TYPE,
} from './modelView';

/** Documents a fresh bundle opens with: its generated code, else its model document. */
const FIRST_DOCUMENTS = ['code/module.c', 'code/device.cu', 'code/host.ll', 'model.tflgraph'];

/** The model viewer and the pass view's welcome context; the commands are `compileModel` and
 * `bisectModel` below (registered with the others, commands.ts). */
export function registerOnboarding(ctx: Ctx): void {
  const { server } = ctx;
  const syncMessage = () => {
    // The pass view's welcome text (package.json viewsWelcome) depends on what is wrong; a
    // tree message would hide it (VS Code shows welcome content only without a message).
    void vscode.commands.executeCommand('setContext', 'tvmExplorer.pythonProblem', server.problem?.kind ?? '');
  };
  const lenses = new CompileLensProvider();
  ctx.pushCleanup(
    vscode.workspace.registerTextDocumentContentProvider(MODEL_SCHEME, new ModelDocumentProvider(server, ctx.output)),
    ...[TFLITE_VIEW_TYPE, GRAPH_VIEW_TYPE].map((viewType) =>
      vscode.window.registerCustomEditorProvider(viewType, new ModelEditorProvider(), {
        supportsMultipleEditorsPerDocument: true,
      }),
    ),
    lenses,
    vscode.languages.registerCodeLensProvider({ scheme: MODEL_SCHEME }, lenses),
    server.onDidChangeState(syncMessage),
    vscode.window.onDidChangeActiveTextEditor(syncModelContext),
  );
  syncMessage();
  syncModelContext();
}

/** "Compile Model…": a new bundle opens and shows in the pass view. */
export function compileModel(ctx: Ctx): Cmd {
  return (uri?: vscode.Uri) => compileModelCommand(uri ?? activeModelFile(), ctx, (bundle) => openCompiledBundle(ctx, bundle));
}

/** "Bisect Model…": the bisected bundle opens in the pass view, its culprit marked. */
export function bisectModel(ctx: Ctx): Cmd {
  return (uri?: vscode.Uri) =>
    bisectModelCommand(uri ?? activeModelFile(), ctx, async (bundle) => {
      await openCompiledBundle(ctx, bundle);
      const dir = vscode.Uri.file(bundle).fsPath;
      return ctx.registry.list().find((b) => b.dir === dir)?.info.uri;
    });
}

/** "Reduce Model…": the smallest model that still fails the same way; its report opens, and
 * its bundle (when the reduced model builds) is offered as "Open Bundle". */
export function reduceModel(ctx: Ctx): Cmd {
  return (uri?: vscode.Uri) => reduceModelCommand(uri ?? activeModelFile(), ctx, undefined, (bundle) => openCompiledBundle(ctx, bundle));
}

function activeModelFile(): vscode.Uri | undefined {
  const uri = vscode.window.activeTextEditor?.document.uri;
  return uri?.scheme === MODEL_SCHEME ? modelFileOf(uri) : undefined;
}

function syncModelContext(): void {
  const active = vscode.window.activeTextEditor?.document.uri.scheme === MODEL_SCHEME;
  void vscode.commands.executeCommand('setContext', 'tvmExplorer.modelDocumentActive', active);
}

/** Where the server says `doc` (a generated-code document) opens, once it has loaded its
 * bundle (the request waits for that); undefined without costs or a server. */
async function kernelStartOf(ctx: Ctx, doc: string): Promise<ext.KernelStartResult | undefined> {
  const client = await ctx.server.ready();
  try {
    return (await client?.sendRequest(ext.kernelStart, { uri: vscode.Uri.file(doc).toString() })) ?? undefined;
  } catch {
    return undefined; // opened at its top, as without costs
  }
}

/** Opens a freshly compiled bundle (its generated code at the hottest or first kernel) and
 * shows it in the pass view once the server has it. */
async function openCompiledBundle(ctx: Ctx, bundle: string): Promise<void> {
  const { registry, passTree: tree, passView: view } = ctx;
  const first = FIRST_DOCUMENTS.map((rel) => path.join(bundle, rel)).find((p) => fs.existsSync(p));
  let start: ext.KernelStartResult | undefined;
  let at: vscode.Range | undefined;
  const open = async () => {
    const editor = await ctx.largeFiles.showDocumentAt(vscode.Uri.file(first!), { preview: false, selection: at });
    if (at) {
      editor?.revealRange(at, vscode.TextEditorRevealType.AtTop);
    }
  };
  if (first) {
    // Opening a document of a bundle outside the workspace also makes the server load it.
    await open();
    start = await kernelStartOf(ctx, first);
    const line = start?.range.start.line;
    at = line === undefined ? undefined : new vscode.Range(line, 0, line, 0);
    if (at) {
      await open();
    }
  }
  const deadline = Date.now() + 60000;
  const dir = vscode.Uri.file(bundle).fsPath;
  while (Date.now() < deadline) {
    await registry.refresh();
    if (registry.list().some((b) => b.dir === dir)) {
      break;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  const node = (await tree.getChildren()).find((n) => n.kind === 'bundle' && n.bundle.dir === dir);
  if (node) {
    await vscode.commands.executeCommand('tvmExplorer.passes.focus');
    await view.reveal(node, { select: true, focus: false, expand: true });
  }
  if (first) {
    await open(); // focus back
    if (start) {
      vscode.window.setStatusBarMessage(
        `TVM Explorer: opened at the ${start.profiled ? 'hottest' : 'first'} kernel, ${start.kernel}`,
        15000,
      );
    }
  }
}
