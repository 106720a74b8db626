/**
 * The "Numerics" tree: for each bundle compiled with `--numerics`, its layers in graph order
 * with their error against the reference interpreter; divergent layers are marked, the first
 * divergence most of all. Selecting a layer opens the model document at it (where go to
 * definition, references and "Show All Places" lead on to its code).
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { Bundle, BundleTree } from './bundles';
import type { Ctx } from './ctx';
import * as ext from './lsp_ext';
import * as md from './markdown';
import { untrustedMarkdown } from './tooltip';

export type NumericsNode =
  { kind: 'bundle'; bundle: Bundle; result: ext.NumericsResult } | { kind: 'layer'; bundle: Bundle; layer: ext.NumericsLayer };

export class NumericsTreeProvider extends BundleTree<NumericsNode> {
  /** Bumped on every change of the bundle list: a drawing begun before it is stale. */
  private generation = 0;
  private retries = 0;
  private retry: ReturnType<typeof setTimeout> | undefined;

  /** Draws the view again (a bundle was loaded, reloaded or removed). */
  refresh(): void {
    this.generation++;
    this.retries = 0;
    this.changed.fire(undefined);
  }

  async getChildren(node?: NumericsNode): Promise<NumericsNode[]> {
    if (node?.kind === 'bundle') {
      return node.result.layers.map((layer) => ({ kind: 'layer', bundle: node.bundle, layer }));
    }
    if (node) {
      return [];
    }
    const client = this.server.client;
    if (!client) {
      return [];
    }
    const generation = this.generation;
    const out: NumericsNode[] = [];
    let failed = false;
    for (const bundle of this.registry.list()) {
      try {
        const result = await client.sendRequest(ext.numerics, { bundle: bundle.info.uri });
        if (result && (result.reference || result.problem)) {
          out.push({ kind: 'bundle', bundle, result });
        }
      } catch (err) {
        failed = true;
        client.outputChannel.appendLine(`${ext.numerics.method} failed: ${String(err)}`);
      }
    }
    if (generation !== this.generation) {
      // The bundle list changed while this drawing waited for the server (a bundle finished
      // loading): its answer misses that bundle, so draw once more rather than keep it.
      this.redrawSoon(0);
    } else if (failed && this.retries < 5) {
      // A server busy loading may fail a request: ask again instead of dropping the bundle.
      this.retries++;
      this.redrawSoon(2000);
    }
    return out;
  }

  private redrawSoon(ms: number): void {
    clearTimeout(this.retry);
    this.retry = setTimeout(() => this.changed.fire(undefined), ms);
  }

  getTreeItem(node: NumericsNode): vscode.TreeItem {
    if (node.kind === 'bundle') {
      const { result, bundle } = node;
      const item = new vscode.TreeItem(path.basename(bundle.dir), vscode.TreeItemCollapsibleState.Expanded);
      item.id = `numerics:${bundle.info.uri}`;
      if (result.problem) {
        // A damaged numerics.json: the bundle stays listed, saying why it shows no layers.
        item.collapsibleState = vscode.TreeItemCollapsibleState.None;
        item.description = 'numerics.json is damaged';
        item.tooltip = result.problem;
        item.iconPath = new vscode.ThemeIcon('error', new vscode.ThemeColor('problemsErrorIcon.foreground'));
        return item;
      }
      const first = result.layers.find((l) => l.first);
      item.description = first ? `first divergence: ${layerWord(bundle.info.model)} ${first.op_index} ${first.opcode}` : 'no divergence';
      item.tooltip =
        `against the ${result.reference}\ninputs: ${result.inputs}\nmode: ${result.mode}` +
        (result.headline ? `\n${result.headline}` : '') +
        (result.budgets?.length ? `\n${result.budgets.join('\n')}` : '');
      item.iconPath = first
        ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'))
        : new vscode.ThemeIcon('pass', new vscode.ThemeColor('testing.iconPassed'));
      return item;
    }
    const { layer, bundle } = node;
    const word = layerWord(bundle.info.model);
    const where = layer.subgraph ? `${layer.subgraph}:` : '';
    const label = `${layer.first ? '▶ ' : ''}${word} ${where}${layer.op_index} ${layer.opcode}`;
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
    item.id = `numerics:${bundle.info.uri}#${layer.subgraph}:${layer.op_index}`;
    item.description = `${shortError(layer)} · ${layer.name}`;
    const tip = untrustedMarkdown(
      `**${word} ${layer.op_index} ${md.text(layer.opcode)}** ${md.code(layer.name)}\n\n${md.text(layer.summary)}` +
        (layer.observed_by ? `\n\nseen in the ${md.text(layer.observed_by)} build` : '') +
        (layer.first ? '\n\n**first divergence in graph order**' : ''),
    );
    if (layer.hint) {
      // Why it was not observed: the fused kernel that hid it, and --numerics-unfused.
      tip.appendText(`\n\n${layer.hint}`);
    }
    item.tooltip = tip;
    item.iconPath = !layer.observed
      ? new vscode.ThemeIcon('eye-closed', new vscode.ThemeColor('disabledForeground'))
      : layer.first
        ? new vscode.ThemeIcon('error', new vscode.ThemeColor('problemsErrorIcon.foreground'))
        : layer.diverges
          ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'))
          : layer.judged === false
            ? new vscode.ThemeIcon('question', new vscode.ThemeColor('disabledForeground'))
            : new vscode.ThemeIcon('check', new vscode.ThemeColor('testing.iconPassed'));
    item.accessibilityInformation = {
      label: `${word} ${layer.op_index} ${layer.opcode} ${layer.name}: ${layer.summary}${layer.first ? ', first divergence' : ''}`,
    };
    if (layer.location) {
      item.command = { command: 'tvmExplorer.openNumericsLayer', title: 'Open Layer', arguments: [layer.location] };
    }
    return item;
  }

  dispose(): void {
    clearTimeout(this.retry);
    super.dispose();
  }
}

function shortError(layer: ext.NumericsLayer): string {
  if (!layer.observed) {
    return 'not observed';
  }
  // The judged figure first (the side bar is narrow): steps of a quantized output with its
  // budget and the reference's own spread, else the max abs error.
  const verdict = layer.diverges ? 'diverges' : layer.judged === false ? 'not judged' : 'ok';
  const known = (v: number | null | undefined): v is number => v !== null && v !== undefined;
  if (layer.steps !== null) {
    const budget = known(layer.step_budget) ? `, budget ${layer.step_budget}` : '';
    const spread = known(layer.spread_steps) ? `, spread ${layer.spread_steps}` : '';
    return `${layer.steps} steps${budget}${spread} — ${verdict} · max abs ${(layer.max_abs ?? NaN).toPrecision(3)}`;
  }
  const spread = known(layer.spread_cosine) ? ` (spread cos ${layer.spread_cosine.toFixed(4)})` : '';
  return `max abs ${(layer.max_abs ?? NaN).toPrecision(3)}${spread} — ${verdict}`;
}

/** Opens the model document at a layer's entry (the view's click). */
export async function openNumericsLayer(ctx: Ctx, location: ext.NumericsLayer['location']): Promise<void> {
  const client = ctx.server.client;
  if (!client || !location) {
    return;
  }
  const loc = client.protocol2CodeConverter.asLocation(location);
  const editor = await ctx.largeFiles.showDocumentAt(loc.uri, {
    selection: new vscode.Range(loc.range.start, loc.range.start),
    preview: false,
  });
  editor?.revealRange(loc.range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
}

/** What the model's own document calls a layer: TFLite operators are ``op N``, ONNX and PyTorch
 * graph nodes ``node N``. */
function layerWord(model: string): string {
  return /\.(onnx|pt2)$/i.test(model) ? 'node' : 'op';
}
