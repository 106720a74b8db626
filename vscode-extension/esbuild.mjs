// Bundles src/extension.ts and vscode-languageclient into out/extension.js (one CommonJS file),
// so that the .vsix needs no node_modules; and the graph app (webview/graph/, elkjs included)
// into one browser script plus its stylesheet: out/graph.js + out/graph.css for the VS Code
// webview, and the same two files in the Python package (server/tvm_explorer/graphview/assets/)
// for `tvm-explorer report`, which inlines them into one HTML file.
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));

await esbuild.build({
  entryPoints: ['src/extension.ts'],
  outfile: 'out/extension.js',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node18',
  external: ['vscode'],
  sourcemap: true,
  minify: false,
  logLevel: 'info',
});

await esbuild.build({
  entryPoints: ['webview/graph/main.ts'],
  outfile: 'out/graph.js',
  bundle: true,
  platform: 'browser',
  format: 'iife',
  target: 'es2020',
  minify: true,
  // elkjs is bundled into this script (and so into every report): its licence notice goes with it
  legalComments: 'none',
  banner: {
    js: '/*! TVM Explorer model graph (Apache-2.0). Bundles elkjs 0.12.1 (https://github.com/kieler/elkjs, source there), '
      + 'Eclipse Public License 2.0 (https://www.eclipse.org/legal/epl-2.0/). */',
  },
  logLevel: 'info',
});
copyFileSync(resolve(here, 'webview/graph/style.css'), resolve(here, 'out/graph.css'));
const assets = resolve(here, '..', 'server', 'tvm_explorer', 'graphview', 'assets');
mkdirSync(assets, { recursive: true });
for (const name of ['graph.js', 'graph.css']) {
  copyFileSync(resolve(here, 'out', name), resolve(assets, name));
}
