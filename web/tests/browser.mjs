// What the page's browser checks share: Debian's chromium through playwright-core, failing
// checks, axe-core and the 360 px check. Used by e2e.mjs (the assistant's page) and
// keep-e2e.mjs (a Keep host's person).

import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const CHROMIUM = '/usr/bin/chromium';
export const WAIT_MS = 15000;

let chromium;
let axeSource;
try {
  ({ chromium } = await import('playwright-core'));
  axeSource = readFileSync(join(here, 'node_modules/axe-core/axe.min.js'), 'utf8');
} catch (error) {
  fail(`web/tests/node_modules is missing (${error.message}): run scripts/setup`);
}

/** A failed check: the message, then exit 1 (the browser closes with the process). */
export function fail(message) {
  console.error(`FAILED: ${message}`);
  process.exit(1);
}

export function check(condition, message) {
  if (!condition) throw new Error(message);
}

/**
 * A fresh chromium profile, launched headless: `{context, close}`. `close` also removes the
 * profile. Fails the run when chromium cannot start.
 */
export async function launch(viewport = { width: 1100, height: 800 }) {
  const profile = mkdtempSync(join(tmpdir(), 'imurun-page-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
      viewport,
    });
    return {
      context,
      close: async () => {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    fail(`cannot start ${CHROMIUM} (${error.message.split('\n')[0]}): run scripts/setup`);
    return null;
  }
}

/** Runs axe-core on the page as it is; fails on a serious or critical violation. */
export async function axe(page, where) {
  // Injected through the DevTools protocol, not as a <script> tag: the page's CSP refuses
  // inline scripts, and `addScriptTag` would be one.
  await page.evaluate(axeSource);
  const result = await page.evaluate(() => globalThis.axe.run(document, {
    runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
  }));
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  const milder = result.violations.filter((v) => !bad.includes(v)).map((v) => `${v.impact} ${v.id}`);
  console.log(`  axe on ${where}: ${result.passes.length} rules pass; milder findings: ${milder.join(', ') || 'none'}`);
  const lines = bad.map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  check(bad.length === 0, `axe on ${where}:\n  ${lines.join('\n  ')}`);
  return result.violations.length;
}

export async function noSidewaysScroll(page, where) {
  const sizes = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: innerWidth }));
  check(sizes.scroll <= sizes.inner, `${where} scrolls sideways at ${sizes.inner} px: ${sizes.scroll} px wide`);
}
