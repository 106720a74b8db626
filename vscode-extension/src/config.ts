/**
 * Reads the extension settings and resolves how to launch the language server.
 *
 * The server is `<python> -m tvm_explorer serve [serverArgs...]`. `<python>` is
 * `tvmExplorer.pythonPath` when set (with `${workspaceFolder}` and `~` expanded), else the first
 * workspace folder's `.venv/bin/python` if it exists (only in a trusted workspace: that
 * interpreter is workspace content), else `python3`. The process runs in a directory of the
 * extension's own (see serverProcess.ts), never in the workspace.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

export const SECTION = 'tvmExplorer';

/** How to start the server process. */
export interface ServerLaunch {
  python: string;
  args: string[];
  /** Where the interpreter choice came from, for error messages. */
  source: 'setting' | 'workspace .venv' | 'default';
  /** The server's working directory: the extension's own, never a workspace folder. */
  cwd: string;
}

function workspaceRoots(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
}

/** Expands `${workspaceFolder}`, `${userHome}` and a leading `~` in a setting value. */
export function expandVariables(value: string, roots: string[]): string {
  let out = value.replace(/\$\{workspaceFolder\}/g, roots[0] ?? '');
  out = out.replace(/\$\{userHome\}/g, os.homedir());
  if (out === '~' || out.startsWith('~/')) {
    out = path.join(os.homedir(), out.slice(1));
  }
  return out;
}

/** The interpreter and arguments to launch the server with (in `cwd`), from the current settings. */
export function resolveServerLaunch(cwd: string): ServerLaunch {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const roots = workspaceRoots();
  const extra = cfg.get<string[]>('serverArgs', []);
  const args = ['-m', 'tvm_explorer', 'serve', ...extra];
  const configured = (cfg.get<string>('pythonPath', '') ?? '').trim();
  if (configured) {
    return { python: expandVariables(configured, roots), args, source: 'setting', cwd };
  }
  // In an untrusted workspace its .venv is not run (and a pythonPath set in the workspace's
  // settings is ignored by VS Code: package.json restricts it).
  for (const root of vscode.workspace.isTrusted ? roots : []) {
    const venv = path.join(root, '.venv', 'bin', 'python');
    if (fs.existsSync(venv)) {
      return { python: venv, args, source: 'workspace .venv', cwd };
    }
  }
  return { python: 'python3', args, source: 'default', cwd };
}

/** Whether the pass view lists passes that changed nothing. */
export function showUnchangedPasses(): boolean {
  return vscode.workspace.getConfiguration(SECTION).get<boolean>('passView.showUnchanged', false);
}

export async function setShowUnchangedPasses(value: boolean): Promise<void> {
  await vscode.workspace.getConfiguration(SECTION).update('passView.showUnchanged', value, vscode.ConfigurationTarget.Global);
}
