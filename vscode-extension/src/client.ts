/**
 * Owns the language client: starts `tvm-explorer serve` over stdio, reports a server that
 * cannot start with the fix, and restarts it on command or when its settings change.
 */
import * as vscode from 'vscode';
import * as lc from 'vscode-languageclient/node';
import { resolveServerLaunch, ServerLaunch, SECTION } from './config';
import { preflight } from './preflight';
import { serverProcess, WorkingDirectory } from './serverProcess';

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

/**
 * Why the server is not running, for views: `python` (the interpreter is missing or cannot
 * import tvm_explorer), `failed` (it started and failed), `stopped`.
 */
export type ServerState = 'starting' | 'running' | 'python' | 'failed' | 'stopped';
const SHOW_OUTPUT = 'Show Output';
const RESTART = 'Restart';

/** Starts, stops and restarts the client; fires `onDidStart` each time a client is running. */
export class ServerManager implements vscode.Disposable {
  private current: lc.LanguageClient | undefined;
  private readonly started = new vscode.EventEmitter<lc.LanguageClient>();
  private readonly stopped = new vscode.EventEmitter<void>();
  readonly onDidStart = this.started.event;
  readonly onDidStop = this.stopped.event;
  private readonly stateChanged = new vscode.EventEmitter<ServerState>();
  /** Fires with the new state (also sets the context key `tvmExplorer.serverState`). */
  readonly onDidChangeState = this.stateChanged.event;
  state: ServerState = 'stopped';
  /** What is wrong when the server cannot run, and how to fix it (for a person). */
  problem: { problem: string; fix: string; kind?: string } | undefined;
  private starting: Promise<boolean> | undefined;

  constructor(
    private readonly output: vscode.OutputChannel,
    private readonly workingDirectory: WorkingDirectory,
  ) {}

  /** The running client, once a start under way has finished (undefined if it failed). */
  async ready(): Promise<lc.LanguageClient | undefined> {
    if (!this.client && this.starting) {
      await this.starting;
    }
    return this.client;
  }

  private setState(state: ServerState, problem?: { problem: string; fix: string; kind?: string }): void {
    this.state = state;
    this.problem = problem;
    void vscode.commands.executeCommand('setContext', 'tvmExplorer.serverState', state);
    this.stateChanged.fire(state);
  }

  /** The running client, if any. */
  get client(): lc.LanguageClient | undefined {
    return this.current?.isRunning() ? this.current : undefined;
  }

  /** Starts the server unless one runs; shows an error notification if it cannot start. */
  start(): Promise<boolean> {
    if (!this.starting) {
      this.starting = this.startOnce().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  private async startOnce(): Promise<boolean> {
    if (this.current) {
      return this.current.isRunning();
    }
    this.setState('starting');
    const launch = resolveServerLaunch(this.workingDirectory.path);
    this.output.appendLine(`Starting: ${launch.python} ${launch.args.join(' ')} (${launch.source})`);
    const check = await preflight(launch);
    if (!check.ok) {
      this.output.appendLine(`${check.problem} ${check.fix}`);
      this.setState('python', check);
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
      const failure = {
        problem: `TVM Explorer server failed to start with ${launch.python}: ${message}`,
        fix: 'The output channel "TVM Explorer" shows the server\'s error; check that this tvm-explorer has the `serve` command.',
      };
      this.setState('failed', failure);
      void this.reportFailure(failure.problem, failure.fix);
      return false;
    }
    this.setState('running');
    this.started.fire(client);
    return true;
  }

  /** Stops the running server, if any. */
  async stop(): Promise<void> {
    const client = this.current;
    this.current = undefined;
    if (client) {
      this.setState('stopped');
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
    this.stateChanged.dispose();
  }

  private createClient(launch: ServerLaunch): lc.LanguageClient {
    const spawn = serverProcess(launch.python, launch.args, launch.cwd);
    const executable: lc.Executable = { ...spawn, transport: lc.TransportKind.stdio };
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
        const failure = {
          problem: 'The TVM Explorer server stopped unexpectedly several times.',
          fix: 'The output channel "TVM Explorer" shows why.',
        };
        this.setState('failed', failure);
        this.stopped.fire();
        void this.reportFailure(failure.problem, failure.fix);
        return { action: lc.CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  private async reportFailure(problem: string, fix: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(`${problem} ${fix}`, OPEN_SETTINGS, SHOW_OUTPUT, RESTART);
    if (choice === OPEN_SETTINGS) {
      await vscode.commands.executeCommand('workbench.action.openSettings', `${SECTION}.pythonPath`);
    } else if (choice === SHOW_OUTPUT) {
      this.output.show(true);
    } else if (choice === RESTART) {
      await this.restart();
    }
  }
}
