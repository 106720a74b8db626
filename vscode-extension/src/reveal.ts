/**
 * "Reveal in Model" (cursor → origin layer via `tvmExplorer/origins`) and "Show All Places"
 * (layer or any indexed position → every place sharing its origins, in the references peek).
 */
import * as vscode from 'vscode';
import { commandPosition, editorAndClient } from './activeCursor';
import type { Ctx } from './ctx';
import * as ext from './lsp_ext';

/** Opens the model document at the layer the cursor's text came from (asks if several). */
export async function revealInModel(ctx: Ctx): Promise<void> {
  const active = editorAndClient(ctx);
  if (!active) {
    return;
  }
  const { editor, client } = active;
  const params = ctx.sides.cursorParams(client, editor);
  const result = await client.sendRequest(ext.origins, params);
  const found = [...(result?.origins ?? [])].sort((a, b) => Number(b.is_output) - Number(a.is_output));
  if (found.length === 0) {
    void vscode.window.showInformationMessage('TVM Explorer: no model layer is known for this position.');
    return;
  }
  let chosen: ext.Origin | undefined = found[0];
  if (found.length > 1) {
    const pick = await vscode.window.showQuickPick(
      found.map((o) => ({
        label: `${o.opcode}`,
        description: `subgraph ${o.subgraph}, operator ${o.op_index}`,
        detail: `${o.is_output ? 'produces' : 'part of'} ${o.outputs.join(', ')}`,
        origin: o,
      })),
      { title: 'Reveal in Model: the text comes from several layers', matchOnDescription: true },
    );
    chosen = pick?.origin;
  }
  if (!chosen) {
    return;
  }
  const location = client.protocol2CodeConverter.asLocation(chosen.location);
  // Like go-to-definition: the cursor at the start of the layer entry, the entry in view.
  const editorAt = await ctx.largeFiles.showDocumentAt(location.uri, {
    selection: new vscode.Range(location.range.start, location.range.start),
    preview: false,
  });
  editorAt?.revealRange(location.range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}

/**
 * Shows every place of the layer at a position in the references peek ("Show All Places of
 * This Layer"). Arguments are optional (default: the active cursor) and may be JSON (`uri`
 * string, `{line, character}`). The server's code lenses open the Layer Places view instead
 * (`tvmExplorer.showReferences`, layerPlaces.ts).
 */
export async function showPlaces(uriArg?: string | vscode.Uri, positionArg?: { line: number; character: number }): Promise<void> {
  const at = commandPosition(uriArg, positionArg);
  if (!at) {
    return;
  }
  const { uri, position } = at;
  const locations = (await vscode.commands.executeCommand<vscode.Location[]>('vscode.executeReferenceProvider', uri, position)) ?? [];
  if (locations.length === 0) {
    void vscode.window.showInformationMessage('TVM Explorer: no places are known for this position.');
    return;
  }
  await vscode.commands.executeCommand('editor.action.showReferences', uri, position, locations);
}
