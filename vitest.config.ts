import { defineConfig } from 'vitest/config';

export default defineConfig({
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
