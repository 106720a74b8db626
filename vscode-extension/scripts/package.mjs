// Packages the built extension as <repo>/dist/tvm-explorer.vsix with @vscode/vsce, offline and
// without prompts (dependencies are bundled into out/extension.js by esbuild.mjs).
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const out = resolve(here, '..', 'dist', 'tvm-explorer.vsix');
mkdirSync(dirname(out), { recursive: true });
const require = createRequire(import.meta.url);
const vsce = join(dirname(require.resolve('@vscode/vsce/package.json')), 'vsce');
execFileSync(
  process.execPath,
  [vsce, 'package', '--no-dependencies', '--skip-license', '--allow-missing-repository', '--out', out],
  { cwd: here, stdio: ['ignore', 'inherit', 'inherit'] },
);
console.log(`vsix: ${out}`);
