/** Paths the e2e tests use: the repo, its built .vsix, its Python, the artifacts folder. */
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const VSIX = resolve(REPO, 'dist', 'tvm-explorer.vsix');
export const CODE_SERVER = resolve(REPO, 'node_modules', '.bin', 'code-server');
export const CHROMIUM = process.env.TVM_EXPLORER_CHROMIUM || '/usr/bin/chromium';
/** Python with tvm-explorer installed; the extension is pointed at it. */
export const PYTHON = process.env.TVM_EXPLORER_PYTHON || resolve(REPO, '.venv', 'bin', 'python');
export const ARTIFACTS = resolve(process.env.TVM_EXPLORER_ARTIFACTS || resolve(REPO, 'test-artifacts'), 'vscode');
export const MODELS = resolve(REPO, 'tests', 'models');
