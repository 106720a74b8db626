/**
 * Entry point: makes the context (ctx.ts) that holds the language client, the bundle registry,
 * the views and the pass diffs, registers the commands of commands.ts, and starts the server.
 * Logic lives in the server; this stays thin.
 */
import * as vscode from 'vscode';
import { COMMANDS } from './commands';
import { COMPARE_SCHEME, LayerCodeProvider } from './compareView';
import { showUnchangedPasses } from './config';
import { Ctx } from './ctx';
import { HeatMarks } from './heat';
import { NumericsTreeProvider } from './numericsView';
import { registerOnboarding } from './onboarding';
import { PASSDIFF_SCHEME, registerSideFeatures } from './passDiffSides';
import { PassDecorations } from './passView';

// The one module-level reference (as rust-analyzer keeps its context): `deactivate` receives
// nothing, and VS Code waits for the promise it returns, so the server's stop is awaited.
let active: Ctx | undefined;

function syncShowUnchangedContext(): void {
  void vscode.commands.executeCommand('setContext', 'tvmExplorer.showUnchanged', showUnchangedPasses());
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const ctx = new Ctx(context);
  active = ctx;
  syncShowUnchangedContext();
  registerOnboarding(ctx);
  ctx.registerCommands(COMMANDS);
  const numerics = new NumericsTreeProvider(ctx.registry, ctx.server);
  ctx.pushCleanup(
    vscode.window.registerFileDecorationProvider(new PassDecorations()),
    vscode.workspace.registerTextDocumentContentProvider(PASSDIFF_SCHEME, ctx.sides),
    registerSideFeatures(ctx.server, ctx.sides),
    numerics,
    vscode.window.createTreeView('tvmExplorer.numerics', { treeDataProvider: numerics }),
    new HeatMarks(context, ctx.registry, ctx.server),
    vscode.workspace.registerTextDocumentContentProvider(COMPARE_SCHEME, new LayerCodeProvider(ctx.server)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('tvmExplorer.passView.showUnchanged')) {
        syncShowUnchangedContext();
      }
      if (e.affectsConfiguration('tvmExplorer.pythonPath') || e.affectsConfiguration('tvmExplorer.serverArgs')) {
        void ctx.server.restart();
      }
    }),
    // Trusting the workspace may change the interpreter (its .venv, its pythonPath setting).
    vscode.workspace.onDidGrantWorkspaceTrust(() => void ctx.server.restart()),
  );
  await ctx.server.start();
}

export async function deactivate(): Promise<void> {
  await active?.server.stop();
  active = undefined;
}
