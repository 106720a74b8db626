/**
 * What a command about the cursor needs: the active editor and the running server, or a
 * warning that one of them is missing; the position it acts on, given or the cursor's.
 */
import * as vscode from 'vscode';
import type * as lc from 'vscode-languageclient/node';
import type { Ctx } from './ctx';

/** The active editor and the server's client; undefined, after a warning, without either. */
export function editorAndClient(ctx: Ctx): { editor: vscode.TextEditor; client: lc.LanguageClient } | undefined {
  const editor = vscode.window.activeTextEditor;
  const client = ctx.server.client;
  if (!editor || !client) {
    void vscode.window.showWarningMessage('TVM Explorer: no bundle document or no running server.');
    return undefined;
  }
  return { editor, client };
}

/**
 * The position a command acts on: its arguments (a code lens passes `[uri, {line, character}]`,
 * the URI as a string) or else the active editor's cursor; undefined when there is neither.
 */
export function commandPosition(
  uriArg?: string | vscode.Uri,
  positionArg?: { line: number; character: number },
): { uri: vscode.Uri; position: vscode.Position } | undefined {
  const editor = vscode.window.activeTextEditor;
  const uri = uriArg ? (typeof uriArg === 'string' ? vscode.Uri.parse(uriArg) : uriArg) : editor?.document.uri;
  const position = positionArg ? new vscode.Position(positionArg.line, positionArg.character) : editor?.selection.active;
  return uri && position ? { uri, position } : undefined;
}
