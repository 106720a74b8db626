/**
 * "TVM Explorer: Compile Model…": pick a model (.tflite, .onnx or PyTorch .pt2), the target and
 * options, then run
 * `<python> -m tvm_explorer compile MODEL -o OUT --progress json` as a child process behind a
 * progress notification with Cancel. The CLI guarantees that a cancelled or failed compile
 * leaves any previous bundle as it was; a failure is shown as the CLI's one error line (it
 * names the operator) with "Show Output". A new bundle is opened and revealed in the pass view.
 */
import * as cp from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { resolveServerLaunch } from './config';
import { preflight } from './preflight';

const SHOW_OUTPUT = 'Show Output';
const OPEN_SETTINGS = 'Open Settings';

/** What to compile, as chosen by the user. */
export interface CompileRequest {
  model: string;
  target: 'c' | 'llvm' | 'cuda';
  exactOrigins: boolean;
  output: string;
  /** `--profile`: run the built model and time every kernel call (CPU targets here). */
  profile?: boolean;
  /** `--numerics` (`fused`) or `--numerics-unfused`: compare every layer with the reference. */
  numerics?: 'fused' | 'unfused';
}

/** One `--progress json` line of the CLI. */
interface ProgressLine {
  event: 'progress';
  stage: string;
  name: string;
  done: number;
  total: number;
  elapsed: number;
}

const TARGETS: { label: CompileRequest['target']; description: string; detail: string }[] = [
  { label: 'c', description: 'C source', detail: "TVM's fusing CPU pipeline; generated C with line-level provenance" },
  { label: 'llvm', description: 'LLVM IR', detail: "TVM's fusing CPU pipeline; LLVM IR with function-level provenance" },
  { label: 'cuda', description: 'CUDA source (no GPU needed)', detail: "TVM's CUDA backend pipeline; kernels with line-level provenance and schedule traces" },
];

/** The default output folder: MODEL.bundle beside the model. */
export function defaultOutput(model: string): string {
  return path.join(path.dirname(model), `${path.basename(model, path.extname(model))}.bundle`);
}

/** The CLI's arguments for a request. */
export function compileArgs(req: CompileRequest): string[] {
  const args = ['-m', 'tvm_explorer', 'compile', req.model, '-o', req.output, '--target', req.target, '--progress', 'json'];
  if (req.exactOrigins) {
    args.push('--exact-origins');
  }
  if (req.profile) {
    args.push('--profile');
  }
  if (req.numerics) {
    args.push(req.numerics === 'unfused' ? '--numerics-unfused' : '--numerics');
  }
  return args;
}

/** Asks for model, target, options and output folder; undefined if the user gives up. */
async function ask(modelArg: vscode.Uri | undefined): Promise<CompileRequest | undefined> {
  let model = modelArg?.scheme === 'file' ? modelArg.fsPath : modelArg?.path;
  if (!model) {
    const picked = await vscode.window.showOpenDialog({
      title: 'Compile Model: choose a model (TensorFlow Lite, ONNX or PyTorch .pt2)',
      canSelectMany: false,
      filters: { 'Models': ['tflite', 'onnx', 'pt2'] },
      defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
    });
    model = picked?.[0]?.fsPath;
  }
  if (!model) {
    return undefined;
  }
  const name = path.basename(model);
  const target = await vscode.window.showQuickPick(TARGETS, {
    title: `Compile ${name} (1/3): target`,
    placeHolder: 'The target TVM compiles for',
    matchOnDescription: true,
  });
  if (!target) {
    return undefined;
  }
  const exact = { label: 'Exact origins', description: '--exact-origins', detail: 'One PrimFunc per call site, so every statement has exactly one origin (more functions, slower compile)' };
  const profile = { label: 'Profile', description: '--profile', detail: 'Run the built model on this CPU and time every kernel call: measured cost per layer (Hot Layers view, hover)' };
  const numerics = { label: 'Numerics', description: '--numerics', detail: "Run the built model and the model's own engine (LiteRT, onnxruntime, eager PyTorch) on the same inputs and compare every layer (Numerics view)" };
  const unfused = { label: 'Numerics, unfused too', description: '--numerics-unfused', detail: 'Numerics, plus a build without operator fusion, so layers hidden inside fused kernels are compared one by one' };
  // Profiling and numerics run the model here: CPU targets only (cuda needs a GPU).
  const runs = target.label === 'cuda' ? [] : [profile, numerics, unfused];
  const options = await vscode.window.showQuickPick([exact, ...runs], {
    title: `Compile ${name} for ${target.label} (2/3): options (none picked is fine)`,
    canPickMany: true,
  });
  if (!options) {
    return undefined;
  }
  const output = await vscode.window.showInputBox({
    title: `Compile ${name} for ${target.label} (3/3): bundle folder`,
    prompt: 'Where the bundle is written (a previous bundle there is replaced only when the compile succeeds)',
    value: defaultOutput(model),
    validateInput: (value) => {
      const v = value.trim();
      if (!v) {
        return 'A folder is needed';
      }
      if (!path.isAbsolute(v)) {
        return 'An absolute path, please';
      }
      if (!fs.existsSync(path.dirname(v))) {
        return `The parent folder ${path.dirname(v)} does not exist`;
      }
      return undefined;
    },
  });
  if (!output) {
    return undefined;
  }
  return {
    model,
    target: target.label,
    exactOrigins: options.includes(exact),
    output: output.trim(),
    profile: options.includes(profile),
    numerics: options.includes(unfused) ? 'unfused' : options.includes(numerics) ? 'fused' : undefined,
  };
}

/** The result of one compile run. */
export type CompileOutcome =
  | { kind: 'ok'; bundle: string }
  | { kind: 'cancelled'; message: string }
  | { kind: 'failed'; message: string };

/** Runs the compile behind a cancellable progress notification. */
export async function runCompile(req: CompileRequest, output: vscode.OutputChannel): Promise<CompileOutcome | undefined> {
  const launch = resolveServerLaunch();
  const check = await preflight(launch);
  if (!check.ok) {
    output.appendLine(`Compile: ${check.problem} ${check.fix}`);
    const choice = await vscode.window.showErrorMessage(`Cannot compile: ${check.problem} ${check.fix}`, OPEN_SETTINGS, SHOW_OUTPUT);
    if (choice === OPEN_SETTINGS) {
      await vscode.commands.executeCommand('workbench.action.openSettings', 'tvmExplorer.pythonPath');
    } else if (choice === SHOW_OUTPUT) {
      output.show(true);
    }
    return undefined;
  }
  const args = compileArgs(req);
  const name = path.basename(req.model);
  output.appendLine(`Compile: ${launch.python} ${args.join(' ')}`);
  return vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: `Compiling ${name} for ${req.target}`,
      cancellable: true,
    },
    (progress, token) =>
      new Promise<CompileOutcome>((resolve) => {
        const started = Date.now();
        const child = cp.spawn(launch.python, args, {
          cwd: launch.cwd ?? path.dirname(req.model),
          env: { ...process.env, PYTHONUNBUFFERED: '1' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let cancelled = false;
        let percent = 0;
        let stdoutRest = '';
        const errors: string[] = [];
        progress.report({ message: 'planning the pipeline…' });
        const cancel = token.onCancellationRequested(() => {
          cancelled = true;
          output.appendLine('Compile: cancelled by the user; stopping it');
          child.kill('SIGTERM'); // the CLI stops its compile and keeps any previous bundle
        });
        child.stdout.setEncoding('utf8');
        child.stdout.on('data', (chunk: string) => {
          const lines = (stdoutRest + chunk).split('\n');
          stdoutRest = lines.pop() ?? '';
          for (const line of lines) {
            const event = parseProgress(line);
            if (!event) {
              if (line.trim()) {
                output.appendLine(line);
              }
              continue;
            }
            const now = event.total ? (100 * event.done) / event.total : percent;
            progress.report({
              increment: Math.max(0, now - percent),
              message: `${stageLabel(event.stage)} · step ${event.done} of ${event.total} · ${event.name} · ${Math.round(event.elapsed)} s`,
            });
            percent = Math.max(percent, now);
          }
        });
        child.stderr.setEncoding('utf8');
        child.stderr.on('data', (chunk: string) => {
          output.append(chunk);
          errors.push(chunk);
        });
        child.on('error', (err) => {
          cancel.dispose();
          resolve({ kind: 'failed', message: `could not run ${launch.python}: ${err.message}` });
        });
        child.on('close', (code, signal) => {
          cancel.dispose();
          const seconds = ((Date.now() - started) / 1000).toFixed(1);
          output.appendLine(`Compile: exit ${code ?? signal} after ${seconds} s`);
          const error = errorLine(errors.join(''));
          if (code === 0) {
            resolve({ kind: 'ok', bundle: req.output });
          } else if (cancelled) {
            resolve({ kind: 'cancelled', message: error ?? 'cancelled; a previous bundle is unchanged' });
          } else {
            resolve({ kind: 'failed', message: error ?? `the compile ended with exit code ${code ?? signal}` });
          }
        });
      }),
  );
}

function parseProgress(line: string): ProgressLine | undefined {
  if (!line.startsWith('{')) {
    return undefined;
  }
  try {
    const value = JSON.parse(line);
    return value?.event === 'progress' ? (value as ProgressLine) : undefined;
  } catch {
    return undefined;
  }
}

function stageLabel(stage: string): string {
  return ({ import: 'Import', relax: 'Relax', tir: 'TIR', code: 'Codegen', run: 'Running', write: 'Writing' } as Record<string, string>)[stage] ?? stage;
}

/** The CLI's one error line ("tvm-explorer: error: …"), without its prefix. */
export function errorLine(stderr: string): string | undefined {
  const prefix = 'tvm-explorer: error: ';
  const lines = stderr.split('\n').filter((l) => l.startsWith(prefix));
  return lines.length ? lines[lines.length - 1].slice(prefix.length).trim() : undefined;
}

/**
 * The whole command: ask, compile, report; on success `onCompiled(bundle)` opens it.
 */
export async function compileModelCommand(
  modelArg: vscode.Uri | undefined,
  output: vscode.OutputChannel,
  onCompiled: (bundle: string, req: CompileRequest) => Promise<void>,
): Promise<void> {
  const req = await ask(modelArg);
  if (!req) {
    return;
  }
  const outcome = await runCompile(req, output);
  if (!outcome) {
    return;
  }
  const name = path.basename(req.model);
  if (outcome.kind === 'ok') {
    output.appendLine(`Compile: bundle written: ${outcome.bundle}`);
    await onCompiled(outcome.bundle, req);
    void vscode.window.showInformationMessage(`TVM Explorer: ${name} compiled for ${req.target} into ${outcome.bundle}.`);
  } else if (outcome.kind === 'cancelled') {
    void vscode.window.showInformationMessage(`TVM Explorer: compile of ${name} cancelled: ${outcome.message}`);
  } else {
    const choice = await vscode.window.showErrorMessage(`TVM Explorer: compile failed: ${outcome.message}`, SHOW_OUTPUT);
    if (choice === SHOW_OUTPUT) {
      output.show(true);
    }
  }
}
