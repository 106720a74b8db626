// Bundles src/extension.ts and vscode-languageclient into out/extension.js (one CommonJS file),
// so that the .vsix needs no node_modules; and the graph app (webview/graph/) into one browser
// script plus its stylesheet and ELK's worker script: out/graph.js + out/graph.css + out/elk.js
// for the VS Code webview, and the same three files in the Python package (server/tvm_explorer/graphview/assets/)
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

// The webviews' scripts: one self-contained, minified browser script each; a banner carries the
// notices of what is bundled into it.
const webview = {
  bundle: true,
  platform: 'browser',
  format: 'iife',
  target: 'es2020',
  minify: true,
  legalComments: 'none',
  logLevel: 'info',
};

await esbuild.build({
  ...webview,
  entryPoints: ['webview/graph/main.ts'],
  outfile: 'out/graph.js',
  banner: { js: `/*! TVM Explorer model graph (Apache-2.0). ${CHART_JS_NOTICE} */` },
});
// ELK apart from the app (out/elk.js): the page never compiles it; the layout worker starts from
// its text alone. It is elkjs's own worker script, wrapped so that the same text also runs on a
// page (where no worker may start): there it leaves its in-page stand-in for a worker
// (self.tvmxElkFakeWorker). In the worker, an error is posted as its message (a Java exception
// object of GWT's may not survive postMessage).
const elkWorker = readFileSync(resolve(here, '..', 'node_modules', 'elkjs', 'lib', 'elk-worker.min.js'), 'utf8');
writeFileSync(
  resolve(here, 'out/elk.js'),
  '/*! elkjs 0.12.1 (https://github.com/kieler/elkjs, source there), Eclipse Public License 2.0 '
    + '(https://www.eclipse.org/legal/epl-2.0/); its worker script, wrapped by TVM Explorer. */\n'
    + '(function (module, exports) {\n'
    + elkWorker
    + '\n;if (typeof document === "undefined" && typeof self !== "undefined") {'
    + ' var post = self.postMessage.bind(self);'
    + ' self.postMessage = function (m) { if (m && m.error !== undefined) { m = { id: m.id, error: String((m.error && m.error.message) || m.error) }; } post(m); };'
    + ' } else { self.tvmxElkFakeWorker = module.exports.Worker; }\n'
    + '})((function () { var m = { exports: {} }; return m; })(), {});\n',
);
// The report draws the memory timeline too: its stylesheet goes with the graph's.
writeFileSync(
  resolve(here, 'out/graph.css'),
  readFileSync(resolve(here, 'webview/graph/style.css'), 'utf8') + '\n' + readFileSync(resolve(here, 'webview/memory/style.css'), 'utf8'),
);

// The memory timeline webview (webview/memory/, Chart.js bundled), and its stylesheet.
await esbuild.build({
  ...webview,
  entryPoints: ['webview/memory/main.ts'],
  outfile: 'out/memory.js',
  banner: { js: `/*! TVM Explorer memory timeline (Apache-2.0). ${CHART_JS_NOTICE} */` },
});
copyFileSync(resolve(here, 'webview/memory/style.css'), resolve(here, 'out/memory.css'));
const assets = resolve(here, '..', 'server', 'tvm_explorer', 'graphview', 'assets');
mkdirSync(assets, { recursive: true });
for (const name of ['graph.js', 'graph.css', 'elk.js']) {
  copyFileSync(resolve(here, 'out', name), resolve(assets, name));
}
