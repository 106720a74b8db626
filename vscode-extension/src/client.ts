/**
 * Owns the language client: starts `tvm-explorer serve` over stdio, reports a server that
 * cannot start with the fix, and restarts it on command or when its settings change.
 */
import * as vscode from 'vscode';
import * as lc from 'vscode-languageclient/node';
import { resolveServerLaunch, ServerLaunch, SECTION } from './config';
import { preflight } from './preflight';

/**
 * Documents the server is told about: the bundle languages, and any file of a bundle (C, CUDA,
 * LLVM, traces) by path. Bundles are directories holding manifest.json; their generated code
 * lives in `code/`, schedule traces in `traces/`, and `*.bundle` is the conventional name.
 */
export const DOCUMENT_SELECTOR: lc.DocumentSelector = [
  { scheme: 'file', language: 'tvm-relax' },
  { scheme: 'file', language: 'tvm-tir' },
  { scheme: 'file', language: 'tflgraph' },
  { scheme: 'file', language: 'tvm-modelgraph' },
  { scheme: 'file', pattern: '**/*.bundle/**' },
  { scheme: 'file', pattern: '**/code/**' },
  { scheme: 'file', pattern: '**/traces/*.py' },
];

const OPEN_SETTINGS = 'Open Settings';
const SHOW_OUTPUT = 'Show Output';
const RESTART = 'Restart';

/** Starts, stops and restarts the client; fires `onDidStart` each time a client is running. */
export class ServerManager implements vscode.Disposable {
  private current: lc.LanguageClient | undefined;
  private readonly started = new vscode.EventEmitter<lc.LanguageClient>();
  private readonly stopped = new vscode.EventEmitter<void>();
  readonly onDidStart = this.started.event;
  readonly onDidStop = this.stopped.event;

  constructor(private readonly output: vscode.OutputChannel) {}

  /** The running client, if any. */
  get client(): lc.LanguageClient | undefined {
    return this.current?.isRunning() ? this.current : undefined;
  }

  /** Starts the server unless one runs; shows an error notification if it cannot start. */
  async start(): Promise<boolean> {
    if (this.current) {
      return this.current.isRunning();
    }
    const launch = resolveServerLaunch();
    this.output.appendLine(`Starting: ${launch.python} ${launch.args.join(' ')} (${launch.source})`);
    const check = await preflight(launch);
    if (!check.ok) {
      this.output.appendLine(`${check.problem} ${check.fix}`);
      void this.reportFailure(check.problem, check.fix);
      return false;
    }
    const client = this.createClient(launch);
    this.current = client;
    try {
      await client.start();
    } catch (err) {
      this.current = undefined;
      const message = err instanceof Error ? err.message : String(err);
      this.output.appendLine(`Server failed to start: ${message}`);
      void this.reportFailure(
        `TVM Explorer server failed to start with ${launch.python}: ${message}`,
        'The output channel "TVM Explorer" shows the server\'s error; check that this tvm-explorer has the `serve` command.',
      );
      return false;
    }
    this.started.fire(client);
    return true;
  }

  /** Stops the running server, if any. */
  async stop(): Promise<void> {
    const client = this.current;
    this.current = undefined;
    if (client) {
      this.stopped.fire();
      try {
        await client.stop(5000);
      } catch (err) {
        this.output.appendLine(`Stopping the server: ${String(err)}`);
      }
    }
  }

  /** Stops the server and starts it again with the current settings. */
  async restart(): Promise<boolean> {
    await this.stop();
    return this.start();
  }

  dispose(): void {
    void this.stop();
    this.started.dispose();
    this.stopped.dispose();
  }

  private createClient(launch: ServerLaunch): lc.LanguageClient {
    const executable: lc.Executable = {
      command: launch.python,
      args: launch.args,
      transport: lc.TransportKind.stdio,
      options: { cwd: launch.cwd, env: { ...process.env, PYTHONUNBUFFERED: '1' } },
    };
    const serverOptions: lc.ServerOptions = { run: executable, debug: executable };
    const clientOptions: lc.LanguageClientOptions = {
      documentSelector: DOCUMENT_SELECTOR,
      outputChannel: this.output,
      synchronize: {
        configurationSection: SECTION,
        fileEvents: vscode.workspace.createFileSystemWatcher('**/manifest.json'),
      },
      errorHandler: this.errorHandler(),
    };
    return new lc.LanguageClient(SECTION, 'TVM Explorer', serverOptions, clientOptions);
  }

  /** Restarts a crashed server a few times, then says so and offers a manual restart. */
  private errorHandler(): lc.ErrorHandler {
    const crashes: number[] = [];
    return {
      error: () => ({ action: lc.ErrorAction.Continue }),
      closed: () => {
        const now = Date.now();
        crashes.push(now);
        while (crashes.length && now - crashes[0] > 3 * 60 * 1000) {
          crashes.shift();
        }
        if (crashes.length <= 3) {
          return { action: lc.CloseAction.Restart, handled: true };
        }
        this.current = undefined;
        this.stopped.fire();
        void this.reportFailure(
          'The TVM Explorer server stopped unexpectedly several times.',
          'The output channel "TVM Explorer" shows why.',
        );
        return { action: lc.CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  private async reportFailure(problem: string, fix: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(
      `${problem} ${fix}`,
      OPEN_SETTINGS,
      SHOW_OUTPUT,
      RESTART,
    );
    if (choice === OPEN_SETTINGS) {
      await vscode.commands.executeCommand('workbench.action.openSettings', `${SECTION}.pythonPath`);
    } else if (choice === SHOW_OUTPUT) {
      this.output.show(true);
    } else if (choice === RESTART) {
      await this.restart();
    }
  }
}
