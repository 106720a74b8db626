/**
 * Restricted Mode (an untrusted workspace) and PyTorch files. Loading a `.pt2` runs PyTorch's
 * deserializer on the file in the CLI's process: tvm-explorer checks every string torch would
 * evaluate and refuses every pickle, but an untrusted workspace does not get even that far.
 * Compile Model… and Bisect Model… are not offered on a `.pt2` there (the explorer menu, the
 * model document's lens and title button hide them), and a `.pt2` reaching the commands another
 * way (the palette, a file picked as the model or the reference) is refused with a message that
 * says how to trust the workspace. The model document itself is still shown: the server reads
 * it from the archive's JSON, without PyTorch.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import * as md from './markdown';

export const MANAGE_TRUST = 'Manage Workspace Trust';

/** Whether `file` is a model this workspace may not load (a `.pt2` in Restricted Mode). */
export function restrictedModel(file: string): boolean {
  return !vscode.workspace.isTrusted && /\.pt2$/i.test(file);
}

/** The model file extensions a picker offers here (no `.pt2` in Restricted Mode). */
export function loadableModelExtensions(): string[] {
  return vscode.workspace.isTrusted ? ['tflite', 'onnx', 'pt2'] : ['tflite', 'onnx'];
}

/** True (and the user told why) if `file` may not be loaded here; `what` is "Compile". */
export function refusedInRestrictedMode(file: string, what: string, output: vscode.OutputChannel): boolean {
  if (!restrictedModel(file)) {
    return false;
  }
  const name = path.basename(file);
  output.appendLine(`${what}: ${file}: not offered in Restricted Mode (a PyTorch file is loaded by PyTorch's deserializer)`);
  void vscode.window
    .showErrorMessage(
      md.plain(
        `TVM Explorer: ${what} is not offered for ${name} in Restricted Mode: loading a PyTorch .pt2 runs ` +
          `PyTorch's deserializer on the file. Trust this workspace first, if you trust where the file came from.`,
      ),
      MANAGE_TRUST,
    )
    .then((choice) => {
      if (choice === MANAGE_TRUST) {
        void vscode.commands.executeCommand('workbench.trust.manage');
      }
    });
  return true;
}
