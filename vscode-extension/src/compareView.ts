/**
 * "Compare With Bundle…": the layers of two bundles side by side (`tvmExplorer/compareBundles`)
 * in the Comparison view, each with its code-size delta and whether its generated code changed;
 * selecting a layer opens a split diff of its generated code in A and in B, served as virtual
 * documents (`tvmExplorer/compareLayerCode`) under deterministic `tvm-explorer-compare:` URIs.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { BundleRegistry } from './bundles';
import { ServerManager } from './client';
import {
  BundleSummary,
  compareBundles,
  compareLayerCode,
  CompareResult,
  CompareRow,
  CompareSide,
  failureMessage,
  LayerRef,
} from './lsp_ext';
import * as md from './markdown';
import { untrustedMarkdown } from './tooltip';

export const COMPARE_SCHEME = 'tvm-explorer-compare';

const EXTENSIONS: Record<string, string> = { c: '.c', cuda: '.cu', llvm: '.ll' };
const KIND_NAMES: Record<string, string> = { c: 'C', cuda: 'CUDA', ll: 'LLVM IR' };

/** `A: C, B: LLVM IR` when the two sides are different kinds of code, else undefined. */
export function differentKinds(r: CompareResult): string | undefined {
  if (r.code_compared !== false) {
    return undefined;
  }
  const name = (k: string | null | undefined) => KIND_NAMES[k ?? ''] ?? 'no code';
  return `A: ${name(r.code_kinds?.a)}, B: ${name(r.code_kinds?.b)}`;
}

function bytes(n: number | undefined): string {
  if (n === undefined) {
    return '–';
  }
  return n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(0)} KiB` : `${n} B`;
}

type Node =
  | { kind: 'summary'; text: string; tooltip: string }
  | { kind: 'layer'; row: CompareRow }
  | { kind: 'unmatched'; side: 'a' | 'b'; layers: LayerRef[] }
  | { kind: 'lone'; side: 'a' | 'b'; layer: LayerRef };

function where(l: { subgraph: number; op_index: number }): string {
  return l.subgraph ? `${l.subgraph}:${l.op_index}` : `${l.op_index}`;
}

function bundleLabel(uri: string, info: BundleSummary): string {
  const opts = info.options?.exact_origins ? ', exact origins' : '';
  return `${path.basename(vscode.Uri.parse(uri).fsPath)} (${info.target}${opts})`;
}

export class ComparisonTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  result: CompareResult | undefined;

  set(result: CompareResult | undefined): void {
    this.result = result;
    void vscode.commands.executeCommand('setContext', 'tvmExplorer.hasComparison', !!result);
    this.changed.fire(undefined);
  }

  dispose(): void {
    this.changed.dispose();
  }

  getChildren(node?: Node): Node[] {
    const r = this.result;
    if (!r) {
      return [];
    }
    if (!node) {
      const changedCount = r.layers.filter((l) => l.changed).length;
      const how = r.matched_by === 'sha256' ? 'same model' : 'matched by layer name';
      const kinds = differentKinds(r);
      const out: Node[] = [
        {
          kind: 'summary',
          text: kinds
            ? `${r.layers.length} layers (${how}), different code kinds: kernels, time and workspace compared`
            : `${r.layers.length} layers (${how}), ${changedCount} changed`,
          tooltip:
            `A: ${r.a}\nB: ${r.b}` +
            (kinds ? `\nDifferent code kinds (${kinds}): code size and code are compared only between code of one language.` : ''),
        },
      ];
      out.push(...r.layers.map((row): Node => ({ kind: 'layer', row })));
      for (const side of ['a', 'b'] as const) {
        if (r.unmatched[side].length) {
          out.push({ kind: 'unmatched', side, layers: r.unmatched[side] });
        }
      }
      return out;
    }
    if (node.kind === 'unmatched') {
      return node.layers.map((layer): Node => ({ kind: 'lone', side: node.side, layer }));
    }
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case 'summary': {
        const item = new vscode.TreeItem(node.text);
        item.tooltip = node.tooltip;
        // VS Code reads a plain-string tooltip as the row's accessible name; the count comes first.
        item.accessibilityInformation = { label: `${node.text}. ${node.tooltip.replace(/\n/g, ', ')}` };
        item.iconPath = new vscode.ThemeIcon('diff');
        return item;
      }
      case 'unmatched': {
        const item = new vscode.TreeItem(
          `Only in ${node.side.toUpperCase()} (${node.layers.length})`,
          vscode.TreeItemCollapsibleState.Collapsed,
        );
        item.iconPath = new vscode.ThemeIcon('circle-slash');
        return item;
      }
      case 'lone': {
        const item = new vscode.TreeItem(`op ${where(node.layer)} ${node.layer.opcode}`);
        item.description = node.layer.name;
        return item;
      }
      case 'layer': {
        const { row } = node;
        const delta = row.b.code_lines - row.a.code_lines;
        const item = new vscode.TreeItem(`op ${where(row)} ${row.opcode}`);
        const sign = delta > 0 ? '+' : delta < 0 ? '−' : '±';
        const ms = (s: CompareSide) => (s.costs?.time_ms !== undefined ? `${s.costs.time_ms.toFixed(3)} ms` : undefined);
        const time = ms(row.a) || ms(row.b) ? ` · ${ms(row.a) ?? '–'} → ${ms(row.b) ?? '–'}` : '';
        const kinds = this.result ? differentKinds(this.result) : undefined;
        if (kinds || row.changed === null) {
          // C lines and LLVM IR lines are not one measure: kernels, time and workspace only.
          const ws = `${bytes(row.a.costs?.workspace_bytes)} → ${bytes(row.b.costs?.workspace_bytes)}`;
          const kernels = `${row.a.kernels.length} → ${row.b.kernels.length} kernels`;
          item.description = `${kernels}${time} · workspace ${ws} · ${row.name}`;
          item.tooltip = untrustedMarkdown(
            `**op ${md.text(where(row))} ${md.text(row.opcode)}** ${md.code(row.name)}\n\n` +
              `A kernels: ${row.a.kernels.map((k) => md.code(k)).join(', ') || '–'}\n\n` +
              `B kernels: ${row.b.kernels.map((k) => md.code(k)).join(', ') || '–'}\n\n` +
              `Different code kinds (${md.text(kinds ?? '')}): code size and the layer diff are shown only between code of one language.`,
          );
          item.iconPath = new vscode.ThemeIcon('symbol-operator', new vscode.ThemeColor('disabledForeground'));
          return item;
        }
        // What changed first: the sidebar is narrow and cuts the end of the description.
        item.description =
          `${row.changed ? 'changed' : 'same'} · ${sign}${Math.abs(delta)} lines ` +
          `(${row.a.code_lines} → ${row.b.code_lines})${time} · ${row.name}`;
        item.tooltip = untrustedMarkdown(
          `**op ${md.text(where(row))} ${md.text(row.opcode)}** ${md.code(row.name)}\n\n` +
            `A kernels: ${row.a.kernels.map((k) => md.code(k)).join(', ') || '–'} (${md.text(row.a.code_lines)} lines)\n\n` +
            `B kernels: ${row.b.kernels.map((k) => md.code(k)).join(', ') || '–'} (${md.text(row.b.code_lines)} lines)\n\n` +
            (row.changed ? 'Generated code changed.' : 'Generated code is the same (up to names).'),
        );
        item.iconPath = new vscode.ThemeIcon(
          row.changed ? 'diff-modified' : 'pass',
          new vscode.ThemeColor(row.changed ? 'gitDecoration.modifiedResourceForeground' : 'disabledForeground'),
        );
        item.command = { command: 'tvmExplorer.openLayerDiff', title: 'Open Layer Diff', arguments: [row] };
        return item;
      }
    }
  }
}

/** Serves one side of a layer's code; the URI's query names the bundles, the layer, the side. */
export class LayerCodeProvider implements vscode.TextDocumentContentProvider {
  constructor(private readonly server: ServerManager) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const q = new URLSearchParams(uri.query);
    const client = this.server.client;
    if (!client) {
      return '// the TVM Explorer server is not running\n';
    }
    try {
      const got = await client.sendRequest(compareLayerCode, {
        a: q.get('a') ?? '',
        b: q.get('b') ?? '',
        subgraph: Number(q.get('subgraph')),
        op_index: Number(q.get('op')),
        side: q.get('side') === 'b' ? 'b' : 'a',
      });
      return got.text;
    } catch (err) {
      return `// ${failureMessage(err)}\n`; // why there is no code, where the code would be
    }
  }
}

/** The deterministic URI of one side of a layer's code in a comparison. */
export function layerUri(result: CompareResult, row: CompareRow, side: 'a' | 'b'): vscode.Uri {
  const info = side === 'a' ? result.a_info : result.b_info;
  const bundle = path.basename(vscode.Uri.parse(side === 'a' ? result.a : result.b).fsPath);
  const ext = EXTENSIONS[info.target ?? ''] ?? '.txt';
  const query = new URLSearchParams({
    a: result.a,
    b: result.b,
    subgraph: String(row.subgraph),
    op: String(row.op_index),
    side,
  }).toString();
  return vscode.Uri.from({
    scheme: COMPARE_SCHEME,
    path: `/${side.toUpperCase()}/${bundle}/op${where(row).replace(':', '-')}-${row.opcode}${ext}`,
    query,
  });
}

export class Comparisons implements vscode.Disposable {
  readonly tree = new ComparisonTree();
  private readonly view: vscode.TreeView<Node>;

  constructor(
    private readonly server: ServerManager,
    private readonly registry: BundleRegistry,
  ) {
    this.view = vscode.window.createTreeView('tvmExplorer.comparison', { treeDataProvider: this.tree });
  }

  dispose(): void {
    this.view.dispose();
    this.tree.dispose();
  }

  /** Asks for bundle B (and A when no bundle document is active), then shows the comparison. */
  async compareWith(arg?: vscode.Uri | string): Promise<void> {
    const client = this.server.client;
    if (!client) {
      void vscode.window.showWarningMessage('TVM Explorer: the language server is not running.');
      return;
    }
    const bundles = this.registry.list();
    const active = vscode.window.activeTextEditor?.document.uri;
    let a = active ? this.registry.bundleOf(active)?.info.uri : undefined;
    if (!a) {
      const pick = await vscode.window.showQuickPick(
        bundles.map((b) => ({ label: path.basename(b.dir), description: `${b.info.model} · ${b.info.target}`, uri: b.info.uri })),
        { title: 'Compare: bundle A' },
      );
      a = pick?.uri;
    }
    if (!a) {
      return;
    }
    let b = typeof arg === 'string' ? arg : arg?.toString();
    if (!b) {
      const browse = { label: '$(folder-opened) Browse…', description: 'a bundle directory outside the workspace', uri: '' };
      const pick = await vscode.window.showQuickPick(
        [
          ...bundles
            .filter((x) => x.info.uri !== a)
            .map((x) => ({
              label: path.basename(x.dir),
              description: `${x.info.model} · ${x.info.target}`,
              uri: x.info.uri,
            })),
          browse,
        ],
        { title: `Compare ${path.basename(vscode.Uri.parse(a).fsPath)} with bundle…` },
      );
      if (pick === browse) {
        const chosen = await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false, openLabel: 'Compare' });
        b = chosen?.[0]?.toString();
      } else {
        b = pick?.uri;
      }
    }
    if (!b) {
      return;
    }
    let result: CompareResult;
    try {
      result = await client.sendRequest(compareBundles, { a, b });
    } catch (err) {
      void vscode.window.showErrorMessage(md.plain(`TVM Explorer: ${failureMessage(err)}`));
      return;
    }
    this.tree.set(result);
    this.view.title = `Comparison: ${bundleLabel(result.a, result.a_info)} ↔ ${bundleLabel(result.b, result.b_info)}`;
    await vscode.commands.executeCommand('tvmExplorer.comparison.focus');
  }

  /** Split diff of a layer's generated code in A (left) and B (right). */
  async openLayerDiff(row: CompareRow): Promise<void> {
    const r = this.tree.result;
    if (!r || !row) {
      return;
    }
    const kinds = differentKinds(r);
    if (kinds) {
      void vscode.window.showInformationMessage(
        md.plain(
          `TVM Explorer: no layer diff between different code kinds (${kinds}); the layer diff is shown only when both sides are code of one language.`,
        ),
      );
      return;
    }
    const title = `op ${where(row)} ${row.opcode} ${row.name}: ` + `${bundleLabel(r.a, r.a_info)} ↔ ${bundleLabel(r.b, r.b_info)}`;
    await vscode.commands.executeCommand('vscode.diff', layerUri(r, row, 'a'), layerUri(r, row, 'b'), title, {
      preview: true,
    });
  }
}
