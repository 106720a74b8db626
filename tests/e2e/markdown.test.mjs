// Issue 26 item 13, extension side: the one escaping function of the extension
// (vscode-extension/src/markdown.ts) on the hostile strings of tests/lsp/hostile_strings.json,
// rendered by a CommonMark renderer's rules as far as they matter here: no link, image, HTML tag
// or line break survives, and a code span is never closed early. No editor needed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const HOSTILE = JSON.parse(readFileSync(join(root, 'tests', 'lsp', 'hostile_strings.json'), 'utf8'));

async function load() {
  const out = join(mkdtempSync(join(tmpdir(), 'md-')), 'markdown.mjs');
  await build({ entryPoints: [join(root, 'vscode-extension', 'src', 'markdown.ts')], outfile: out,
    format: 'esm', bundle: true, platform: 'node', logLevel: 'silent' });
  return import(pathToFileURL(out).href);
}

const md = await load();

/** Markup a Markdown renderer would act on in `s` (outside code spans), if any. */
function liveMarkup(s) {
  const outside = s.replace(/(`+)[^`]*?\1/g, '');
  const unescaped = outside.replace(/\\[\s\S]/g, '');
  return [/\[[^\]]*\]\(/, /!\[/, /<[a-zA-Z/!?]/, /[\r\n\u2028\u2029]/, /https?:/, /command:/]
    .filter((re) => re.test(unescaped));
}

test('text() leaves no live markup in any hostile string', () => {
  for (const s of HOSTILE) {
    const got = md.text(s);
    assert.deepEqual(liveMarkup(got), [], `${JSON.stringify(s)} -> ${JSON.stringify(got)}`);
    assert.doesNotMatch(got, /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  }
});

test('code() is one code span holding the string, whatever backticks it has', () => {
  for (const s of HOSTILE) {
    const got = md.code(s);
    const fence = got.match(/^`+/)[0];
    assert.ok(got.endsWith(fence), got);
    const body = got.slice(fence.length, got.length - fence.length);
    // no run of backticks inside as long as the fence: the span cannot close early
    assert.ok(!(body.match(/`+/g) ?? []).some((run) => run.length >= fence.length), got);
    assert.doesNotMatch(body, /[\r\n\u2028\u2029]/);
  }
  assert.equal(md.code('a`b'), '``a`b``');
  assert.equal(md.code('`x`'), '`` `x` ``');
});

test('the tooltips that take server strings build them with markdown.ts and untrusted MarkdownStrings', () => {
  const src = (f) => readFileSync(join(root, 'vscode-extension', 'src', f), 'utf8');
  for (const f of ['numericsView.ts', 'compareView.ts']) {
    assert.doesNotMatch(src(f), /new vscode\.MarkdownString/, `${f} builds a MarkdownString of its own`);
    assert.match(src(f), /untrustedMarkdown\(/);
  }
  assert.match(src('tooltip.ts'), /isTrusted = false/);
  assert.match(src('tooltip.ts'), /supportHtml = false/);
  const all = ['bisect.ts', 'hotLayers.ts', 'layerPlaces.ts', 'passView.ts', 'heat.ts', 'modelView.ts', 'reveal.ts'];
  for (const f of all) {
    assert.doesNotMatch(src(f), /MarkdownString/, `${f}: Markdown from server strings must use tooltip.ts`);
  }
});

test('plain() leaves no link in a notification, and every notification with server or CLI text uses it', () => {
  for (const s of HOSTILE) {
    assert.doesNotMatch(md.plain(s), /\]\s*\(/, s);
  }
  const files = ['bisect.ts', 'compile.ts', 'compareView.ts', 'modelView.ts', 'passDiff.ts'];
  for (const f of files) {
    const src = readFileSync(join(root, 'vscode-extension', 'src', f), 'utf8');
    for (const call of src.matchAll(/show(?:Information|Warning|Error)Message\(\s*(`[^`]*\$\{)/g)) {
      assert.fail(`${f}: a notification interpolates text without md.plain: ${call[1]}`);
    }
  }
});
