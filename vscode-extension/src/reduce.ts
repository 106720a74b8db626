/**
 * "TVM Explorer: Reduce Model…": pick a .tflite/.onnx model whose compile fails, which failure
 * to keep and optionally a Relax pipeline of the user's, then run `<python> -m tvm_explorer
 * reduce MODEL -o SMALL --progress json` behind a progress notification (probes done, the size
 * being tried, the best so far) with Cancel (the CLI then writes the best so far as
 * SMALL.partial.*). The report (SMALL.report.md) opens when it is done (docs/reduce.md); when the
 * reduced model builds (diverge, culprit) the CLI also writes SMALL.bundle, offered as "Open Bundle".
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { pipelineSpec } from './bisect';
import { CliHost, runCli, SHOW_OUTPUT } from './cliRun';
import { askPipeline, pickModel } from './compile';
import * as md from './markdown';
import type { ModelKinds } from './modelKinds';

/** What to reduce, as chosen by the user. */
export interface ReduceRequest {
  model: string;
  output: string;
  until?: string;
  pipeline?: string;
  target?: string;
}

/** The default reduced model: MODEL.reduced.EXT beside the model. */
export function defaultReduceOutput(model: string): string {
  const ext = path.extname(model);
  return path.join(path.dirname(model), `${path.basename(model, ext)}.reduced${ext}`);
}

/** The report the CLI writes beside the reduced model. */
export function reportOf(output: string): string {
  return output.slice(0, output.length - path.extname(output).length) + '.report.md';
}

/** The bundle the CLI compiled from the reduced model (its `  bundle:  PATH` line), if any. */
export function bundleOf(stdout: string): string | undefined {
  const line = stdout.split('\n').find((l) => /^ {2}bundle: {2}/.test(l));
  const value = line?.replace(/^ {2}bundle: {2}/, '').trim();
  return value && !value.startsWith('none (') ? value : undefined;
}

/** The message's button that opens the reduced model's bundle. */
export const OPEN_BUNDLE = 'Open Bundle';

/** The CLI's arguments for a request. */
export function reduceArgs(req: ReduceRequest): string[] {
  const args = ['-m', 'tvm_explorer', 'reduce', req.model, '-o', req.output, '--progress', 'json'];
  if (req.until) {
    args.push('--until', req.until);
  }
  if (req.pipeline) {
    args.push('--pipeline', req.pipeline);
  }
  if (req.target) {
    args.push('--target', req.target);
  }
  return args;
}

/** `{"event": "reduce", …}` lines: one message for the notification, or undefined. */
export function reduceProgressMessage(line: string): string | undefined {
  try {
    const e = JSON.parse(line) as { event?: string; phase?: string; probes: number; size: number; best: number; original: number };
    if (e.event !== 'reduce') {
      return undefined;
    }
    if (e.phase === 'original') {
      return `running the original model (${e.original} layers)…`;
    }
    return `${e.probes} probes · trying ${e.size} of ${e.original} · best so far ${e.best}`;
  } catch {
    return undefined;
  }
}

const UNTIL = [
  { label: 'the failure it has', description: 'default', until: undefined },
  { label: 'import', description: "TVM's importer raises", until: 'import' },
  { label: 'compile', description: 'the build raises', until: 'compile' },
  { label: 'crash', description: 'a signal in a pass', until: 'crash' },
  { label: 'hang', description: 'a timeout', until: 'hang' },
];

async function ask(modelArg: vscode.Uri | undefined, kinds: ModelKinds): Promise<ReduceRequest | undefined> {
  const model = await pickModel(modelArg, 'Reduce Model');
  if (!model) {
    return undefined;
  }
  const name = path.basename(model);
  const reducible = await kinds.reducible(model);
  if (!reducible.ok) {
    void vscode.window.showErrorMessage(`TVM Explorer: ${name}: ${reducible.why}`);
    return undefined;
  }
  const until = await vscode.window.showQuickPick(UNTIL, { title: `Reduce ${name} (1/2): the failure to keep` });
  if (!until) {
    return undefined;
  }
  const pipeline = await askPipeline(
    `Reduce ${name} (2/2): Relax pipeline (empty: TVM's for the target)`,
    'MODULE:FUNCTION (a MODULE.py beside the model, or installed) or FILE.py:FUNCTION',
  );
  if (pipeline === undefined) {
    return undefined;
  }
  const typed = pipeline.trim();
  return {
    model,
    output: defaultReduceOutput(model),
    until: until.until,
    pipeline: typed ? pipelineSpec(typed, path.dirname(model)) : undefined,
  };
}

/** The whole command: ask (unless `preset` says what to keep: a bisect culprit), reduce, open
 * the report. */
export async function reduceModelCommand(
  modelArg: vscode.Uri | undefined,
  host: CliHost,
  preset?: Omit<ReduceRequest, 'model' | 'output'>,
  openBundle?: (bundle: string) => Promise<void>,
): Promise<void> {
  const model = preset && modelArg ? modelArg.fsPath : undefined;
  const req = model ? { model, output: defaultReduceOutput(model), ...preset } : await ask(modelArg, host.kinds);
  if (!req) {
    return;
  }
  const name = path.basename(req.model);
  const outcome = await runCli(
    {
      label: 'Reduce',
      title: `Reducing ${name}`,
      args: reduceArgs(req),
      cwd: path.dirname(req.model),
      initialMessage: 'running the original model…',
      onLine: (line, progress) => {
        const message = reduceProgressMessage(line);
        if (message) {
          progress.report({ message });
        }
        return message !== undefined;
      },
      cancelledMessage: `cancelled; the best model so far is in ${path.basename(req.output, path.extname(req.output))}.partial${path.extname(req.output)}`,
    },
    host,
  );
  if (!outcome) {
    return;
  }
  if (outcome.kind === 'cancelled') {
    void vscode.window.showInformationMessage(md.plain(`TVM Explorer: reduce of ${name} ${outcome.message}`));
    return;
  }
  if (outcome.kind === 'failed') {
    const choice = await vscode.window.showErrorMessage(md.plain(`TVM Explorer: reduce failed: ${outcome.message}`), SHOW_OUTPUT);
    if (choice === SHOW_OUTPUT) {
      host.output.show(true);
    }
    return;
  }
  if (/nothing to reduce/.test(outcome.stdout)) {
    void vscode.window.showInformationMessage(md.plain(`TVM Explorer: TVM does not fail on ${name}: nothing to reduce.`));
    return;
  }
  const summary = outcome.stdout.split('\n').find((l) => l.startsWith('Reduced ')) ?? `Reduced ${name}`;
  host.output.appendLine(`Reduce: ${summary}`);
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(reportOf(req.output)));
  await vscode.window.showTextDocument(doc, { preview: false });
  const bundle = bundleOf(outcome.stdout);
  if (!bundle) {
    void vscode.window.showInformationMessage(md.plain(`TVM Explorer: ${summary}`));
    return;
  }
  host.output.appendLine(`Reduce: bundle of the reduced model: ${bundle}`);
  const choice = await vscode.window.showInformationMessage(md.plain(`TVM Explorer: ${summary}`), OPEN_BUNDLE);
  if (choice === OPEN_BUNDLE) {
    if (openBundle) {
      await openBundle(bundle);
    } else {
      await vscode.commands.executeCommand('revealInExplorer', vscode.Uri.file(bundle));
    }
  }
}
