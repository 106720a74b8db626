/**
 * "TVM Explorer: Bisect Model…": pick a model, the target (llvm or c: the model runs here),
 * the baseline (the imported module, or a reference model run by its own engine) and
 * optionally a Relax pipeline of the user's, then run `<python> -m tvm_explorer bisect MODEL
 * … -o OUT --json --progress json` behind a progress notification (the compile's passes, then
 * each snapshot built) with Cancel. The bisected bundle opens in
 * the Passes view, where the culprit pass is marked; a message names the culprit and the
 * first layer it changed, with "Open Diff" (the culprit's pass diff).
 */
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { CliHost, progressDisplay, runCli, SHOW_OUTPUT } from './cliRun';
import { askBundleFolder, askPipeline, pickModel } from './compile';
import * as md from './markdown';
import { reduceModelCommand } from './reduce';
import { refusedInRestrictedMode } from './trust';

/** The culprit message's button: the smallest model on which bisect names the same pass. */
export const REDUCE_TO_CULPRIT = 'Reduce Model…';

/** What to bisect, as chosen by the user. */
export interface BisectRequest {
  model: string;
  target: 'llvm' | 'c';
  reference?: string;
  pipeline?: string;
  output: string;
}

/** The part of `bisect --json` the message needs (docs/numerics.md, "Bisect"). */
export interface BisectReport {
  model: string;
  culprit: { index: number | null; name: string; stage: 'relax' | 'tir' } | null;
  error_before: number | null;
  error_after: number | null;
  first_divergence: { subgraph: number; op_index: number } | null;
  layer: { opcode: string; name: string; max_abs: number | null } | null;
  note: string | null;
}

/** The default bundle folder: MODEL.bisect.bundle beside the model (a compile's MODEL.bundle stays). */
export function defaultBisectOutput(model: string): string {
  return path.join(path.dirname(model), `${path.basename(model, path.extname(model))}.bisect.bundle`);
}

/** The CLI's arguments for a request. */
export function bisectArgs(req: BisectRequest): string[] {
  const args = ['-m', 'tvm_explorer', 'bisect', req.model, '--target', req.target, '-o', req.output, '--json', '--progress', 'json'];
  if (req.pipeline) {
    args.push('--pipeline', req.pipeline);
  }
  if (req.reference) {
    args.push('--reference', req.reference);
  }
  return args;
}

/**
 * The `--pipeline` to pass for what the user typed: the CLI runs in a folder of the
 * extension's own, so a `MODULE` beside the model (or a relative `FILE.py`) is passed as that
 * file (`FILE.py:FUNCTION`); anything else is left to the interpreter's path.
 */
export function pipelineSpec(typed: string, modelDir: string): string {
  const spec = typed.trim();
  const cut = spec.lastIndexOf(':');
  const [module, func] = [spec.slice(0, cut), spec.slice(cut + 1)];
  if (module.endsWith('.py')) {
    return `${path.resolve(modelDir, module)}:${func}`;
  }
  const beside = path.join(modelDir, ...module.split('.')) + '.py';
  return fs.existsSync(beside) ? `${beside}:${func}` : spec;
}

/** The report in `bisect --json`'s output: the object whose `{` is a line of its own (progress
 * lines before it are one-line objects). */
export function parseBisectReport(stdout: string): BisectReport | undefined {
  const start = stdout.search(/^\{\s*$/m);
  if (start < 0) {
    return undefined;
  }
  try {
    return JSON.parse(stdout.slice(start)) as BisectReport;
  } catch {
    return undefined;
  }
}

/** One sentence for the report: the culprit and the first layer it changed, or why none. */
export function describeReport(report: BisectReport): string {
  const name = report.model;
  if (!report.culprit) {
    return `No culprit in ${name}: ${report.note ?? 'no pass changes the results beyond the thresholds'}.`;
  }
  const c = report.culprit;
  const fmt = (v: number | null) => (v === null || v === undefined ? 'n/a' : v.toPrecision(3));
  const unit = /\.(onnx|pt2)$/i.test(name) ? 'node' : 'op';
  const pass =
    c.index === null
      ? `${c.stage === 'tir' ? 'TIR' : 'Relax'} pass ${c.name}`
      : `${c.stage === 'tir' ? 'TIR' : 'Relax'} pass ${c.index} ${c.name}`;
  let text =
    c.index === 0 && c.name === 'import'
      ? `${name} already departs from the reference at the import (max abs error ${fmt(report.error_after)})`
      : `${pass} changed the results of ${name} (max abs error ${fmt(report.error_before)} → ${fmt(report.error_after)})`;
  if (report.layer && report.first_divergence) {
    text += `; first layer changed: ${unit} ${report.first_divergence.op_index} ${report.layer.opcode} ${report.layer.name}`;
  }
  return `${text}.`;
}

const TARGETS: { label: BisectRequest['target']; description: string; detail: string }[] = [
  { label: 'llvm', description: 'LLVM (default)', detail: "TVM's CPU pipeline, run here with the LLVM backend" },
  { label: 'c', description: 'C source', detail: "TVM's CPU pipeline, generated C compiled and run here" },
];

/** Asks for model, target, baseline, pipeline and bundle folder; undefined if the user gives up. */
async function ask(modelArg: vscode.Uri | undefined, log: vscode.OutputChannel): Promise<BisectRequest | undefined> {
  const model = await pickModel(modelArg, 'Bisect Model');
  if (!model || refusedInRestrictedMode(model, 'Bisect Model', log)) {
    return undefined;
  }
  const name = path.basename(model);
  const target = await vscode.window.showQuickPick(TARGETS, {
    title: `Bisect ${name} (1/4): target`,
    placeHolder: 'The model is built and run on this machine, so a CPU target',
  });
  if (!target) {
    return undefined;
  }
  const imported = {
    label: 'The imported module',
    description: 'default',
    detail: 'Built with the minimal lowering: the first pass whose snapshot departs from it is the culprit',
  };
  const engine = {
    label: 'A reference model…',
    description: '--reference',
    detail: "A file of the same graph, run by the model's own engine (LiteRT, onnxruntime, eager PyTorch)",
  };
  const baseline = await vscode.window.showQuickPick([imported, engine], { title: `Bisect ${name} (2/4): compare with` });
  if (!baseline) {
    return undefined;
  }
  let reference: string | undefined;
  if (baseline === engine) {
    const ext = path.extname(model).slice(1);
    const picked = await vscode.window.showOpenDialog({
      title: `Bisect ${name}: the reference model (.${ext} of the same graph)`,
      canSelectMany: false,
      filters: { 'Reference model': [ext] },
      defaultUri: vscode.Uri.file(path.dirname(model)),
    });
    reference = picked?.[0]?.fsPath;
    if (!reference || refusedInRestrictedMode(reference, 'Bisect Model', log)) {
      return undefined;
    }
  }
  const pipeline = await askPipeline(
    `Bisect ${name} (3/4): Relax pipeline (empty: TVM's for the target)`,
    'MODULE:FUNCTION (a MODULE.py beside the model, or installed) or FILE.py:FUNCTION; FUNCTION(target) returns the pass',
    'my_pipelines:fused_cpu',
  );
  if (pipeline === undefined) {
    return undefined;
  }
  const output = await askBundleFolder(`Bisect ${name} (4/4): bundle folder`, defaultBisectOutput(model));
  if (!output) {
    return undefined;
  }
  const typed = pipeline.trim();
  return { model, target: target.label, reference, pipeline: typed ? pipelineSpec(typed, path.dirname(model)) : undefined, output };
}

/**
 * The whole command: ask, bisect, report. On success `onBisected(bundle)` opens the bundle in
 * the Passes view and returns its URI as the server lists it (for "Open Diff").
 */
export async function bisectModelCommand(
  modelArg: vscode.Uri | undefined,
  host: CliHost,
  onBisected: (bundle: string) => Promise<string | undefined>,
): Promise<void> {
  const { output } = host;
  const req = await ask(modelArg, output);
  if (!req) {
    return;
  }
  const name = path.basename(req.model);
  const progressOf = progressDisplay();
  const outcome = await runCli(
    {
      label: 'Bisect',
      title: `Bisecting ${name} for ${req.target}`,
      args: bisectArgs(req),
      cwd: path.dirname(req.model),
      initialMessage: 'planning the pipeline…',
      // Progress lines move the notification; the JSON report is summed up below, not logged.
      onLine: (line, progress) => {
        progressOf.onLine(line, progress);
        return true;
      },
      onTick: progressOf.onTick,
      cancelledMessage: 'cancelled; no bundle was written (a previous one is unchanged)',
    },
    host,
  );
  if (!outcome) {
    return;
  }
  if (outcome.kind === 'cancelled') {
    void vscode.window.showInformationMessage(md.plain(`TVM Explorer: bisect of ${name} cancelled: ${outcome.message}`));
    return;
  }
  if (outcome.kind === 'failed') {
    const choice = await vscode.window.showErrorMessage(md.plain(`TVM Explorer: bisect failed: ${outcome.message}`), SHOW_OUTPUT);
    if (choice === SHOW_OUTPUT) {
      output.show(true);
    }
    return;
  }
  const report = parseBisectReport(outcome.stdout);
  output.appendLine(`Bisect: bundle written: ${req.output}`);
  const bundleUri = await onBisected(req.output);
  if (!report) {
    void vscode.window.showWarningMessage(
      md.plain(`TVM Explorer: bisect of ${name} finished but its report could not be read (see the output).`),
    );
    return;
  }
  const message = describeReport(report);
  output.appendLine(`Bisect: ${message}`);
  const culprit = report.culprit;
  // A culprit found on a .tflite/.onnx can be kept while the model is cut down (reduce --until culprit).
  const reducible = culprit && culprit.index !== null && !req.reference && (await host.kinds.reducible(req.model)).ok;
  if (culprit && culprit.index !== null && bundleUri) {
    const choice = await vscode.window.showInformationMessage(
      md.plain(`TVM Explorer: ${message}`),
      'Open Diff',
      ...(reducible ? [REDUCE_TO_CULPRIT] : []),
    );
    if (choice === 'Open Diff') {
      await vscode.commands.executeCommand('tvmExplorer.openPassDiff', bundleUri, culprit.index);
    } else if (choice === REDUCE_TO_CULPRIT) {
      await reduceModelCommand(
        vscode.Uri.file(req.model),
        host,
        { until: 'culprit', pipeline: req.pipeline, target: req.target },
        async (bundle) => {
          await onBisected(bundle);
        },
      );
    }
  } else {
    void vscode.window.showInformationMessage(md.plain(`TVM Explorer: ${message}`));
  }
}
