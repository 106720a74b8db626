/**
 * The "Hot Layers" view: the layers of each bundle, most expensive first (measured time, or
 * generated code size when the bundle was compiled without `--profile`), from
 * `tvmExplorer/costs`. Clicking a layer opens it in the model document and shows its places.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { Bundle, BundleTree } from './bundles';
import * as ext from './lsp_ext';
import { showPlaces } from './reveal';

export type HotNode =
  | { kind: 'bundle'; bundle: Bundle; costs: ext.CostsResult }
  | { kind: 'layer'; bundle: Bundle; layer: ext.LayerCost; costs: ext.CostsResult };

type BundleNode = Extract<HotNode, { kind: 'bundle' }>;

export class HotLayersProvider extends BundleTree<HotNode> {
  private cache = new Map<string, Promise<ext.CostsResult | undefined>>();
  view: vscode.TreeView<HotNode> | undefined;
  /** `layer`: one row per layer; `module`: per module, repeated decoder layers merged. */
  private group: 'layer' | 'module' = 'layer';

  refresh(): void {
    this.cache.clear();
    this.changed.fire(undefined);
  }

  /** Rows per layer or per module (the toggle in the view's title bar). */
  async setGroup(group: 'layer' | 'module'): Promise<void> {
    this.group = group;
    await vscode.commands.executeCommand('setContext', 'tvmExplorer.hotLayersByModule', group === 'module');
    this.refresh();
  }

  private costsOf(bundle: Bundle): Promise<ext.CostsResult | undefined> {
    let got = this.cache.get(bundle.info.uri);
    if (!got) {
      const client = this.server.client;
      got = client
        ? Promise.resolve(client.sendRequest(ext.costs, { bundle: bundle.info.uri, group: this.group })).catch(() => undefined)
        : Promise.resolve(undefined);
      this.cache.set(bundle.info.uri, got);
    }
    return got;
  }

  async getChildren(node?: HotNode): Promise<HotNode[]> {
    if (!node) {
      const bundles = this.registry.list();
      const all: BundleNode[] = [];
      const damaged: string[] = [];
      for (const bundle of bundles) {
        const costs = await this.costsOf(bundle);
        if (costs && costs.layers.length) {
          all.push({ kind: 'bundle', bundle, costs });
        } else if (costs?.status === 'damaged' && costs.reason) {
          damaged.push(costs.reason); // a damaged costs.json: say so instead of an empty view
        }
      }
      all.sort(byHeat);
      this.setMessage(all);
      if (this.view && damaged.length && !all.length) {
        this.view.message = damaged.join('\n');
      }
      // One bundle: its layers at the top level.
      return all.length === 1 ? this.layers(all[0]) : all;
    }
    return node.kind === 'bundle' ? this.layers(node) : [];
  }

  private layers(node: BundleNode): HotNode[] {
    return node.costs.layers.map((layer) => ({ kind: 'layer', bundle: node.bundle, layer, costs: node.costs }));
  }

  private setMessage(nodes: HotNode[]): void {
    if (!this.view) {
      return;
    }
    if (nodes.length === 1 && nodes[0].kind === 'bundle') {
      const c = nodes[0].costs;
      const scope = c.scope && this.group === 'layer' ? ` · module paths leave out ${c.scope}` : '';
      this.view.message = (c.measured ? c.note : `${c.note}: ranked by generated code size`) + scope;
    } else {
      this.view.message = undefined;
    }
  }

  getTreeItem(node: HotNode): vscode.TreeItem {
    if (node.kind === 'bundle') {
      const item = new vscode.TreeItem(path.basename(node.bundle.dir), vscode.TreeItemCollapsibleState.Expanded);
      item.id = `hot:${node.bundle.info.uri}`;
      item.description = node.costs.measured ? `${node.costs.total_ms?.toFixed(2)} ms per run` : 'not profiled';
      item.tooltip = node.costs.note;
      item.iconPath = new vscode.ThemeIcon('package');
      return item;
    }
    const { layer, costs } = node;
    if (layer.members?.length) {
      return this.moduleItem(node);
    }
    // The last part of the TF name (conv2d_1_2 of small_cnn_1/conv2d_1_2) keeps rows short; a
    // PyTorch layer is its module path (layers.0.mlp.down_proj), its graph node (mm_6) after
    // the figures, which stay in view at the side bar's default width. The tooltip has the
    // whole name.
    const short =
      layer.name
        .split('/')
        .filter((p) => p)
        .pop() ?? layer.name;
    const label = layer.label || `${layer.opcode} ${short}`;
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
    item.id = `hot:${node.bundle.info.uri}#${layer.id}`;
    item.description = layer.label && layer.node ? `${layer.summary} · ${layer.node}` : layer.summary;
    const where = layer.subgraph ? `subgraph ${layer.subgraph}, op ${layer.op_index}` : `op ${layer.op_index}`;
    const shared = layer.shared_kernels.length ? `\nShared kernels (time split by work): ${layer.shared_kernels.join(', ')}` : '';
    item.tooltip = `#${layer.rank} ${layer.opcode} ${layer.name} (${where})\n${layer.summary}\nKernels: ${
      layer.kernels.join(', ') || 'none'
    }${shared}\n${costs.note}`;
    item.accessibilityInformation = { label: `rank ${layer.rank}: ${layer.opcode} ${layer.name}, ${layer.summary}` };
    return heated(item, 'flame', costs.measured ? (layer.share ?? 0) : 0, layer.location);
  }

  /** A module row: its (compressed) path, what it sums, and a click to its first layer. */
  private moduleItem(node: Extract<HotNode, { kind: 'layer' }>): vscode.TreeItem {
    const { layer, costs } = node;
    const item = new vscode.TreeItem(layer.name, vscode.TreeItemCollapsibleState.None);
    item.id = `hot:${node.bundle.info.uri}#module:${layer.name}`;
    item.description = layer.summary;
    const members = layer.members ?? [];
    const summed = members.length > 1 ? `\nSums ${members.length} modules: ${members.join(', ')}` : '';
    item.tooltip = `#${layer.rank} ${layer.name}\n${layer.summary}${summed}\nKernels: ${layer.kernels.join(', ') || 'none'}\n${costs.note}`;
    item.accessibilityInformation = { label: `rank ${layer.rank}: module ${layer.name}, ${layer.summary}` };
    return heated(item, members.length > 1 ? 'layers' : 'symbol-module', costs.measured ? (layer.share ?? 0) : 0, layer.location);
  }
}

/** Opens the model document at a layer and shows every place it ended up in. */
export async function revealLayer(uri: string, start: { line: number; character: number }): Promise<void> {
  const position = new vscode.Position(start.line, start.character);
  await vscode.window.showTextDocument(vscode.Uri.parse(uri), {
    selection: new vscode.Range(position, position),
    preview: false,
  });
  await showPlaces(uri, start);
}

/** Bundles in the order Hot Layers lists them: the profiled ones first, slowest run first, then
 * the ones without a profile (ranked by code size only), by folder name. */
export function byHeat(a: { bundle: Bundle; costs: ext.CostsResult }, b: { bundle: Bundle; costs: ext.CostsResult }): number {
  const ta = a.costs.measured ? (a.costs.total_ms ?? 0) : -1;
  const tb = b.costs.measured ? (b.costs.total_ms ?? 0) : -1;
  return tb - ta || path.basename(a.bundle.dir).localeCompare(path.basename(b.bundle.dir));
}

/** `item` with its icon colored by `heat` (its share of the measured time) and, when the layer
 * has a place, a click that reveals it and its places. */
function heated(item: vscode.TreeItem, icon: string, heat: number, location: ext.LayerCost['location']): vscode.TreeItem {
  const color = heat >= 0.25 ? 'charts.red' : heat >= 0.1 ? 'charts.orange' : heat >= 0.02 ? 'charts.yellow' : 'disabledForeground';
  item.iconPath = new vscode.ThemeIcon(icon, new vscode.ThemeColor(color));
  if (location) {
    item.command = {
      command: 'tvmExplorer.revealLayer',
      title: 'Go to Layer and Its Places',
      arguments: [location.uri, location.range.start],
    };
  }
  return item;
}
