/**
 * "Pass history" offered in the hover of any bundle document line that computes a layer (the
 * model document's entries, Relax, TIR, generated code, SASS): beside the server's hover, a
 * link that opens Layer History for that position (`tvmExplorer.showLayerHistory`, as the code
 * lens on a model layer does). Shown only where `tvmExplorer/origins` knows a layer; the link
 * is trusted for that one command and holds no text from the bundle.
 */
import * as vscode from 'vscode';
import { ServerManager } from './client';
import * as ext from './lsp_ext';
import { PassDiffSides } from './passDiffSides';

const LANGUAGES = ['tflgraph', 'tvm-modelgraph', 'tvm-relax', 'tvm-tir', 'tvm-generated-c', 'tvm-sass'];
const COMMAND = 'tvmExplorer.showLayerHistory';

export function registerHistoryHover(server: ServerManager, sides: PassDiffSides): vscode.Disposable {
  const selector = LANGUAGES.map((language) => ({ language, scheme: 'file' }));
  return vscode.languages.registerHoverProvider(selector, {
    provideHover: (document, position, token) => historyLink(server, sides, document, position, token),
  });
}

async function historyLink(
  server: ServerManager,
  sides: PassDiffSides,
  document: vscode.TextDocument,
  position: vscode.Position,
  token: vscode.CancellationToken,
): Promise<vscode.Hover | undefined> {
  const client = server.client;
  const file = sides.bundleFileOf(document.uri);
  if (!client || !file) {
    return undefined;
  }
  const at = sides.filePosition(document.uri, position) ?? position;
  const params = {
    textDocument: { uri: client.code2ProtocolConverter.asUri(file) },
    position: client.code2ProtocolConverter.asPosition(at),
  };
  const result = await client.sendRequest(ext.origins, params, token).catch(() => undefined);
  const layers = new Set((result?.origins ?? []).map((o) => `${o.subgraph}:${o.op_index}`)).size;
  if (layers === 0 || token.isCancellationRequested) {
    return undefined;
  }
  const args = encodeURIComponent(JSON.stringify([file.toString(), { line: at.line, character: at.character }]));
  const what = layers === 1 ? 'this layer' : `these ${layers} layers`;
  const text = new vscode.MarkdownString(`[Pass history of ${what}](command:${COMMAND}?${args}): what each pass did to its code`);
  text.isTrusted = { enabledCommands: [COMMAND] };
  return new vscode.Hover(text);
}
