/**
 * The "Layer History" view: every pass that changed the code of the layer at the cursor (or of
 * a fused kernel's whole group), in pipeline order, from `tvmExplorer/layerHistory`, each with
 * its one-line summary; the passes that left it alone are not listed. The passes where its code
 * size, measured cost or numerics changed most are marked (◆). Clicking a step opens a split
 * diff of only the layer's lines before and after that pass (the pass diff's virtual documents
 * and line mapping, passDiffSides.ts: hover and definition there answer for the files' own
 * lines), landing on the first change.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { commandPosition } from './activeCursor';
import { BundleRegistry } from './bundles';
import { ServerManager } from './client';
import type { Cmd, Ctx } from './ctx';
import * as ext from './lsp_ext';
import * as md from './markdown';
import { revealLine } from './passDiff';
import { firstDifference, Segment } from './passDiffAlign';
import { askLayerAt, PASSDIFF_SCHEME, PassDiffSides } from './passDiffSides';
import { untrustedMarkdown } from './tooltip';

/** The line a side shows between two pieces of the layer's code that are not next to each other. */
export const GAP = '…';

const MARK_LABELS: Record<string, string> = { size: 'code size', cost: 'measured cost', numerics: 'numerics' };
/** The icon of a step: its most telling change first (a step that only deleted: the bin). */
const CHANGE_ICONS: [string, string][] = [
  ['fused', 'git-merge'],
  ['split', 'split-horizontal'],
  ['created', 'add'],
  ['rewritten', 'edit'],
  ['moved', 'move'],
  ['deleted', 'trash'],
];

type HistoryNode = { kind: 'step'; index: number; step: ext.HistoryStep } | { kind: 'mark'; mark: ext.HistoryMark };

/** A side's text: the lines of each range of `file`, the gap line between two, and how its
 * lines map to the file's. */
export function sideText(lines: string[], ranges: ext.HistorySide['ranges']): { text: string; segments: Segment[] } {
  const out: string[] = [];
  const segments: Segment[] = [];
  for (const [i, r] of ranges.entries()) {
    if (i) {
      out.push(GAP);
    }
    const first = r.start.line;
    const last = Math.min(r.end.line, lines.length - 1);
    segments.push({ side: out.length, file: first, count: last - first + 1 });
    for (let line = first; line <= last; line++) {
      out.push(lines[line]);
    }
  }
  return { text: out.join('\n'), segments };
}

/** The deterministic URIs of the two sides of a step's layer-only diff. */
export function historyUris(result: ext.LayerHistoryResult, step: ext.HistoryStep): { left: vscode.Uri; right: vscode.Uri } {
  const bundle = vscode.Uri.parse(result.bundle).path.split('/').pop() || 'bundle';
  const layers = result.layers.map((l) => `op${l.subgraph ? `${l.subgraph}-` : ''}${l.op_index}`).join('+') || 'layer';
  const pass = `${String(step.pass?.index ?? 0).padStart(3, '0')}-${(step.pass?.name ?? step.stage).replace(/[^\w.-]+/g, '_')}`;
  const side = (name: string, uri: string) =>
    vscode.Uri.from({
      scheme: PASSDIFF_SCHEME,
      path: `/${bundle}/history/${layers}/${pass}/${name}${path.extname(vscode.Uri.parse(uri).path)}`,
    });
  return { left: side('before', step.before.uri), right: side('after', step.after.uri) };
}

export class LayerHistoryProvider implements vscode.TreeDataProvider<HistoryNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<HistoryNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  result: ext.LayerHistoryResult | undefined;
  view: vscode.TreeView<HistoryNode> | undefined;
  private generation = 0;
  private readonly registryChange: vscode.Disposable;

  constructor(
    private readonly server: ServerManager,
    private readonly sides: PassDiffSides,
    private readonly registry: BundleRegistry,
  ) {
    // The history of a layer of a bundle no longer loaded leads nowhere: the view empties.
    this.registryChange = registry.onDidChange(() => {
      if (this.result && !registry.nameOf(this.result.bundle)) {
        this.result = undefined;
        this.generation += 1;
        if (this.view) {
          this.view.message = undefined;
          this.view.description = undefined;
        }
        this.changed.fire(undefined);
      }
    });
  }

  /** Asks the server for the history of the layer(s) at a position and shows it. */
  async showAt(uri: vscode.Uri, position: vscode.Position): Promise<boolean> {
    const result = await askLayerAt(this.server, this.sides, ext.layerHistory, uri, position, (r) => r.layers.length > 0);
    if (!result) {
      return false;
    }
    this.result = result;
    this.generation += 1;
    if (this.view) {
      const who = result.labels.length ? result.labels.join(', ') : result.layers.map((l) => `${l.opcode} op ${l.op_index}`).join(', ');
      this.view.message = `${who} — ${result.steps.length} of ${result.passes} passes changed its code`;
      this.view.description = this.registry.nameOf(result.bundle);
    }
    this.changed.fire(undefined);
    await vscode.commands.executeCommand('tvmExplorer.layerHistory.focus');
    return true;
  }

  getChildren(node?: HistoryNode): HistoryNode[] {
    if (node || !this.result) {
      return [];
    }
    const steps: HistoryNode[] = this.result.steps.map((step, index) => ({ kind: 'step', index, step }));
    const loose: HistoryNode[] = this.result.marks.filter((m) => m.step === null).map((mark) => ({ kind: 'mark', mark }));
    return [...steps, ...loose];
  }

  getTreeItem(node: HistoryNode): vscode.TreeItem {
    if (node.kind === 'mark') {
      const { mark } = node;
      const item = new vscode.TreeItem(`◆ ${mark.pass?.name ?? ''}`.trim());
      item.id = `${this.generation}:mark:${mark.kind}`;
      item.description = mark.text;
      item.tooltip = mark.text;
      item.iconPath = new vscode.ThemeIcon('star-full', new vscode.ThemeColor('charts.yellow'));
      return item;
    }
    const { step, index } = node;
    const item = new vscode.TreeItem(step.pass?.name ?? step.stage);
    item.id = `${this.generation}:step:${index}`;
    const marks = step.marks.map((m) => `◆ ${MARK_LABELS[m] ?? m}`).join(' ');
    item.description = `${marks ? `${marks} · ` : ''}${step.summary}`;
    const texts = (this.result?.marks ?? []).filter((m) => m.step === index).map((m) => `◆ ${md.text(m.text)}`);
    const where = (side: ext.HistorySide) => md.code(vscode.Uri.parse(side.uri).path.split('/').slice(-2).join('/'));
    item.tooltip = untrustedMarkdown(
      `**${md.text(step.pass?.name ?? step.stage)}**${step.pass ? ` (${md.text(step.stage)} pass #${step.pass.index})` : ''}\n\n` +
        `${md.text(step.summary)}\n\n` +
        `${where(step.before)} → ${where(step.after)}: ${step.lines.before} → ${step.lines.after} lines ` +
        `(+${step.lines.added} −${step.lines.removed})` +
        (texts.length ? `\n\n${texts.join('\n\n')}` : ''),
    );
    const icon = CHANGE_ICONS.find(([change]) => step.changes.includes(change as ext.HistoryStep['changes'][number]))?.[1] ?? 'diff';
    item.iconPath = new vscode.ThemeIcon(icon, step.marks.length ? new vscode.ThemeColor('charts.yellow') : undefined);
    item.accessibilityInformation = { label: `${step.pass?.name ?? step.stage}: ${marks ? `${marks}, ` : ''}${step.summary}` };
    item.command = { command: 'tvmExplorer.openHistoryStep', title: 'Open Layer Diff of This Pass', arguments: [index] };
    return item;
  }

  /** The split diff of the layer's own lines before and after step `index`, at its first change. */
  async openStep(index: number): Promise<void> {
    const result = this.result;
    const step = result?.steps[index];
    if (!result || !step) {
      return;
    }
    const { left, right } = historyUris(result, step);
    const [before, after] = await Promise.all([this.side(step.before), this.side(step.after)]);
    this.sides.showPart(left, vscode.Uri.parse(step.before.uri), before.text, before.segments);
    this.sides.showPart(right, vscode.Uri.parse(step.after.uri), after.text, after.segments);
    const who = result.labels[0] ?? result.layers.map((l) => `${l.opcode} op ${l.op_index}`).join(', ');
    const title = `${who}${result.labels.length > 1 ? ' …' : ''} · ${step.pass?.name ?? step.stage}${step.pass ? ` #${step.pass.index}` : ''}`;
    await vscode.commands.executeCommand('vscode.diff', left, right, title, { preview: true });
    const line = firstDifference(before.text.split('\n'), after.text.split('\n'));
    await revealLine(left, right, Math.max(0, line));
  }

  private async side(side: ext.HistorySide): Promise<{ text: string; segments: Segment[] }> {
    const bytes = await vscode.workspace.fs.readFile(vscode.Uri.parse(side.uri));
    return sideText(new TextDecoder().decode(bytes).split('\n'), side.ranges);
  }

  dispose(): void {
    this.registryChange.dispose();
    this.changed.dispose();
  }
}

/**
 * "Show Layer History" and `tvmExplorer.showLayerHistory` (the "Pass history" code lens on
 * every model layer: `[uri, {line, character}]`): the history of the layer at a position
 * (default: the cursor).
 */
export function showLayerHistory(ctx: Ctx): Cmd {
  return (uriArg?: string | vscode.Uri, positionArg?: { line: number; character: number }) => {
    const at = commandPosition(uriArg, positionArg);
    return at ? ctx.layerHistory.showAt(at.uri, at.position) : Promise.resolve(false);
  };
}
