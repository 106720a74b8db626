/**
 * Running the tvm-explorer CLI (`<python> -m tvm_explorer …`) behind a cancellable progress
 * notification: the interpreter is checked first, every line goes to the output channel, Cancel
 * sends SIGTERM (the CLI then stops and leaves any previous bundle as it was), and the CLI's one
 * error line is what a failure says. Compile Model… and Bisect Model… both run through here.
 *
 * A .pt2 holding a Python pickle is refused by the CLI (exit code 5, `EXIT_UNTRUSTED`): loading
 * it runs whatever code the pickle holds. Only then, and only in a trusted workspace, a modal
 * dialog names the file, the entry and the risk; if the user accepts, the same run is repeated
 * with `--trust-pickle`. Restricted Mode never offers it.
 */
import * as cp from 'child_process';
import * as vscode from 'vscode';
import { resolveServerLaunch } from './config';
import { preflight } from './preflight';
import { serverEnvironment, WorkingDirectory } from './serverProcess';
import type { ModelKinds } from './modelKinds';

export const SHOW_OUTPUT = 'Show Output';
const OPEN_SETTINGS = 'Open Settings';
/** The CLI's exit code when a .pt2 holds a pickle it will not run without `--trust-pickle`. */
export const EXIT_UNTRUSTED = 5;
export const TRUST_PICKLE_FLAG = '--trust-pickle';
export const LOAD_ANYWAY = 'Load and Run Its Code';

/** How one run ended. */
export type CliOutcome =
  { kind: 'ok'; stdout: string } | { kind: 'cancelled'; message: string } | { kind: 'failed'; message: string; code?: number };

/** Where runs report (the output channel) and run (the server's private directory). */
export interface CliHost {
  output: vscode.OutputChannel;
  workingDirectory: WorkingDirectory;
  /** What each model kind is and can do, as the server says. */
  kinds: ModelKinds;
}

/** What to run and how to show it. */
export interface CliJob {
  /** What the output channel's lines start with: "Compile", "Bisect". */
  label: string;
  /** The notification's title. */
  title: string;
  args: string[];
  /** The working directory when the launch configuration sets none. */
  cwd: string;
  /** The first message under the title. */
  initialMessage: string;
  /** A stdout line: true if it was progress (reported, not logged), false to log it. */
  onLine?: (line: string, progress: vscode.Progress<{ message?: string; increment?: number }>) => boolean;
  /** What a cancelled run says (the CLI's own "interrupted (SIGTERM)" is not for people). */
  cancelledMessage: string;
  /** Called every second while the CLI runs (a ticking clock under the title). */
  onTick?: (progress: vscode.Progress<{ message?: string; increment?: number }>) => void;
}

/** Runs the job; undefined if the interpreter is unusable (the user was told). A refused
 * pickle is offered to be trusted (see the top of this file). */
export async function runCli(job: CliJob, host: CliHost): Promise<CliOutcome | undefined> {
  const { output } = host;
  const outcome = await runCliOnce(job, host);
  if (outcome?.kind !== 'failed' || outcome.code !== EXIT_UNTRUSTED || job.args.includes(TRUST_PICKLE_FLAG)) {
    return outcome;
  }
  if (!vscode.workspace.isTrusted) {
    output.appendLine(`${job.label}: not offered to run the file's pickle: the workspace is in Restricted Mode`);
    return { ...outcome, message: `${outcome.message} (not offered in Restricted Mode: trust the workspace first)` };
  }
  const choice = await vscode.window.showWarningMessage(
    'This PyTorch file contains a Python pickle. Loading it runs whatever code the pickle holds, ' +
      'with your permissions, on this machine.',
    {
      modal: true,
      detail:
        `${outcome.message.replace(/; a model file is data.*$/s, '')}.\n\nContinue only if you trust who made this file. ` +
        `The ${job.label.toLowerCase()} is then repeated with ${TRUST_PICKLE_FLAG}.`,
    },
    LOAD_ANYWAY,
  );
  if (choice !== LOAD_ANYWAY) {
    output.appendLine(`${job.label}: the file's pickle was not trusted; nothing was loaded`);
    return outcome;
  }
  output.appendLine(`${job.label}: the user trusted the file's pickle; running again with ${TRUST_PICKLE_FLAG}`);
  return runCliOnce({ ...job, args: [...job.args, TRUST_PICKLE_FLAG] }, host);
}

async function runCliOnce(job: CliJob, host: CliHost): Promise<CliOutcome | undefined> {
  const { output } = host;
  const launch = resolveServerLaunch(host.workingDirectory.path);
  const check = await preflight(launch);
  if (!check.ok) {
    output.appendLine(`${job.label}: ${check.problem} ${check.fix}`);
    const choice = await vscode.window.showErrorMessage(`Cannot run: ${check.problem} ${check.fix}`, OPEN_SETTINGS, SHOW_OUTPUT);
    if (choice === OPEN_SETTINGS) {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'tvmExplorer.pythonPath');
    } else if (choice === SHOW_OUTPUT) {
      output.show(true);
    }
    return undefined;
  }
  output.appendLine(`${job.label}: ${launch.python} ${job.args.join(' ')}`);
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: job.title, cancellable: true },
    (progress, token) =>
      new Promise<CliOutcome>((resolve) => {
        const started = Date.now();
        const child = cp.spawn(launch.python, job.args, {
          cwd: launch.cwd ?? job.cwd,
          // As the server: PYTHONSAFEPATH keeps the working directory off sys.path.
          env: serverEnvironment(),
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let cancelled = false;
        let stdoutRest = '';
        const stdout: string[] = [];
        const errors: string[] = [];
        progress.report({ message: job.initialMessage });
        const ticker = job.onTick ? setInterval(() => job.onTick?.(progress), 1000) : undefined;
        let stopping: vscode.Disposable | undefined;
        const cancel = token.onCancellationRequested(() => {
          cancelled = true;
          output.appendLine(`${job.label}: cancelled by the user; stopping it`);
          // The notification closes at once; say that it is stopping until the CLI is gone.
          stopping = vscode.window.setStatusBarMessage(`$(loading~spin) TVM Explorer: cancelling — ${job.title}…`);
          child.kill('SIGTERM');
        });
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (chunk: string) => {
          const lines = (stdoutRest + chunk).split('\n');
          stdoutRest = lines.pop() ?? '';
          for (const line of lines) {
            stdout.push(line);
            if (!job.onLine?.(line, progress) && line.trim()) {
              output.appendLine(line);
            }
          }
        });
        child.stderr.setEncoding('utf8');
        child.stderr.on('data', (chunk: string) => {
          output.append(chunk);
          errors.push(chunk);
        });
        const done = () => {
          cancel.dispose();
          stopping?.dispose();
          if (ticker) {
            clearInterval(ticker);
          }
        };
        child.on('error', (err) => {
          done();
          resolve({ kind: 'failed', message: `could not run ${launch.python}: ${err.message}` });
        });
        child.on('close', (code, signal) => {
          done();
          if (stdoutRest) {
            stdout.push(stdoutRest);
          }
          const seconds = ((Date.now() - started) / 1000).toFixed(1);
          output.appendLine(`${job.label}: exit ${code ?? signal} after ${seconds} s`);
          const error = errorLine(errors.join(''));
          if (code === 0) {
            resolve({ kind: 'ok', stdout: stdout.join('\n') });
          } else if (cancelled && error?.includes('after the bundle was written')) {
            // Cancel came after the swap: the new bundle is in place and complete; say so.
            resolve({ kind: 'cancelled', message: 'too late: the bundle had already been written, and it is complete' });
          } else if (cancelled) {
            resolve({ kind: 'cancelled', message: job.cancelledMessage });
          } else {
            resolve({ kind: 'failed', message: error ?? `it ended with exit code ${code ?? signal}`, code: code ?? undefined });
          }
        });
      }),
  );
}

/** One `--progress json` line of the CLI: a step finished (`progress`) or begins (`start`). */
interface ProgressLine {
  event: 'progress' | 'start';
  stage: string;
  name: string;
  done: number;
  total: number;
  elapsed: number;
}

function parseProgress(line: string): ProgressLine | undefined {
  if (!line.startsWith('{')) {
    return undefined;
  }
  try {
    const value = JSON.parse(line);
    return value?.event === 'progress' || value?.event === 'start' ? (value as ProgressLine) : undefined;
  } catch {
    return undefined;
  }
}

function stageLabel(stage: string): string {
  return (
    (
      { import: 'Import', relax: 'Relax', tune: 'Tuning', tir: 'TIR', code: 'Codegen', run: 'Running', write: 'Writing' } as Record<
        string,
        string
      >
    )[stage] ?? stage
  );
}

/** What a run with `--progress json` shows: `onLine` moves the notification on each progress
 * line (other lines are left to the log) and `onTick` keeps its clocks going between lines.
 * A running step reads "Relax · step 13 of 76 · running FuseOps · 4 s (15 s in all)"; between a
 * finished step and the next start, "… · FuseOps done · 15 s". */
export interface ProgressDisplay {
  onLine: NonNullable<CliJob['onLine']>;
  onTick: NonNullable<CliJob['onTick']>;
}

export function progressDisplay(): ProgressDisplay {
  let percent = 0;
  let last: { event: ProgressLine; at: number } | undefined;
  const started = Date.now();
  const show = (progress: vscode.Progress<{ message?: string; increment?: number }>, increment = 0) => {
    if (!last) {
      return;
    }
    const { event, at } = last;
    const since = (Date.now() - at) / 1000;
    const total = Math.round(Math.max(event.elapsed + since, (Date.now() - started) / 1000));
    const head = `${stageLabel(event.stage)} · step ${Math.min(event.done + (event.event === 'start' ? 1 : 0), event.total || Infinity)} of ${event.total}`;
    const message =
      event.event === 'start'
        ? `${head} · running ${event.name} · ${Math.round(since)} s (${total} s in all)`
        : `${head} · ${event.name} done · ${total} s`;
    progress.report({ increment, message });
  };
  return {
    onLine: (line, progress) => {
      const event = parseProgress(line);
      if (!event) {
        return false;
      }
      const now = event.total ? (100 * event.done) / event.total : percent;
      last = { event, at: Date.now() };
      show(progress, Math.max(0, now - percent));
      percent = Math.max(percent, now);
      return true;
    },
    onTick: (progress) => show(progress),
  };
}

/** The `onLine` of `progressDisplay` alone (no ticking clock). */
export function progressLines(): NonNullable<CliJob['onLine']> {
  return progressDisplay().onLine;
}

/** The CLI's one error line ("tvm-explorer: error: …"), without its prefix. */
export function errorLine(stderr: string): string | undefined {
  const prefix = 'tvm-explorer: error: ';
  const lines = stderr.split('\n').filter((l) => l.startsWith(prefix));
  return lines.length ? lines[lines.length - 1].slice(prefix.length).trim() : undefined;
}
