/**
 * The bundle the e2e tests browse: compiled at test start from tests/models/small_cnn_fp32.tflite
 * with the repo's tvm-explorer (target c), and read back (manifest.json, index.json) so that
 * every test knows where to click and what to expect without hard-coded line numbers.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join } from 'node:path';
import { ARTIFACTS, MODELS, PYTHON, REPO } from './paths.mjs';

/** Compiles `model` into `<dir>/<name>.bundle` and returns the bundle path. With `cache`, a
 * bundle compiled before with the same model, target and options is copied instead, from the
 * store in test-artifacts/bundle-cache (tests/bundle_store.py) that the pytest session fills too. A suite gets its own copy,
 * which it may change or compile again. */
export function compileBundle(dir, { model = 'small_cnn_fp32.tflite', name = 'small_cnn', target = 'c', extra = [], cache = false } = {}) {
  mkdirSync(dir, { recursive: true });
  const out = join(dir, `${name}.bundle`);
  if (cache && process.env.TVM_EXPLORER_E2E_BUNDLE !== 'fake') {
    // tests/bundle_store.py keys, locks and fills the store (one implementation for both sides).
    const modelPath = isAbsolute(model) ? model : join(MODELS, model);
    const cached = execFileSync(PYTHON, ['-m', 'tests.bundle_store', modelPath, target, ...extra.map(String)], {
      cwd: REPO,
      env: { ...process.env, TVM_EXPLORER_ARTIFACTS: join(ARTIFACTS, '..') },
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 900000,
      encoding: 'utf8',
    }).trim();
    cpSync(cached, out, { recursive: true });
    return out;
  }
  if (process.env.TVM_EXPLORER_E2E_BUNDLE === 'fake') {
    // Development only: the hand-written bundle of tests/lsp, for when no capture is at hand.
    execFileSync(PYTHON, ['-c', 'import sys; from pathlib import Path; sys.path.insert(0, "tests/lsp");'
      + ' from fake_bundle import write_fake_bundle; write_fake_bundle(Path(sys.argv[1]))', out], { cwd: REPO });
    return out;
  }
  const cli = join(dirname(PYTHON), 'tvm-explorer');
  if (!existsSync(cli)) throw new Error(`${cli} not found: run scripts/setup.sh`);
  execFileSync(cli, ['compile', isAbsolute(model) ? model : join(MODELS, model), '-o', out, '--target', target, ...extra], {
    cwd: REPO,
    stdio: ['ignore', 'inherit', 'inherit'],
    timeout: 600000,
  });
  return out;
}

/** A bundle read back: manifest, index, document texts, offset → position helpers. */
export class BundleView {
  constructor(root) {
    this.root = root;
    this.manifest = JSON.parse(readFileSync(join(root, 'manifest.json'), 'utf8'));
    this.index = JSON.parse(readFileSync(join(root, 'index.json'), 'utf8'));
    this.texts = new Map();
  }

  /** Text of a bundle document as code points (offsets in index.json count code points). */
  codePoints(path) {
    if (!this.texts.has(path)) this.texts.set(path, Array.from(readFileSync(join(this.root, path), 'utf8')));
    return this.texts.get(path);
  }

  /** 0-based line and code-point column of a character offset. */
  position(path, offset) {
    const cps = this.codePoints(path);
    let line = 0;
    let lineStart = 0;
    for (let i = 0; i < offset; i++) {
      if (cps[i] === '\n') {
        line += 1;
        lineStart = i + 1;
      }
    }
    return { line, character: offset - lineStart };
  }

  /** The text of a range. */
  slice(path, start, end) {
    return this.codePoints(path).slice(start, end).join('');
  }

  /** Ranges of a document as objects. */
  ranges(path) {
    const doc = this.index.documents[path];
    return (doc?.ranges ?? []).map(([start, end, set, kind, key, link]) => ({
      start, end, kind, key, link, origins: this.index.origin_sets[set] ?? [],
    }));
  }

  layer(id) {
    return this.index.layers[id];
  }

  /** Documents of a stage, in manifest order. */
  documents(stage) {
    return this.manifest.documents.filter((d) => d.stage === stage).map((d) => d.path);
  }

  /** The model document's entry of a layer: path and 0-based line. */
  layerEntry(layerId) {
    const path = this.documents('model')[0];
    const r = this.ranges(path).find((x) => x.kind === 'layer' && x.origins.some(([id]) => id === layerId));
    if (!r) throw new Error(`layer ${layerId} has no entry in ${path}`);
    return { path, ...this.position(path, r.start), text: this.slice(path, r.start, r.end) };
  }

  /**
   * A statement of `path` inside a loop whose only origin is a layer with `opcode`, with the
   * first identifier of its text (what a person would click) and its position. The most deeply
   * nested one is taken: for a convolution, the multiply-accumulate of its reduction loop.
   */
  statementOf(path, opcode, { inLoop = true, accept = () => true } = {}) {
    const ranges = this.ranges(path);
    const loops = ranges.filter((r) => r.kind === 'loop');
    const candidates = ranges.filter(
      (r) =>
        r.kind === 'stmt' &&
        r.origins.length > 0 &&
        r.origins.every(([id]) => this.layer(id).opcode === opcode) &&
        (!inLoop || loops.some((l) => l.start <= r.start && r.end <= l.end)),
    );
    const depth = (r) => loops.filter((l) => l.start <= r.start && r.end <= l.end).length;
    candidates.sort((a, b) => depth(b) - depth(a) || a.start - b.start);
    for (const r of candidates) {
      const text = this.slice(path, r.start, r.end);
      const m = /[A-Za-z_][A-Za-z0-9_]*/.exec(text.split('\n')[0]);
      if (!m) continue;
      const pos = this.position(path, r.start + m.index);
      if (!accept(pos)) continue;
      const lineText = this.codePoints(path).join('').split('\n')[pos.line];
      return { ...r, word: m[0], ...pos, lineText, layers: r.origins.map(([id]) => this.layer(id)) };
    }
    throw new Error(`no ${opcode} statement${inLoop ? ' inside a loop' : ''} in ${path} (that was asked for)`);
  }

  /** The CONV_2D statement (statementOf) of the generated C file, whose path is `path`. */
  cConv() {
    const path = this.documents('code').find((p) => p.endsWith('.c'));
    return { ...this.statementOf(path, 'CONV_2D'), path };
  }

  /** The first pass that changed the IR and has a document before it. */
  changedPass(stage) {
    const p = this.manifest.passes.find((x) => x.changed && x.before && (!stage || x.stage === stage));
    if (!p) throw new Error(`no changed ${stage ?? ''} pass with a previous document`);
    return p;
  }
}
