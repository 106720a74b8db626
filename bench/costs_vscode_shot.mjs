/**
 * The "done means" look in VS Code: opens profiled bundles (made by bench/costs_mobilenet.py)
 * in code-server and saves screenshots of the Hot Layers view and the model's cost lenses.
 *
 *   node bench/costs_vscode_shot.mjs BUNDLE...     (screenshots: test-artifacts/vscode/bench-*)
 */
import { cpSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Session, emptyWorkspace } from '../tests/e2e/lib/session.mjs';
import { PYTHON } from '../tests/e2e/lib/paths.mjs';
import { openFile, runCommand, screenshot } from '../tests/e2e/lib/workbench.mjs';

const bundles = process.argv.slice(2);
for (const bundle of bundles) {
  const name = basename(bundle).replace(/\.bundle$/, '');
  const session = await Session.start({
    workspace: (runDir) => {
      const folder = emptyWorkspace(runDir);
      cpSync(bundle, join(folder, basename(bundle)), { recursive: true });
      return folder;
    },
    settings: { 'tvmExplorer.pythonPath': PYTHON },
  });
  try {
    const { page } = session;
    await openFile(page, `${basename(bundle)}/model.tflgraph`);
    await page.locator('.contentWidgets .codelens-decoration', { hasText: ' ms · ' }).first()
      .waitFor({ state: 'visible', timeout: 120000 });
    await runCommand(page, 'TVM Explorer: Focus on Hot Layers View');
    await page.locator('.monaco-list-row[aria-label^="rank 1:"]').first().waitFor({ state: 'visible', timeout: 60000 });
    console.log(await screenshot(page, `bench-${name}-hot-layers`));
  } finally {
    await session.close();
  }
}
