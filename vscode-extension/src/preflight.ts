/**
 * Checks, before starting the server, that the chosen interpreter exists and can import
 * `tvm_explorer`, so that a failure becomes one clear message with the fix instead of a
 * crashed client.
 */
import * as cp from 'child_process';
import { ServerLaunch } from './config';
import { serverEnvironment } from './serverProcess';

/** The outcome of a preflight check; `problem` and `fix` are meant for a person. */
export type Preflight = { ok: true } | { ok: false; problem: string; fix: string; kind: 'missing' | 'package' | 'broken' };

const PROBE = 'import importlib.util, sys; ' + "sys.exit(0 if importlib.util.find_spec('tvm_explorer') else 3)";

/** Runs `<python> -c PROBE` and explains what went wrong, if anything. */
export function preflight(launch: ServerLaunch, timeoutMs = 20000): Promise<Preflight> {
  return new Promise((resolve) => {
    cp.execFile(
      launch.python,
      ['-c', PROBE],
      { timeout: timeoutMs, cwd: launch.cwd, env: serverEnvironment() },
      (error, _stdout, stderr) => {
        if (!error) {
          resolve({ ok: true });
          return;
        }
        const code = (error as NodeJS.ErrnoException).code;
        const where = `${launch.python} (${launch.source})`;
        if (code === 'ENOENT' || code === 'EACCES') {
          resolve({
            ok: false,
            kind: 'missing',
            problem: `Python interpreter not found: ${where}.`,
            fix: 'Set "tvmExplorer.pythonPath" to a Python that has tvm-explorer installed (e.g. <repo>/.venv/bin/python).',
          });
        } else if ((error as { code?: unknown }).code === 3) {
          resolve({
            ok: false,
            kind: 'package',
            problem: `The package tvm-explorer is not installed in ${where}.`,
            fix: `Install it with "${launch.python} -m pip install -e <repo>" (or run scripts/setup.sh), or point "tvmExplorer.pythonPath" at the interpreter that has it.`,
          });
        } else {
          resolve({
            ok: false,
            kind: 'broken',
            problem: `${where} failed to run: ${(stderr || error.message).trim().split('\n').pop()}`,
            fix: 'Check "tvmExplorer.pythonPath"; the output channel "TVM Explorer" has details.',
          });
        }
      },
    );
  });
}
