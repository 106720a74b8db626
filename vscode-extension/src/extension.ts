/**
 * Entry point: wires the language client, the bundle registry, the pass view, the pass diffs
 * and the reveal commands together. Logic lives in the server; this stays thin.
 */
import * as vscode from 'vscode';
import { BundleRegistry } from './bundles';
import { ServerManager } from './client';
import { setShowUnchangedPasses, showUnchangedPasses } from './config';
import { PassDiffs } from './passDiff';
import { PASSDIFF_SCHEME, PassDiffSides, registerSideFeatures } from './passDiffSides';
import { PassDecorations, PassNode, PassTreeProvider } from './passView';
import { jump } from './jumps';
import { registerLayerPlaces } from './layerPlaces';
import { registerOnboarding } from './onboarding';
import { revealInModel, showPlaces } from './reveal';
import { NumericsTreeProvider, openNumericsLayer } from './numericsView';
import { HeatMarks } from './heat';
import { HotLayersProvider, revealLayer } from './hotLayers';
import { COMPARE_SCHEME, Comparisons, LayerCodeProvider } from './compareView';
import { extractReproducerAtCursor } from './reproducer';
import { LargeFiles } from './largeFiles';

let server: ServerManager | undefined;

function syncShowUnchangedContext(): void {
  void vscode.commands.executeCommand('setContext', 'tvmExplorer.showUnchanged', showUnchangedPasses());
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = vscode.window.createOutputChannel('TVM Explorer');
  server = new ServerManager(output);
  const registry = new BundleRegistry(server);
  const tree = new PassTreeProvider(registry);
  const view = vscode.window.createTreeView<PassNode>('tvmExplorer.passes', {
    treeDataProvider: tree,
    showCollapseAll: true,
  });
  const sides = new PassDiffSides();
  const diffs = new PassDiffs(registry, tree, view as vscode.TreeView<unknown>, sides);
  const hot = new HotLayersProvider(registry, server);
  hot.view = vscode.window.createTreeView('tvmExplorer.hotLayers', { treeDataProvider: hot });
  syncShowUnchangedContext();
  registerOnboarding(context, server, registry, tree, view, output);
  registerLayerPlaces(context, server);
  const comparisons = new Comparisons(server, registry);

  const command = (id: string, fn: (...args: any[]) => unknown) =>
    vscode.commands.registerCommand(id, fn);
  context.subscriptions.push(
    output,
    server,
    registry,
    tree,
    view,
    diffs,
    vscode.window.registerFileDecorationProvider(new PassDecorations()),
    sides,
    new LargeFiles(registry, sides),
    vscode.workspace.registerTextDocumentContentProvider(PASSDIFF_SCHEME, sides),
    registerSideFeatures(server),
    command('tvmExplorer.restartServer', () => server?.restart()),
    command('tvmExplorer.showOutput', () => output.show(true)),
    command('tvmExplorer.refreshPasses', () => registry.refresh()),
    command('tvmExplorer.showUnchangedPasses', () => setShowUnchangedPasses(true)),
    command('tvmExplorer.hideUnchangedPasses', () => setShowUnchangedPasses(false)),
    command('tvmExplorer.openPassDiff', (bundleUri: string, index: number) => diffs.openPass(bundleUri, index)),
    command('tvmExplorer.nextPass', () => diffs.step(1)),
    command('tvmExplorer.previousPass', () => diffs.step(-1)),
    command('tvmExplorer.openPassDocument', () => diffs.openDocument()),
    command('tvmExplorer.revealInModel', () => server && revealInModel(server)),
    command('tvmExplorer.showPlaces', showPlaces),
    command('tvmExplorer.goToPreviousStage', () => server && jump(server, 'previousStage')),
    command('tvmExplorer.goToPreviousPass', () => server && jump(server, 'previousPass')),
    command('tvmExplorer.goToNextPass', () => server && jump(server, 'nextPass')),
    vscode.window.createTreeView('tvmExplorer.numerics', { treeDataProvider: new NumericsTreeProvider(registry, server) }),
    command('tvmExplorer.openNumericsLayer', (location) => server && openNumericsLayer(server, location)),
    hot,
    hot.view,
    new HeatMarks(context, registry, server),
    command('tvmExplorer.revealLayer', revealLayer),
    command('tvmExplorer.refreshHotLayers', () => hot.refresh()),
    comparisons,
    vscode.workspace.registerTextDocumentContentProvider(COMPARE_SCHEME, new LayerCodeProvider(server)),
    command('tvmExplorer.extractReproducerHere', () => server && extractReproducerAtCursor(server)),
    command('tvmExplorer.compareWithBundle', (b?: vscode.Uri | string) => comparisons.compareWith(b)),
    command('tvmExplorer.openLayerDiff', (row) => comparisons.openLayerDiff(row)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('tvmExplorer.passView.showUnchanged')) {
        syncShowUnchangedContext();
      }
      if (e.affectsConfiguration('tvmExplorer.pythonPath') || e.affectsConfiguration('tvmExplorer.serverArgs')) {
        void server?.restart();
      }
    }),
    // Trusting the workspace may change the interpreter (its .venv, its pythonPath setting).
    vscode.workspace.onDidGrantWorkspaceTrust(() => void server?.restart()),
  );
  await server.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
