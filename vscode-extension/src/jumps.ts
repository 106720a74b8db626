/**
 * Stepping through the pipeline from the cursor: one stage back (`tvmExplorer/previousStage`:
 * code → final TIR → Relax → model) and the same code one pass earlier or later
 * (`tvmExplorer/previousPass` / `nextPass`, which skip passes that left it unchanged).
 *
 * Every jump lands in ONE preview editor: each step replaces the previous step's tab instead
 * of leaving a tab per pass behind. Several landings (a fused function made from several
 * bindings) open the first and list all in the references peek.
 */
import * as vscode from 'vscode';
import { editorAndClient } from './activeCursor';
import type { Ctx } from './ctx';
import { LargeFiles } from './largeFiles';
import * as ext from './lsp_ext';

const NOTHING: Record<ext.Jump, string> = {
  previousStage: 'no earlier stage is known for this position.',
  previousPass: 'no earlier pass changed this code.',
  nextPass: 'no later pass changed this code.',
};

/** Runs one jump from the active editor's cursor. */
export async function jump(ctx: Ctx, kind: ext.Jump): Promise<void> {
  const active = editorAndClient(ctx);
  if (!active) {
    return;
  }
  const { editor, client } = active;
  const params = ctx.sides.cursorParams(client, editor);
  const result = (await client.sendRequest(ext.jumps[kind], params)) ?? [];
  const locations = result.map((l) => client.protocol2CodeConverter.asLocation(l));
  if (locations.length === 0) {
    vscode.window.setStatusBarMessage(`TVM Explorer: ${NOTHING[kind]}`, 4000);
    return;
  }
  await openInPreview(ctx.largeFiles, locations[0]);
  if (locations.length > 1) {
    await vscode.commands.executeCommand('editor.action.showReferences', locations[0].uri, locations[0].range.start, locations);
  }
}

/** Opens a location in the preview editor (replacing the last jump's tab), cursor at its start. */
export async function openInPreview(files: LargeFiles, location: vscode.Location): Promise<vscode.TextEditor | undefined> {
  const editor = await files.showDocumentAt(location.uri, {
    preview: true,
    selection: new vscode.Range(location.range.start, location.range.start),
  });
  editor?.revealRange(location.range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  return editor;
}
