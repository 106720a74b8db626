/**
 * "TVM Explorer: Compile Model…": pick a model (.tflite, .onnx or PyTorch .pt2), the target and
 * options, then run
 * `<python> -m tvm_explorer compile MODEL -o OUT --progress json` as a child process behind a
 * progress notification with Cancel. The CLI guarantees that a cancelled or failed compile
 * leaves any previous bundle as it was; a failure is shown as the CLI's one error line (it
 * names the operator) with "Show Output". A new bundle is opened and revealed in the pass view.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { CliHost, progressDisplay, runCli, SHOW_OUTPUT } from './cliRun';
import * as md from './markdown';
import { loadableModelExtensions, refusedInRestrictedMode } from './trust';

/** The button of a failed compile that starts Reduce Model… on the same model. */
export const REDUCE_MODEL = 'Reduce Model…';

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
  /** `--inputs X.npz` for profiling and numerics (default: seeded random values). */
  inputs?: string;
}

const TARGETS: { label: CompileRequest['target']; description: string; detail: string }[] = [
  { label: 'c', description: 'C source', detail: "TVM's fusing CPU pipeline; generated C with line-level provenance" },
  { label: 'llvm', description: 'LLVM IR', detail: "TVM's fusing CPU pipeline; LLVM IR with function-level provenance" },
  {
    label: 'cuda',
    description: 'CUDA source (no GPU needed)',
    detail: "TVM's CUDA backend pipeline; kernels with line-level provenance and schedule traces",
  },
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
  if (req.inputs && (req.profile || req.numerics)) {
    args.push('--inputs', req.inputs);
  }
  return args;
}

/** The model file a command was given (explorer, model document), else one the user picks. */
export async function pickModel(modelArg: vscode.Uri | undefined, what: string): Promise<string | undefined> {
  const given = modelArg?.scheme === 'file' ? modelArg.fsPath : modelArg?.path;
  if (given) {
    return given;
  }
  const picked = await vscode.window.showOpenDialog({
    title: `${what}: choose a model (TensorFlow Lite, ONNX or PyTorch .pt2)`,
    canSelectMany: false,
    filters: { Models: loadableModelExtensions() },
    defaultUri: vscode.workspace.workspaceFolders?.[0]?.uri,
  });
  return picked?.[0]?.fsPath;
}

/** Asks where a bundle is written (an absolute folder whose parent exists). */
export async function askBundleFolder(title: string, value: string): Promise<string | undefined> {
  const output = await vscode.window.showInputBox({
    title,
    prompt: 'Where the bundle is written (a previous bundle there is replaced only when this succeeds)',
    value,
    validateInput: (text) => {
      const v = text.trim();
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
  return output?.trim() || undefined;
}

/** Asks for a Relax pipeline, `MODULE:FUNCTION` or `FILE.py:FUNCTION`; empty for TVM's own for
 * the target, undefined if the user gives up. */
export async function askPipeline(title: string, prompt: string, placeHolder?: string): Promise<string | undefined> {
  return vscode.window.showInputBox({
    title,
    prompt,
    placeHolder,
    validateInput: (text) =>
      !text.trim() || /^([\w.]+|.+\.py):[\w.]+$/.test(text.trim())
        ? undefined
        : 'MODULE:FUNCTION or FILE.py:FUNCTION, e.g. my_pipelines:fused_cpu',
  });
}

/** Asks for model, target, options and output folder; undefined if the user gives up. */
async function ask(modelArg: vscode.Uri | undefined, log: vscode.OutputChannel): Promise<CompileRequest | undefined> {
  const model = await pickModel(modelArg, 'Compile Model');
  if (!model || refusedInRestrictedMode(model, 'Compile Model', log)) {
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
  const exact = {
    label: 'Exact origins',
    description: '--exact-origins',
    detail: 'One PrimFunc per call site, so every statement has exactly one origin (more functions, slower compile)',
  };
  const profile = {
    label: 'Profile',
    description: '--profile',
    detail: 'Run the built model on this CPU and time every kernel call: measured cost per layer (Hot Layers view, hover)',
  };
  const numerics = {
    label: 'Numerics',
    description: '--numerics',
    detail:
      "Run the built model and the model's own engine (LiteRT, onnxruntime, eager PyTorch) on the same inputs and compare every layer (Numerics view)",
  };
  const unfused = {
    label: 'Numerics, unfused too',
    description: '--numerics-unfused',
    detail: 'Numerics, plus a build without operator fusion, so layers hidden inside fused kernels are compared one by one',
  };
  const inputs = {
    label: 'Inputs from a file…',
    description: '--inputs',
    detail:
      'Profile and numerics run on these inputs (an .npz of arrays named like the model inputs) instead of seeded random values; needed for inputs of open size',
  };
  // Profiling and numerics run the model here: CPU targets only (cuda needs a GPU).
  const runs = target.label === 'cuda' ? [] : [profile, numerics, unfused, inputs];
  const options = await vscode.window.showQuickPick([exact, ...runs], {
    title: `Compile ${name} for ${target.label} (2/3): options (none picked is fine)`,
    canPickMany: true,
  });
  if (!options) {
    return undefined;
  }
  let inputFile: string | undefined;
  if (options.includes(inputs)) {
    if (!options.some((o) => o === profile || o === numerics || o === unfused)) {
      void vscode.window.showWarningMessage(
        'TVM Explorer: inputs are for Profile and Numerics; none of them was picked, so they are not used.',
      );
    } else {
      const picked = await vscode.window.showOpenDialog({
        title: `Compile ${name}: inputs (.npz, arrays named like the model inputs)`,
        canSelectMany: false,
        filters: { 'NumPy arrays': ['npz'] },
        defaultUri: vscode.Uri.file(path.dirname(model)),
      });
      inputFile = picked?.[0]?.fsPath;
      if (!inputFile) {
        return undefined;
      }
    }
  }
  const output = await askBundleFolder(`Compile ${name} for ${target.label} (3/3): bundle folder`, defaultOutput(model));
  if (!output) {
    return undefined;
  }
  return {
    model,
    target: target.label,
    exactOrigins: options.includes(exact),
    output,
    profile: options.includes(profile),
    numerics: options.includes(unfused) ? 'unfused' : options.includes(numerics) ? 'fused' : undefined,
    inputs: inputFile,
  };
}

/** The result of one compile run. */
export type CompileOutcome = { kind: 'ok'; bundle: string } | { kind: 'cancelled'; message: string } | { kind: 'failed'; message: string };

/** Runs the compile behind a cancellable progress notification. */
export async function runCompile(req: CompileRequest, host: CliHost): Promise<CompileOutcome | undefined> {
  const outcome = await runCli(
    {
      label: 'Compile',
      title: `Compiling ${path.basename(req.model)} for ${req.target}`,
      args: compileArgs(req),
      cwd: path.dirname(req.model),
      initialMessage: 'planning the pipeline…',
      cancelledMessage: 'no bundle was written; a previous bundle is unchanged',
      ...progressDisplay(),
    },
    host,
  );
  return outcome?.kind === 'ok' ? { kind: 'ok', bundle: req.output } : outcome;
}

/**
 * The whole command: ask, compile, report; on success `onCompiled(bundle)` opens it.
 */
export async function compileModelCommand(
  modelArg: vscode.Uri | undefined,
  host: CliHost,
  onCompiled: (bundle: string, req: CompileRequest) => Promise<void>,
): Promise<void> {
  const { output } = host;
  const req = await ask(modelArg, output);
  if (!req) {
    return;
  }
  const outcome = await runCompile(req, host);
  if (!outcome) {
    return;
  }
  const name = path.basename(req.model);
  if (outcome.kind === 'ok') {
    output.appendLine(`Compile: bundle written: ${outcome.bundle}`);
    await onCompiled(outcome.bundle, req);
    void vscode.window.showInformationMessage(md.plain(`TVM Explorer: ${name} compiled for ${req.target} into ${outcome.bundle}.`));
  } else if (outcome.kind === 'cancelled') {
    void vscode.window.showInformationMessage(md.plain(`TVM Explorer: compile of ${name} cancelled: ${outcome.message}`));
  } else {
    // A model TVM fails on can be cut down to a reproducer (tvm-explorer reduce, docs/reduce.md).
    const offers = (await host.kinds.reducible(req.model)).ok ? [SHOW_OUTPUT, REDUCE_MODEL] : [SHOW_OUTPUT];
    const choice = await vscode.window.showErrorMessage(md.plain(`TVM Explorer: compile failed: ${outcome.message}`), ...offers);
    if (choice === SHOW_OUTPUT) {
      output.show(true);
    } else if (choice === REDUCE_MODEL) {
      await vscode.commands.executeCommand('tvmExplorer.reduceModel', vscode.Uri.file(req.model));
    }
  }
}
