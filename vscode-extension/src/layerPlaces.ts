/**
 * The "Layer Places" view: every place the layer at the cursor ended up, from
 * `tvmExplorer/layerPlaces`, grouped by stage (Model, Relax, TIR, Code) and pass, in pipeline
 * order. A filter picks what is listed: the generated code only, the last document of each
 * stage (the default: the map `references` gives too), or every pass that changed the code.
 * Clicking a place opens it in the one preview editor the jumps use.
 */
import * as fs from 'fs';
import * as vscode from 'vscode';
import { commandPosition } from './activeCursor';
import { BundleRegistry } from './bundles';
import { ServerManager } from './client';
import type { Cmd, Ctx } from './ctx';
import { openInPreview } from './jumps';
import { LargeFiles } from './largeFiles';
import * as ext from './lsp_ext';
import { askLayerAt, PassDiffSides } from './passDiffSides';

export type PlacesFilter = 'code' | 'last' | 'changed';
const FILTERS: { id: PlacesFilter; label: string; detail: string }[] = [
  { id: 'code', label: 'Generated code only', detail: 'Where the layer is in the C / CUDA / LLVM output' },
  { id: 'last', label: 'Last document of each stage', detail: 'The model, the final Relax and TIR, and the generated code' },
  { id: 'changed', label: 'Every pass that changed it', detail: 'Each pass document where the layer’s code changed, in pipeline order' },
];
const STAGE_LABELS: Record<string, string> = { model: 'Model', relax: 'Relax', tir: 'TIR', code: 'Generated code' };
const STATE_KEY = 'tvmExplorer.layerPlaces.filter';

export type PlaceNode =
  | { kind: 'stage'; stage: string; places: ext.LayerPlace[] }
  | { kind: 'pass'; stage: string; pass: { index: number; name: string }; places: ext.LayerPlace[] }
  | { kind: 'group'; key: string; places: ext.LayerPlace[] }
  | { kind: 'bookkeeping'; key: string; places: ext.LayerPlace[] }
  | { kind: 'place'; place: ext.LayerPlace };

const role = (p: ext.LayerPlace) => p.role ?? 'compute';

/** The places a filter keeps (the model entry is always kept: it is where the layer is).
 * "Last document of each stage" is the map the code lens counts: the statements computing the
 * layer, not the Relax bookkeeping around it nor the TIR printed inside a Relax module. */
export function filterPlaces(places: ext.LayerPlace[], filter: PlacesFilter): ext.LayerPlace[] {
  if (filter === 'code') {
    return places.filter((p) => p.stage === 'code');
  }
  if (filter === 'last') {
    return places.filter((p) => p.stage === 'model' || ((p.stage === 'code' || p.last_of_stage) && role(p) === 'compute'));
  }
  return places.filter((p) => p.stage === 'model' || p.stage === 'code' || p.changed || p.last_of_stage);
}

/** Places grouped by document and function, in order of first place: the many stores of one
 * kernel are one row (as the code lens counts them). */
export function groupPlaces(places: ext.LayerPlace[]): ext.LayerPlace[][] {
  const groups = new Map<string, ext.LayerPlace[]>();
  for (const p of places) {
    const key = `${p.uri}\u0000${p.function ?? ''}`;
    const group = groups.get(key);
    if (group) {
      group.push(p);
    } else {
      groups.set(key, [p]);
    }
  }
  return [...groups.values()];
}

/** A place's note without the layer it is about (the view names the layers above):
 * "input dequantize only — in the kernel of op 1 MAX_POOL_2D". */
const shortNote = (note: string) => note.replace(/^op \d+ [^:]*: /, '');
const fileOf = (uri: string) => vscode.Uri.parse(uri).path.split('/').slice(-1)[0];
const plural = (n: number, word: string, words = `${word}s`) => `${n} ${n === 1 ? word : words}`;

export class LayerPlacesProvider implements vscode.TreeDataProvider<PlaceNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<PlaceNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private result: ext.LayerPlacesResult | undefined;
  /** Bumped on every new result or filter: fresh item ids, so that every stage and pass of the
   * new list shows expanded (VS Code would keep the old list's collapsed state). */
  private generation = 0;
  private readonly lines = new Map<string, string[]>();
  private readonly registryChange: vscode.Disposable;
  view: vscode.TreeView<PlaceNode> | undefined;

  constructor(
    private readonly server: ServerManager,
    private readonly sides: PassDiffSides,
    private readonly largeFiles: LargeFiles,
    private readonly state: vscode.Memento,
    private readonly registry: BundleRegistry,
  ) {
    // The places of a bundle no longer loaded lead nowhere: the view empties.
    this.registryChange = registry.onDidChange(() => {
      if (this.result && !this.bundleName()) {
        this.result = undefined;
        this.update();
      }
    });
  }

  /** The folder of the bundle whose layer the view shows (several may be loaded, and the graph
   * can switch between them while the view keeps its layer). */
  private bundleName(): string | undefined {
    const first = this.result?.places[0];
    return first && this.registry.nameOf(first.uri);
  }

  get filter(): PlacesFilter {
    return this.state.get<PlacesFilter>(STATE_KEY, 'last');
  }

  /** Asks the server for the places of the layer at a position and shows them. */
  async showAt(uri: vscode.Uri, position: vscode.Position): Promise<boolean> {
    const result = await askLayerAt(this.server, this.sides, ext.layerPlaces, uri, position, (r) => r.places.length > 0);
    if (!result) {
      return false;
    }
    // One row per place (a statement shared by several layers is one place).
    const seen = new Set<string>();
    const places = result.places.filter((p) => {
      const key = `${p.uri}:${p.range.start.line}:${p.range.start.character}:${p.range.end.line}:${p.range.end.character}`;
      return !seen.has(key) && !!seen.add(key);
    });
    this.result = { layers: result.layers, places, summary: result.summary, labels: result.labels };
    this.lines.clear();
    this.update();
    await vscode.commands.executeCommand('tvmExplorer.layerPlaces.focus');
    return true;
  }

  /** Lets the user pick the filter. */
  async chooseFilter(): Promise<void> {
    const current = this.filter;
    const pick = await vscode.window.showQuickPick(
      FILTERS.map((f) => ({ ...f, description: f.id === current ? '(current)' : undefined })),
      { title: 'Layer Places: list which places' },
    );
    if (pick) {
      await this.setFilter(pick.id);
    }
  }

  async setFilter(filter: PlacesFilter): Promise<void> {
    await this.state.update(STATE_KEY, filter);
    this.update();
  }

  private update(): void {
    this.generation += 1;
    if (this.view) {
      this.view.description = this.bundleName();
      this.view.message = this.result && this.message(this.result);
    }
    this.changed.fire(undefined);
  }

  /** The view's message: the layers, what the code lens says of their places, the filter. */
  private message(result: ext.LayerPlacesResult): string {
    const layers = result.labels?.length
      ? result.labels
      : result.layers.map((l) => `${l.opcode} op ${l.op_index}${l.name ? ` ${l.name}` : ''}`);
    const filter = FILTERS.find((f) => f.id === this.filter)?.label.toLowerCase();
    return `${layers.join(', ')} — ${result.summary || `${result.places.length} places`} (${filter})`;
  }

  getChildren(node?: PlaceNode): PlaceNode[] {
    if (!this.result) {
      return [];
    }
    if (!node) {
      const places = filterPlaces(this.result.places, this.filter);
      const stages: string[] = [];
      for (const p of places) {
        if (!stages.includes(p.stage)) {
          stages.push(p.stage);
        }
      }
      return stages.map((stage) => ({ kind: 'stage', stage, places: places.filter((p) => p.stage === stage) }));
    }
    if (node.kind === 'stage') {
      const byPass = new Map<number, PlaceNode & { kind: 'pass' }>();
      const loose: ext.LayerPlace[] = [];
      const out: PlaceNode[] = [];
      for (const place of node.places) {
        if (!place.pass) {
          loose.push(place);
          continue;
        }
        let group = byPass.get(place.pass.index);
        if (!group) {
          group = { kind: 'pass', stage: node.stage, pass: place.pass, places: [] };
          byPass.set(place.pass.index, group);
          out.push(group);
        }
        group.places.push(place);
      }
      return [...this.grouped(loose, node.stage), ...out];
    }
    if (node.kind === 'pass') {
      return this.grouped(node.places, `${node.stage}:${node.pass.index}`);
    }
    if (node.kind === 'group' || node.kind === 'bookkeeping') {
      return node.places.map((place) => ({ kind: 'place', place }));
    }
    return [];
  }

  /** Rows of a stage or pass: one per function (its places below it when more than one), then
   * the Relax bookkeeping apart, collapsed. */
  private grouped(places: ext.LayerPlace[], key: string): PlaceNode[] {
    const out: PlaceNode[] = groupPlaces(places.filter((p) => role(p) !== 'bookkeeping')).map((group) =>
      group.length === 1
        ? { kind: 'place', place: group[0] }
        : { kind: 'group', key: `${key}:${group[0].uri}:${group[0].function}`, places: group },
    );
    const bookkeeping = places.filter((p) => role(p) === 'bookkeeping');
    if (bookkeeping.length) {
      out.push({ kind: 'bookkeeping', key, places: bookkeeping });
    }
    return out;
  }

  getTreeItem(node: PlaceNode): vscode.TreeItem {
    if (node.kind === 'stage') {
      const item = new vscode.TreeItem(STAGE_LABELS[node.stage] ?? node.stage, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `${this.generation}:${node.stage}`;
      const computing = node.places.filter((p) => role(p) !== 'bookkeeping');
      const passes = new Set(node.places.map((p) => p.pass?.index ?? -1)).size;
      item.description =
        node.stage === 'model'
          ? plural(node.places.length, 'entry', 'entries')
          : node.stage === 'relax' || node.stage === 'tir'
            ? `${plural(computing.length, 'statement')} in ${plural(passes, 'pass', 'passes')}`
            : `${plural(groupPlaces(computing).length, 'function')} · ${plural(computing.length, 'statement')}`;
      item.iconPath = new vscode.ThemeIcon(node.stage === 'model' ? 'symbol-class' : node.stage === 'code' ? 'file-code' : 'layers');
      return item;
    }
    if (node.kind === 'pass') {
      const item = new vscode.TreeItem(node.pass.name, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `${this.generation}:${node.stage}:${node.pass.index}`;
      const last = node.places.some((p) => p.last_of_stage);
      item.description = `#${node.pass.index}${last ? ' · last' : ''}${node.places.some((p) => p.changed) ? '' : ' · unchanged'}`;
      item.iconPath = new vscode.ThemeIcon('diff', new vscode.ThemeColor('charts.yellow'));
      return item;
    }
    if (node.kind === 'group') {
      const first = node.places[0];
      const lines = node.places.map((p) => p.range.start.line + 1);
      const range = `${fileOf(first.uri)}:${Math.min(...lines)}–${Math.max(...lines)}`;
      const item = new vscode.TreeItem(
        range,
        node.places.length > 12 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.Expanded,
      );
      item.id = `${this.generation}:group:${node.key}`;
      item.description = `${first.function || 'outside any function'} · ${plural(node.places.length, 'statement')}`;
      item.tooltip = `${vscode.Uri.parse(first.uri).fsPath}:${Math.min(...lines)}–${Math.max(...lines)}\n${first.function ?? ''}`;
      item.iconPath = new vscode.ThemeIcon('symbol-function');
      if (first.note) {
        // Not the layer's kernel: another layer's kernel (or a small one) holding its input dequantize.
        item.description = `${shortNote(first.note)} · ${item.description}`;
        item.tooltip = `${first.note}\n${item.tooltip}`;
        item.iconPath = new vscode.ThemeIcon('symbol-function', new vscode.ThemeColor('disabledForeground'));
      }
      item.command = { command: 'tvmExplorer.openPlace', title: 'Open Place', arguments: [first.uri, first.range] };
      return item;
    }
    if (node.kind === 'bookkeeping') {
      const item = new vscode.TreeItem('Bookkeeping', vscode.TreeItemCollapsibleState.Collapsed);
      item.id = `${this.generation}:bookkeeping:${node.key}`;
      item.description = `${plural(node.places.length, 'binding')} around the layer (allocation, shape checks, kills)`;
      item.tooltip = 'Relax bindings that allocate, check or free the layer’s buffers: not the layer’s computation';
      item.iconPath = new vscode.ThemeIcon('archive');
      return item;
    }
    const { place } = node;
    const uri = vscode.Uri.parse(place.uri);
    const line = place.range.start.line;
    const text = this.lineText(uri, line);
    // file:line first: the rows of a list of places are read by where they are.
    const item = new vscode.TreeItem(`${fileOf(place.uri)}:${line + 1}`, vscode.TreeItemCollapsibleState.None);
    item.id = `${this.generation}:${place.uri}:${line}:${place.range.start.character}:${place.range.end.line}:${place.range.end.character}`;
    item.description = text;
    item.tooltip = `${uri.fsPath}:${line + 1}${place.function ? ` (in ${place.function})` : ''}\n${text}`;
    item.iconPath = new vscode.ThemeIcon('location');
    if (place.note) {
      item.description = `${shortNote(place.note)} · ${text}`;
      item.tooltip = `${place.note}\n${item.tooltip}`;
      item.iconPath = new vscode.ThemeIcon('location', new vscode.ThemeColor('disabledForeground'));
    }
    item.command = {
      command: 'tvmExplorer.openPlace',
      title: 'Open Place',
      arguments: [place.uri, place.range],
    };
    return item;
  }

  /** The trimmed text of a line of a bundle file (files are read once per result). */
  private lineText(uri: vscode.Uri, line: number): string {
    const key = uri.toString();
    let lines = this.lines.get(key);
    if (!lines) {
      try {
        lines = fs.readFileSync(uri.fsPath, 'utf8').split('\n');
      } catch {
        lines = [];
      }
      this.lines.set(key, lines);
    }
    return (lines[line] ?? '').trim().slice(0, 120);
  }

  dispose(): void {
    this.registryChange.dispose();
    this.changed.dispose();
  }

  /** Opens a place (URI string and LSP range, as the tree items pass them) in the preview editor. */
  async openPlace(
    uri: string,
    range: { start: { line: number; character: number }; end: { line: number; character: number } },
  ): Promise<void> {
    await openInPreview(
      this.largeFiles,
      new vscode.Location(
        vscode.Uri.parse(uri),
        new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character),
      ),
    );
  }
}

/**
 * "Show Layer Places" and `tvmExplorer.showReferences`: the places of the layer at a position
 * (default: the cursor). The server's code lenses on model layers name the latter (`[uri,
 * {line, character}]`, docs/lsp-protocol.md); other editors map it to their references list,
 * VS Code shows the layer in this view, grouped by stage and pass.
 */
export function showLayerPlaces(ctx: Ctx): Cmd {
  return (uriArg?: string | vscode.Uri, positionArg?: { line: number; character: number }) => {
    const at = commandPosition(uriArg, positionArg);
    return at ? ctx.layerPlaces.showAt(at.uri, at.position) : Promise.resolve(false);
  };
}
