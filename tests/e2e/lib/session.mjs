/**
 * One e2e session: a run folder with its own state, code-server with the extension installed,
 * chromium on the workbench. `close()` stops every process it started, by id, and checks that
 * nothing that mentions the run folder is left.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launchBrowser } from './browser.mjs';
import { prepareCodeServer, startCodeServer } from './codeServer.mjs';
import { ProcessGroup, processesMentioning } from './processes.mjs';
import { openWorkbench } from './workbench.mjs';

export class Session {
  /** @param {{workspace: (dir: string) => string, settings?: object}} options */
  static async start({ workspace, settings = {} }) {
    const s = new Session();
    s.runDir = mkdtempSync(join(process.env.TVM_EXPLORER_E2E_TMP || tmpdir(), 'tvmx-e2e-'));
    s.processes = new ProcessGroup();
    try {
      s.folder = workspace(s.runDir);
      const prepared = await prepareCodeServer(s.runDir, settings);
      s.url = prepared.url;
      await startCodeServer(s.processes, s.runDir, prepared, s.folder);
      const { context, page } = await launchBrowser(s.runDir, prepared.env);
      s.context = context;
      s.page = page;
      await openWorkbench(page, s.url, s.folder);
    } catch (err) {
      await s.close({ keep: true });
      throw err;
    }
    return s;
  }

  /** Stops chromium and code-server (with everything it started); removes the run folder. */
  async close({ keep = !!process.env.TVM_EXPLORER_E2E_KEEP } = {}) {
    if (this.context) {
      await this.context.close().catch(() => {});
      this.context = undefined;
    }
    await this.processes.stopAll();
    const leftovers = processesMentioning(this.runDir);
    for (const { pid } of leftovers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (keep) {
      console.log(`e2e run folder kept: ${this.runDir}`);
    } else {
      rmSync(this.runDir, { recursive: true, force: true });
    }
    return leftovers;
  }
}

/** Creates `<runDir>/workspace` and returns it. */
export function emptyWorkspace(runDir) {
  const dir = join(runDir, 'workspace');
  mkdirSync(dir, { recursive: true });
  return dir;
}
