/**
 * "Extract Reproducer" from the command palette or the editor's context menu: runs the
 * server's code action at the cursor (the same one the light bulb offers) and opens the script
 * the server wrote next to the bundle.
 */
import * as vscode from 'vscode';
import * as lc from 'vscode-languageclient/node';
import { editorAndClient } from './activeCursor';
import type { Ctx } from './ctx';
import { EXTRACT_REPRODUCER_COMMAND, ExtractReproducerResult } from './lsp_ext';

export async function extractReproducerAtCursor(ctx: Ctx): Promise<void> {
  const active = editorAndClient(ctx);
  if (!active) {
    return;
  }
  const { editor, client } = active;
  const params: lc.CodeActionParams = {
    textDocument: { uri: (ctx.sides.bundleFileOf(editor.document.uri) ?? editor.document.uri).toString() },
    range: client.code2ProtocolConverter.asRange(ctx.sides.fileSelection(editor.document.uri, editor.selection) ?? editor.selection),
    context: { diagnostics: [], only: [lc.CodeActionKind.RefactorExtract] },
  };
  const actions = (await client.sendRequest(lc.CodeActionRequest.type, params)) ?? [];
  const action = actions.find((a): a is lc.CodeAction => lc.CodeAction.is(a) && a.command?.command === EXTRACT_REPRODUCER_COMMAND);
  if (!action?.command) {
    void vscode.window.showInformationMessage(
      'TVM Explorer: nothing to extract here. Put the cursor in a PrimFunc, a generated kernel, ' +
        'a Relax function or a layer of the model document.',
    );
    return;
  }
  const result: ExtractReproducerResult | null = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `TVM Explorer: ${action.title}` },
    () =>
      client.sendRequest(lc.ExecuteCommandRequest.type, {
        command: action.command!.command,
        arguments: action.command!.arguments,
      }),
  );
  if (!result || 'error' in result) {
    return; // the server has shown why
  }
  await vscode.window.showTextDocument(vscode.Uri.parse(result.uri), { preview: false });
  void vscode.window.setStatusBarMessage(`TVM Explorer: reproducer of ${result.kernels.join(', ')} written to ${result.path}`, 8000);
}
