/** Debian's chromium driven by playwright-core, with a fresh profile per run. */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { CHROMIUM } from './paths.mjs';

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-breakpad',
  '--disable-dev-shm-usage',
];

/** Launches chromium; returns the persistent context and its first page. */
export async function launchBrowser(runDir, env) {
  const profile = join(runDir, 'chromium-profile');
  mkdirSync(profile, { recursive: true });
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: FLAGS,
    env,
    viewport: { width: 1600, height: 900 },
    timeout: 60000,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(30000);
  return { context, page };
}
