import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const job = defineJob({ kind: 'noop', payload: z.object({}), run: async () => undefined });

describe('the maintenance leader', () => {
  // Regression (fault harness, scenario 1): with a fixed 15 s term, a killed maintenance leader
  // held up every rescue for 15 s + retry, whatever the job lease was.
  it.each([
    [4_000, 4_000],
    [30_000, 15_000],
    [1_000, 3_000],
  ])('with leaseMs %i holds its lease for %i ms', async (leaseMs, expected) => {
    const ns = t.client({ jobs: [job], leaseMs, heartbeatMs: Math.floor(leaseMs / 3), owner: `maint-${leaseMs}` });
    await ns.start();
    const lease = await waitFor('the maintenance lease', async () => (await ns.listLeases({ prefix: 'nightshift:maintenance' })).find((l) => l.holder === `maint-${leaseMs}` && !l.expired));
    // Both ends come from one statement on the database clock: the difference is the ttl exactly.
    expect(lease.expiresAt.getTime() - lease.renewedAt.getTime()).toBe(expected);
    await ns.stop();
  });
});
