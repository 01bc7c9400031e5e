import { afterEach, beforeEach, expect } from 'vitest';
import { liveResources } from '../../src/lifecycle/resources.js';

// Fails a test that leaves a pool, worker, listener or timer of nightshift's running: whatever a
// test created must be stopped by the time it ends. Resources from beforeAll are not the test's.
let before = new Set<number>();

beforeEach(() => {
  before = new Set(liveResources().map((r) => r.id));
});

afterEach(() => {
  const leaked = liveResources().filter((r) => !before.has(r.id));
  expect(
    leaked.map((r) => `${r.kind} ${r.label}`),
    'resources left running by this test',
  ).toEqual([]);
});
