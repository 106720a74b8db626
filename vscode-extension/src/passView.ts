/**
 * The "Passes" tree: bundle → stage → pass. Passes that changed the IR are highlighted; the
 * others are dimmed, and hidden unless `tvmExplorer.passView.showUnchanged` is on. Selecting
 * a pass runs `tvmExplorer.openPassDiff`.
 */
import * as path from 'path';
import * as vscode from 'vscode';
import { Bundle, BundleRegistry } from './bundles';
import { showUnchangedPasses } from './config';
import { PassInfo, Stage } from './lsp_ext';

const STAGE_LABELS: Record<Stage, string> = { relax: 'Relax', tir: 'TIR', code: 'Code' };
/** Scheme of the pass items' resource URIs; used only to decorate (colour) their labels. */
export const PASS_SCHEME = 'tvm-explorer-pass';

export type PassNode =
  | { kind: 'bundle'; bundle: Bundle }
  | { kind: 'stage'; bundle: Bundle; stage: Stage; passes: PassInfo[] }
  | { kind: 'pass'; bundle: Bundle; pass: PassInfo };

/** The passes shown for a bundle, in pipeline order. */
export function visiblePasses(passes: PassInfo[]): PassInfo[] {
  return showUnchangedPasses() ? passes : passes.filter((p) => p.changed);
}

export class PassTreeProvider implements vscode.TreeDataProvider<PassNode>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<PassNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly disposables: vscode.Disposable[] = [];
  /** Pass nodes by `<bundle uri>#<index>`, so that `getParent`/`reveal` find the same objects. */
  private readonly passNodes = new Map<string, PassNode>();
  private readonly stageNodes = new Map<string, PassNode>();

  constructor(private readonly registry: BundleRegistry) {
    this.disposables.push(
      registry.onDidChange(() => this.refresh()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('tvmExplorer.passView')) {
          this.refresh();
        }
      }),
      this.changed,
    );
  }

  refresh(): void {
    this.passNodes.clear();
    this.stageNodes.clear();
    this.changed.fire(undefined);
  }

  /** The tree node of a pass, once its stage has been listed. */
  nodeOf(bundle: Bundle, pass: PassInfo): PassNode | undefined {
    return this.passNodes.get(`${bundle.info.uri}#${pass.index}`);
  }

  async getChildren(node?: PassNode): Promise<PassNode[]> {
    if (!node) {
      return this.registry.list().map((bundle) => ({ kind: 'bundle', bundle }));
    }
    if (node.kind === 'bundle') {
      const passes = await this.registry.passes(node.bundle);
      const stages: Stage[] = [];
      for (const p of passes) {
        if (!stages.includes(p.stage)) {
          stages.push(p.stage);
        }
      }
      return stages.map((stage) => {
        const stageNode: PassNode = {
          kind: 'stage',
          bundle: node.bundle,
          stage,
          passes: passes.filter((p) => p.stage === stage),
        };
        this.stageNodes.set(`${node.bundle.info.uri}#${stage}`, stageNode);
        return stageNode;
      });
    }
    if (node.kind === 'stage') {
      return visiblePasses(node.passes).map((pass) => {
        const passNode: PassNode = { kind: 'pass', bundle: node.bundle, pass };
        this.passNodes.set(`${node.bundle.info.uri}#${pass.index}`, passNode);
        return passNode;
      });
    }
    return [];
  }

  getParent(node: PassNode): PassNode | undefined {
    if (node.kind === 'pass') {
      return this.stageNodes.get(`${node.bundle.info.uri}#${node.pass.stage}`);
    }
    if (node.kind === 'stage') {
      return { kind: 'bundle', bundle: node.bundle };
    }
    return undefined;
  }

  getTreeItem(node: PassNode): vscode.TreeItem {
    if (node.kind === 'bundle') {
      const { info, dir } = node.bundle;
      const item = new vscode.TreeItem(path.basename(dir), vscode.TreeItemCollapsibleState.Expanded);
      item.id = `bundle:${info.uri}`;
      item.description = `${info.model} · ${info.target}`;
      const problems = info.problems ?? [];
      item.tooltip = [`${dir}`, `${info.passes} passes, ${info.documents} documents`, ...problems].join('\n');
      item.iconPath = problems.length
        ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('problemsWarningIcon.foreground'))
        : new vscode.ThemeIcon('package');
      item.contextValue = 'bundle';
      return item;
    }
    if (node.kind === 'stage') {
      const changed = node.passes.filter((p) => p.changed).length;
      const item = new vscode.TreeItem(STAGE_LABELS[node.stage] ?? node.stage, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `stage:${node.bundle.info.uri}#${node.stage}`;
      item.description = `${changed}/${node.passes.length} passes changed`;
      item.iconPath = new vscode.ThemeIcon('layers');
      item.contextValue = 'stage';
      return item;
    }
    return passItem(node.bundle, node.pass);
  }

  dispose(): void {
    this.disposables.forEach((d) => d.dispose());
  }
}

/** The tree item of one pass: label = pass name, highlighted when it changed the IR. */
function passItem(bundle: Bundle, pass: PassInfo): vscode.TreeItem {
  const item = new vscode.TreeItem(pass.name, vscode.TreeItemCollapsibleState.None);
  item.id = `pass:${bundle.info.uri}#${pass.index}`;
  item.description = pass.changed ? `#${pass.index}` : `#${pass.index} · unchanged`;
  if (pass.ms !== undefined && pass.ms !== null) {
    item.description += ` · ${passTime(pass.ms)}`;
  }
  item.resourceUri = vscode.Uri.from({
    scheme: PASS_SCHEME,
    path: `/${pass.index}`,
    query: pass.changed ? 'changed' : 'unchanged',
  });
  item.iconPath = pass.changed
    ? new vscode.ThemeIcon('diff', new vscode.ThemeColor('charts.yellow'))
    : new vscode.ThemeIcon('circle-small', new vscode.ThemeColor('disabledForeground'));
  if (pass.culprit) {
    // bisect found this pass: marked so that it stands out in the pipeline
    item.iconPath = new vscode.ThemeIcon('bug', new vscode.ThemeColor('problemsErrorIcon.foreground'));
    item.description = `#${pass.index} · culprit (bisect)`;
  }
  const before = pass.before ? path.basename(vscode.Uri.parse(pass.before).path) : '(nothing)';
  const after = path.basename(vscode.Uri.parse(pass.after).path);
  item.tooltip = `${pass.stage} pass #${pass.index} ${pass.name}\n${before} → ${after}${pass.changed ? '' : '\n(changed nothing)'}`;
  item.accessibilityInformation = {
    label: `${pass.name}, ${pass.stage} pass ${pass.index}, ${pass.changed ? 'changed the IR' : 'unchanged'}${
      pass.culprit ? ', culprit found by bisect' : ''
    }`,
  };
  item.contextValue = pass.changed ? 'pass.changed' : 'pass.unchanged';
  item.command = {
    command: 'tvmExplorer.openPassDiff',
    title: 'Open Pass Diff',
    arguments: [bundle.info.uri, pass.index],
  };
  return item;
}

/** A pass's compile time: "0.4 ms", "12 ms", "1.3 s". */
export function passTime(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : ms >= 10 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(1)} ms`;
}

/** Colours pass labels: changed ones like modified files, unchanged ones dimmed. */
export class PassDecorations implements vscode.FileDecorationProvider {
  provideFileDecoration(uri: vscode.Uri): vscode.FileDecoration | undefined {
    if (uri.scheme !== PASS_SCHEME) {
      return undefined;
    }
    if (uri.query === 'changed') {
      return new vscode.FileDecoration('M', 'changed the IR', new vscode.ThemeColor('gitDecoration.modifiedResourceForeground'));
    }
    return new vscode.FileDecoration(undefined, 'changed nothing', new vscode.ThemeColor('disabledForeground'));
  }
}
