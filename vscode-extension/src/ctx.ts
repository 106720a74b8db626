/**
 * The extension's shared objects, made once by `activate` (rust-analyzer's `Ctx`): the output
 * channel, the server, the bundles and the views. Commands are `(ctx) => handler` factories
 * (commands.ts) registered here; no module keeps state of its own.
 */
import * as vscode from 'vscode';
import { BundleRegistry } from './bundles';
import { ServerManager } from './client';
import { Comparisons } from './compareView';
import { GraphView } from './graphView';
import { HotLayersProvider } from './hotLayers';
import { LargeFiles } from './largeFiles';
import { registerHistoryHover } from './historyHover';
import { LayerHistoryProvider } from './layerHistory';
import { LayerPlacesProvider, PlaceNode } from './layerPlaces';
import { MemoryView } from './memoryView';
import { PassDiffs } from './passDiff';
import { PassDiffSides } from './passDiffSides';
import { PassNode, PassTreeProvider } from './passView';
import { WorkingDirectory } from './serverProcess';
import { StageSync } from './stages';
import { ModelKinds } from './modelKinds';

/** A command's handler, called with the command's arguments. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any handler, whatever its parameters (unknown[] would refuse typed ones)
export type Cmd = (...args: any[]) => unknown;
/** Makes a command's handler from the context. */
export type CommandFactory = (ctx: Ctx) => Cmd;

export class Ctx {
  readonly output: vscode.OutputChannel;
  /** The server's (and the CLI's) working directory: private, never the workspace. */
  readonly workingDirectory = new WorkingDirectory();
  readonly server: ServerManager;
  /** The model kinds the server's frontends read (Reduce Model's check). */
  readonly kinds: ModelKinds;
  /** The pass diff sides' documents, and how their lines map to the files they show. */
  readonly sides: PassDiffSides;
  readonly registry: BundleRegistry;
  readonly largeFiles: LargeFiles;
  readonly passTree: PassTreeProvider;
  readonly passView: vscode.TreeView<PassNode>;
  readonly diffs: PassDiffs;
  readonly hotLayers: HotLayersProvider;
  readonly layerPlaces: LayerPlacesProvider;
  readonly layerHistory: LayerHistoryProvider;
  readonly comparisons: Comparisons;
  readonly graph: GraphView;
  readonly memory: MemoryView;
  readonly stages: StageSync;

  constructor(readonly extCtx: vscode.ExtensionContext) {
    this.output = vscode.window.createOutputChannel('TVM Explorer');
    this.server = new ServerManager(this.output, this.workingDirectory);
    this.kinds = new ModelKinds(this.server);
    this.sides = new PassDiffSides(this.server, this.output);
    this.registry = new BundleRegistry(this.server, this.sides);
    this.passTree = new PassTreeProvider(this.registry);
    this.passView = vscode.window.createTreeView<PassNode>('tvmExplorer.passes', {
      treeDataProvider: this.passTree,
      showCollapseAll: true,
    });
    this.largeFiles = new LargeFiles(this.registry, this.sides);
    this.diffs = new PassDiffs(this.registry, this.passTree, this.passView as vscode.TreeView<unknown>, this.sides, this.largeFiles);
    this.hotLayers = new HotLayersProvider(this.registry, this.server);
    this.hotLayers.view = vscode.window.createTreeView('tvmExplorer.hotLayers', { treeDataProvider: this.hotLayers });
    this.layerPlaces = new LayerPlacesProvider(this.server, this.sides, this.largeFiles, extCtx.workspaceState, this.registry);
    this.layerPlaces.view = vscode.window.createTreeView<PlaceNode>('tvmExplorer.layerPlaces', {
      treeDataProvider: this.layerPlaces,
      showCollapseAll: true,
    });
    this.layerHistory = new LayerHistoryProvider(this.server, this.sides, this.registry);
    this.layerHistory.view = vscode.window.createTreeView('tvmExplorer.layerHistory', { treeDataProvider: this.layerHistory });
    this.comparisons = new Comparisons(this.server, this.registry);
    this.graph = new GraphView(this);
    this.memory = new MemoryView(this);
    this.stages = new StageSync(this.server, this.registry, this.largeFiles, this.sides);
    this.pushCleanup(
      this.server, // before its output channel: stopping it may still log
      this.output,
      this.registry,
      this.passTree,
      this.passView,
      this.diffs,
      this.sides,
      this.largeFiles,
      this.hotLayers,
      this.hotLayers.view,
      this.layerPlaces,
      this.layerPlaces.view,
      this.layerHistory,
      this.layerHistory.view,
      this.comparisons,
      this.graph,
      this.memory,
      this.stages,
      registerHistoryHover(this.server, this.sides),
    );
  }

  /** Registers every command of `factories` (id → factory). */
  registerCommands(factories: Readonly<Record<string, CommandFactory>>): void {
    for (const [id, factory] of Object.entries(factories)) {
      this.pushCleanup(vscode.commands.registerCommand(id, factory(this)));
    }
  }

  /** Disposed when the extension is deactivated. */
  pushCleanup(...disposables: vscode.Disposable[]): void {
    this.extCtx.subscriptions.push(...disposables);
  }
}
