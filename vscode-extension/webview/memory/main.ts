/**
 * Entry point of the memory timeline webview ("TVM Explorer: Show Memory Timeline"; bundled by
 * esbuild into out/memory.js). The extension posts the timeline (`{type: 'timeline'}`, from
 * `tvmExplorer/memoryTimeline`) or why there is none (`{type: 'error'}`); a click on a band is
 * posted back (`{type: 'open'}`: the layer's model location and the allocation line in Relax).
 */
import { el } from '../graph/dom';
import { MemoryTimeline } from './chart';
import type { Timeline } from './types';

declare function acquireVsCodeApi(): { postMessage(msg: unknown): void };

const vscode = acquireVsCodeApi();
const mount = document.getElementById('tvmx-memory') ?? document.body;
const view = new MemoryTimeline(mount, {
  open: (pick) => vscode.postMessage({ type: 'open', layer: pick.layer?.location ?? null, alloc: pick.alloc }),
});
window.tvmxMemory = view;

window.addEventListener('message', (event: MessageEvent) => {
  const msg = event.data as { type: string; data?: Timeline; message?: string };
  if (msg.type === 'timeline' && msg.data) {
    view.show(msg.data);
  } else if (msg.type === 'error') {
    mount.replaceChildren(el('p', { class: 'tvmx-mem-error' }, msg.message ?? 'No memory timeline.'));
  }
});
vscode.postMessage({ type: 'ready' });
