/**
 * A real Chromium for the console's browser tests: Debian's `chromium` (scripts/with-chromium.sh
 * installs it in CI) driven by playwright-core through `executablePath`, headless, with the
 * flags that keep it off the network (this machine reaches no Google host). Also: the
 * accessibility check (axe-core through @axe-core/playwright) and the screenshots of
 * docs/console.md.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { expect } from 'vitest';

const repoRoot = resolve(import.meta.dirname, '..', '..');

/** Where the screenshots of docs/console.md live. */
export const screenshotDir = join(repoRoot, 'docs', 'images');

/** The Chromium executable: `ACS_CHROMIUM` (scripts/with-chromium.sh), else Debian's, if present. */
export function chromiumPath(): string | undefined {
  for (const candidate of [process.env.ACS_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser']) {
    if (candidate && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Why the browser suites cannot run here, or undefined when they can. In CI a missing browser
 * is a failure (the suite must run there), elsewhere a skip with the way to install it.
 */
export function browserUnavailable(): string | undefined {
  if (chromiumPath()) return undefined;
  const reason = 'no Chromium: install it with `apt-get install chromium` or run the tests inside `bash scripts/with-chromium.sh --install --`';
  if (process.env.CI) throw new Error(`browser tests must run in CI: ${reason}`);
  return reason;
}

/** A headless Chromium with a fresh profile; `close()` removes the profile. */
export interface TestBrowser {
  browser: Browser;
  /** A new context (its own cookies) with one page, recording console errors and dialogs. */
  newPage(): Promise<{ context: BrowserContext; page: Page; problems: string[] }>;
  close(): Promise<void>;
}

/** Starts Chromium as the tests need it. */
export async function launchBrowser(): Promise<TestBrowser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error('no Chromium found');
  const profile = await mkdtemp(join(tmpdir(), 'acs-chromium-'));
  const context0 = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
  const browser = context0.browser();
  return {
    browser: browser!,
    async newPage() {
      // A persistent context is one cookie jar; new contexts of its browser are fresh ones.
      const context = browser ? await browser.newContext({ viewport: { width: 1200, height: 860 } }) : context0;
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(`console: ${message.text()}`);
      });
      page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      page.on('dialog', (dialog) => {
        problems.push(`dialog: ${dialog.message()}`);
        void dialog.dismiss();
      });
      return { context, page, problems };
    },
    async close() {
      await context0.close().catch(() => {});
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Asserts that axe-core finds no serious or critical accessibility violation on the page as it is now. */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  const results = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']).analyze();
  const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  const summary = serious.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  expect(summary, `${what}: accessibility violations`).toEqual([]);
}

/**
 * Saves a screenshot of the page as docs/images/console-NAME.png (the pictures of docs/console.md).
 * A key secret shown in a field (an MCP key, an organization key) is blanked first, so no
 * key-shaped string lands in the repository, even of a throwaway server.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.evaluate(`(() => {
    for (const field of document.querySelectorAll('input, textarea')) {
      field.value = field.value.replace(/(acs_(?:mcp|org)_)[0-9A-Za-z]{12,}/g, '$1' + '•'.repeat(24));
    }
  })()`);
  await mkdir(screenshotDir, { recursive: true });
  await page.screenshot({ path: join(screenshotDir, `console-${name}.png`), fullPage: true, animations: 'disabled' });
}
