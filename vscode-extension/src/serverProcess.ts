/**
 * How the server process is spawned: the interpreter and arguments chosen by `config.ts`, run
 * in a working directory of the extension's own, never in the workspace.
 *
 * `<python> -m tvm_explorer serve` puts its working directory first on `sys.path`: started in
 * the workspace folder, a `tvm_explorer/` package planted there was imported instead of the
 * installed one (code from the workspace ran). The working directory is a fresh private
 * directory (`mkdtemp`, mode 0700, empty), and `PYTHONSAFEPATH=1` keeps Python 3.11+ from
 * adding it at all. Kept free of `vscode` so that tests can run it under plain Node.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/** A private, empty directory: the server's working directory (made on first use, and again
 * if it was removed). The extension keeps one (ctx.ts) for the server and the CLI runs. */
export class WorkingDirectory {
  private made: string | undefined;

  get path(): string {
    if (this.made === undefined || !fs.existsSync(this.made)) {
      this.made = fs.mkdtempSync(path.join(os.tmpdir(), 'tvm-explorer-server-'));
    }
    return this.made;
  }
}

/** The environment of the server (and of the preflight probe). */
export function serverEnvironment(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...base, PYTHONUNBUFFERED: '1', PYTHONSAFEPATH: '1' };
}

/** What to spawn: `command args...` with `options` (cwd and env). */
export interface ServerProcess {
  command: string;
  args: string[];
  options: { cwd: string; env: NodeJS.ProcessEnv };
}

export function serverProcess(python: string, args: string[], cwd: string = new WorkingDirectory().path): ServerProcess {
  return { command: python, args, options: { cwd, env: serverEnvironment() } };
}
