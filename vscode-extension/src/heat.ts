/**
 * Heat marks in the gutter: every kernel of a TIR or generated-code document gets a coloured
 * bar along its lines (grey → yellow → red by its share of the run time, or of the code when
 * the bundle was not profiled) and its costs after its first line, from `tvmExplorer/kernelHeat`.
 */
import * as vscode from 'vscode';
import { BundleRegistry } from './bundles';
import { ServerManager } from './client';
import * as ext from './lsp_ext';

const LEVELS = [0, 1, 2, 3, 4];

function level(heat: number): number {
  return heat >= 0.75 ? 4 : heat >= 0.5 ? 3 : heat >= 0.25 ? 2 : heat >= 0.05 ? 1 : 0;
}

export class HeatMarks implements vscode.Disposable {
  private readonly bars: vscode.TextEditorDecorationType[];
  private readonly labels: vscode.TextEditorDecorationType;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    context: vscode.ExtensionContext,
    private readonly registry: BundleRegistry,
    private readonly server: ServerManager,
  ) {
    this.bars = LEVELS.map((i) =>
      vscode.window.createTextEditorDecorationType({
        gutterIconPath: vscode.Uri.joinPath(context.extensionUri, 'media', `heat-${i}.svg`),
        gutterIconSize: 'contain',
        isWholeLine: true,
      }),
    );
    this.labels = vscode.window.createTextEditorDecorationType({
      after: { color: new vscode.ThemeColor('editorCodeLens.foreground'), margin: '0 0 0 2em' },
      isWholeLine: true,
    });
    this.disposables.push(
      ...this.bars,
      this.labels,
      vscode.window.onDidChangeVisibleTextEditors(() => this.updateAll()),
      registry.onDidChange(() => this.updateAll()),
    );
  }

  updateAll(): void {
    for (const editor of vscode.window.visibleTextEditors) {
      void this.update(editor);
    }
  }

  private async update(editor: vscode.TextEditor): Promise<void> {
    const client = this.server.client;
    if (!client || !this.registry.bundleOf(editor.document.uri)) {
      return;
    }
    let marks: ext.HeatMark[] = [];
    try {
      marks = (await client.sendRequest(ext.kernelHeat, { uri: editor.document.uri.toString() }))?.marks ?? [];
    } catch {
      marks = [];
    }
    const perLevel: vscode.DecorationOptions[][] = LEVELS.map(() => []);
    const labels: vscode.DecorationOptions[] = [];
    for (const mark of marks) {
      const range = client.protocol2CodeConverter.asRange(mark.range);
      // No hover of its own: the server's hover names the kernel and its costs already.
      perLevel[level(mark.heat)].push({ range });
      labels.push({
        range: new vscode.Range(range.start.line, 0, range.start.line, 0),
        renderOptions: { after: { contentText: `◀ ${mark.label}` } },
      });
    }
    this.bars.forEach((type, i) => editor.setDecorations(type, perLevel[i]));
    editor.setDecorations(this.labels, labels);
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }
}
