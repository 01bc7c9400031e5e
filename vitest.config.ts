import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const source = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  // The package's public names resolve to its sources, so tests written as a user writes them
  // (test/testing/sample-app imports only these) test the code under test, not a stale dist/.
  resolve: {
    alias: [
      { find: /^nightshift$/, replacement: source('index.ts') },
      { find: /^nightshift\/testing$/, replacement: source('testing/index.ts') },
      { find: /^nightshift\/dashboard$/, replacement: source('dashboard/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/leak-guard.ts'],
    pool: 'forks',
    // Generous: a loaded 2-core CI machine runs real processes and servers; these bound a hang, they assert no speed.
    testTimeout: 180_000,
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
    reporters: process.env.CI ? ['default'] : ['default'],
  },
});
