import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe } from 'vitest';

/** Debian's chromium (.ci/run installs it), or CHROMIUM_PATH. */
export const chromiumPath = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p));

/**
 * A describe block that needs a browser. Without chromium the block is skipped with a message,
 * except under `CI=true`, where a missing browser fails the run.
 */
export function describeWithBrowser(name: string, fn: () => void): void {
  if (chromiumPath) {
    describe(name, fn);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      beforeAll(() => {
        throw new Error("chromium is required under CI=true but is not installed (.ci/run installs Debian's chromium)");
      });
      fn();
    });
    return;
  }
  console.warn(`skipping "${name}": chromium is not installed (apt-get install chromium, or set CHROMIUM_PATH)`);
  describe.skip(name, fn);
}

/** Launches headless chromium before the file's tests and closes it after. */
export function useBrowser(): { browser(): Browser } {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: chromiumPath!, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  });
  afterAll(async () => {
    await browser?.close();
  });
  return {
    browser() {
      if (!browser) throw new Error('browser not started (use inside a test or hook)');
      return browser;
    },
  };
}
