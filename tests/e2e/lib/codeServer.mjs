/**
 * A code-server (VS Code 1.100 in the browser) with its own state directories, the extension
 * installed from the built .vsix, listening on a free loopback port.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { CODE_SERVER, VSIX } from './paths.mjs';

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Environment that keeps every process of the run inside `runDir`. */
export function isolatedEnv(runDir, extra = {}) {
  const dirs = {
    HOME: join(runDir, 'home'),
    XDG_CONFIG_HOME: join(runDir, 'xdg-config'),
    XDG_DATA_HOME: join(runDir, 'xdg-data'),
    XDG_CACHE_HOME: join(runDir, 'xdg-cache'),
    TMPDIR: join(runDir, 'tmp'),
  };
  Object.values(dirs).forEach((d) => mkdirSync(d, { recursive: true }));
  const env = { ...process.env, ...dirs, ...extra };
  for (const key of Object.keys(env)) {
    // The editor must not talk to a VS Code or terminal that started this test.
    if (key.startsWith('VSCODE_') || key === 'ELECTRON_RUN_AS_NODE') delete env[key];
  }
  return env;
}

/** User settings for a quiet, deterministic workbench. */
export function userSettings(extra = {}) {
  return {
    'security.workspace.trust.enabled': false,
    'workbench.startupEditor': 'none',
    'workbench.reduceMotion': 'on',
    'workbench.tips.enabled': false,
    'workbench.enableExperiments': false,
    'workbench.colorTheme': 'Default Light Modern',
    'telemetry.telemetryLevel': 'off',
    'extensions.autoCheckUpdates': false,
    'extensions.autoUpdate': false,
    'update.mode': 'none',
    'git.enabled': false,
    'chat.commandCenter.enabled': false,
    'editor.minimap.enabled': false,
    // A tree's sticky header row lies over the rows below it and takes their pointer events.
    'workbench.tree.enableStickyScroll': false,
    'editor.hover.delay': 200,
    'editor.gotoLocation.multipleDefinitions': 'goto',
    'window.restoreWindows': 'none',
    'files.hotExit': 'off',
    ...extra,
  };
}

/** Prepares state directories, config and settings; installs the .vsix. */
export async function prepareCodeServer(runDir, settings) {
  const port = await freePort();
  const userData = join(runDir, 'user-data');
  const extensions = join(runDir, 'extensions');
  mkdirSync(join(userData, 'User'), { recursive: true });
  mkdirSync(extensions, { recursive: true });
  const config = join(runDir, 'code-server.yaml');
  writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  writeFileSync(join(userData, 'User', 'settings.json'), JSON.stringify(userSettings(settings), null, 2));
  // The extension host of code-server runs "remotely": settings scoped to the machine (the
  // interpreter path) belong in the remote machine's settings, where a user of code-server
  // or VS Code Remote puts them. From the user settings VS Code applies them only until the
  // first settings change (then it filters them out, as it should).
  mkdirSync(join(userData, 'Machine'), { recursive: true });
  writeFileSync(join(userData, 'Machine', 'settings.json'), JSON.stringify(settings, null, 2));
  const env = isolatedEnv(runDir);
  const common = ['--config', config, '--user-data-dir', userData, '--extensions-dir', extensions];
  execFileSync(CODE_SERVER, [...common, '--install-extension', VSIX], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120000,
  });
  // A suite that sets security.workspace.trust.enabled gets real Workspace Trust (Restricted Mode).
  const trust = settings['security.workspace.trust.enabled'] === true;
  return { port, env, args: common, url: `http://127.0.0.1:${port}`, trust };
}

/** Starts code-server on `folder` (in its own process group) and waits for /healthz. */
export async function startCodeServer(processes, runDir, prepared, folder) {
  const child = processes.spawn(
    'code-server',
    CODE_SERVER,
    [
      ...prepared.args,
      '--disable-telemetry',
      '--disable-update-check',
      ...(prepared.trust ? [] : ['--disable-workspace-trust']),
      '--disable-getting-started-override',
      folder,
    ],
    { log: join(runDir, 'code-server.log'), env: prepared.env },
  );
  const deadline = Date.now() + 60000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`code-server exited with ${child.exitCode}; see ${runDir}/code-server.log`);
    try {
      const res = await fetch(`${prepared.url}/healthz`);
      if (res.ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`code-server did not become healthy; see ${runDir}/code-server.log`);
}
