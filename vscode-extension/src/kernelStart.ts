/**
 * Where a freshly compiled bundle's generated code is opened: at its hottest kernel when the
 * bundle was profiled (costs.json, measured time), else at its first kernel in the file —
 * never at the prototypes on top of module.c. In C the kernel's function first checks its
 * arguments for hundreds of lines: the place shown is its first loop, where the work starts.
 */
import * as fs from 'fs';
import * as path from 'path';

interface KernelCost {
  name: string;
  time_ms?: number | null;
}

/** The kernels of a bundle (from costs.json), hottest first when profiled; [] without costs. */
export function kernelsByHeat(bundle: string): { names: string[]; profiled: boolean } {
  try {
    const costs = JSON.parse(fs.readFileSync(path.join(bundle, 'costs.json'), 'utf8'));
    const kernels: KernelCost[] = (costs.kernels ?? []).filter((k: KernelCost) => typeof k?.name === 'string');
    const profiled = costs.profile?.status === 'measured' && kernels.some((k) => typeof k.time_ms === 'number');
    if (profiled) {
      kernels.sort((a, b) => (b.time_ms ?? -1) - (a.time_ms ?? -1));
    }
    return { names: kernels.map((k) => k.name), profiled };
  } catch {
    return { names: [], profiled: false };
  }
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The 0-based line of the definition (not the prototype) of `kernel` in generated code. */
function definitionLine(lines: string[], kernel: string, ext: string): number {
  const name = escape(kernel);
  const pattern = ext === '.ll'
    ? new RegExp(`^define\\b.*@(?:__tvm_ffi_)?${name}(?:_compute_)?\\(`)
    : ext === '.cu'
      ? new RegExp(`__global__.*\\b${name}(?:_kernel\\d*)?\\(.*\\)\\s*\\{\\s*$`)
      : new RegExp(`^\\S.*\\b(?:__tvm_ffi_)?${name}\\(.*\\)\\s*\\{\\s*$`);
  return lines.findIndex((l) => pattern.test(l));
}

/** In C, the first loop of the function defined at `start` (its argument checks skipped). */
function firstLoop(lines: string[], start: number): number {
  for (let i = start + 1; i < lines.length && !/^\S.*\)\s*\{\s*$/.test(lines[i]); i++) {
    if (/^\s+for \(/.test(lines[i])) {
      return i;
    }
  }
  return start;
}

/** Where to open `doc` (a generated source of `bundle`): the line and the kernel's name. */
export function kernelStart(bundle: string, doc: string): { line: number; kernel: string; profiled: boolean } | undefined {
  const { names, profiled } = kernelsByHeat(bundle);
  if (!names.length) {
    return undefined;
  }
  let lines: string[];
  try {
    lines = fs.readFileSync(doc, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const ext = path.extname(doc);
  const found = names
    .map((kernel) => ({ kernel, line: definitionLine(lines, kernel, ext) }))
    .filter((k) => k.line >= 0);
  if (!found.length) {
    return undefined;
  }
  // Profiled: the hottest kernel found; else the one that comes first in the file.
  const pick = profiled ? found[0] : found.reduce((a, b) => (b.line < a.line ? b : a));
  const line = ext === '.c' ? firstLoop(lines, pick.line) : pick.line;
  return { line, kernel: pick.kernel, profiled };
}
