/**
 * Every command of the extension, in one table: id → `(ctx) => handler` (rust-analyzer's
 * command factories). package.json contributes the same ids.
 */
import * as vscode from 'vscode';
import { setShowUnchangedPasses } from './config';
import type { CommandFactory } from './ctx';
import { revealLayer } from './hotLayers';
import { jump } from './jumps';
import { showLayerHistory } from './layerHistory';
import { showLayerPlaces } from './layerPlaces';
import * as ext from './lsp_ext';
import { openNumericsLayer } from './numericsView';
import { bisectModel, compileModel, reduceModel } from './onboarding';
import { extractReproducerAtCursor } from './reproducer';
import { revealInModel, showPlaces } from './reveal';

export const COMMANDS: Readonly<Record<string, CommandFactory>> = Object.freeze({
  'tvmExplorer.restartServer': (ctx) => () => ctx.server.restart(),
  'tvmExplorer.showOutput': (ctx) => () => ctx.output.show(true),
  'tvmExplorer.refreshPasses': (ctx) => () => ctx.registry.refresh(),
  'tvmExplorer.showUnchangedPasses': () => () => setShowUnchangedPasses(true),
  'tvmExplorer.hideUnchangedPasses': () => () => setShowUnchangedPasses(false),
  'tvmExplorer.openPassDiff': (ctx) => (bundleUri: string, index: number) => ctx.diffs.openPass(bundleUri, index),
  'tvmExplorer.nextPass': (ctx) => () => ctx.diffs.step(1),
  'tvmExplorer.previousPass': (ctx) => () => ctx.diffs.step(-1),
  'tvmExplorer.nextPassDiffPage': (ctx) => () => ctx.diffs.stepPage(1),
  'tvmExplorer.previousPassDiffPage': (ctx) => () => ctx.diffs.stepPage(-1),
  'tvmExplorer.openPassDocument': (ctx) => () => ctx.diffs.openDocument(),
  'tvmExplorer.revealInModel': (ctx) => () => revealInModel(ctx),
  'tvmExplorer.showPlaces': () => showPlaces,
  'tvmExplorer.goToPreviousStage': (ctx) => () => jump(ctx, 'previousStage'),
  'tvmExplorer.goToPreviousPass': (ctx) => () => jump(ctx, 'previousPass'),
  'tvmExplorer.goToNextPass': (ctx) => () => jump(ctx, 'nextPass'),
  'tvmExplorer.openNumericsLayer': (ctx) => (location: ext.NumericsLayer['location']) => openNumericsLayer(ctx, location),
  'tvmExplorer.revealLayer': () => revealLayer,
  'tvmExplorer.refreshHotLayers': (ctx) => () => ctx.hotLayers.refresh(),
  'tvmExplorer.groupHotLayersByModule': (ctx) => () => ctx.hotLayers.setGroup('module'),
  'tvmExplorer.groupHotLayersByLayer': (ctx) => () => ctx.hotLayers.setGroup('layer'),
  'tvmExplorer.extractReproducerHere': (ctx) => () => extractReproducerAtCursor(ctx),
  'tvmExplorer.compareWithBundle': (ctx) => (b?: vscode.Uri | string) => ctx.comparisons.compareWith(b),
  'tvmExplorer.openLayerDiff': (ctx) => (row: ext.CompareRow) => ctx.comparisons.openLayerDiff(row),
  'tvmExplorer.showFunctionOfFile': (ctx) => (uri?: vscode.Uri) => ctx.largeFiles.pickFunction(uri),
  'tvmExplorer.showLayerPlaces': showLayerPlaces,
  'tvmExplorer.showReferences': showLayerPlaces,
  'tvmExplorer.filterLayerPlaces': (ctx) => () => ctx.layerPlaces.chooseFilter(),
  'tvmExplorer.showLayerHistory': showLayerHistory,
  'tvmExplorer.openHistoryStep': (ctx) => (index: number) => ctx.layerHistory.openStep(index),
  'tvmExplorer.openPlace': (ctx) => (uri: string, range: Parameters<typeof ctx.layerPlaces.openPlace>[1]) =>
    ctx.layerPlaces.openPlace(uri, range),
  'tvmExplorer.showModelGraph': (ctx) => (target?: vscode.Uri | string) => ctx.graph.show(target),
  'tvmExplorer.showMemoryTimeline': (ctx) => (target?: vscode.Uri | string) => ctx.memory.show(target),
  'tvmExplorer.compileModel': compileModel,
  'tvmExplorer.bisectModel': bisectModel,
  'tvmExplorer.reduceModel': reduceModel,
  'tvmExplorer.openStagesSideBySide': (ctx) => (target?: vscode.Uri | string) => ctx.stages.open(target),
});
