// Bundles src/extension.ts and vscode-languageclient into out/extension.js (one CommonJS file),
// so that the .vsix needs no node_modules; and the graph app (webview/graph/, elkjs included)
// into one browser script plus its stylesheet: out/graph.js + out/graph.css for the VS Code
// webview, and the same two files in the Python package (server/tvm_explorer/graphview/assets/)
// for `tvm-explorer report`, which inlines them into one HTML file.
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
// Chart.js is bundled into the memory timeline (the webview's script, and the report's): its
// licence notice goes with it.
const CHART_JS_NOTICE = 'Bundles Chart.js 4.5.1 (https://github.com/chartjs/Chart.js) and @kurkle/color 0.3.4, MIT License, '
  + 'Copyright (c) 2014-2024 Chart.js Contributors; (c) 2018-2024 Jukka Kurkela.';

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
      + `Eclipse Public License 2.0 (https://www.eclipse.org/legal/epl-2.0/). ${CHART_JS_NOTICE} */`,
  },
  logLevel: 'info',
});
// The report draws the memory timeline too: its stylesheet goes with the graph's.
writeFileSync(
  resolve(here, 'out/graph.css'),
  readFileSync(resolve(here, 'webview/graph/style.css'), 'utf8') + '\n' + readFileSync(resolve(here, 'webview/memory/style.css'), 'utf8'),
);

// The memory timeline webview (webview/memory/, Chart.js bundled), and its stylesheet.
await esbuild.build({
  entryPoints: ['webview/memory/main.ts'],
  outfile: 'out/memory.js',
  bundle: true,
  platform: 'browser',
  format: 'iife',
  target: 'es2020',
  minify: true,
  legalComments: 'none',
  banner: { js: `/*! TVM Explorer memory timeline (Apache-2.0). ${CHART_JS_NOTICE} */` },
  logLevel: 'info',
});
copyFileSync(resolve(here, 'webview/memory/style.css'), resolve(here, 'out/memory.css'));
const assets = resolve(here, '..', 'server', 'tvm_explorer', 'graphview', 'assets');
mkdirSync(assets, { recursive: true });
for (const name of ['graph.js', 'graph.css']) {
  copyFileSync(resolve(here, 'out', name), resolve(assets, name));
}
