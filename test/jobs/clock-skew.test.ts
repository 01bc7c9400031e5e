import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

afterEach(() => {
  vi.useRealTimers();
});

describe('a worker whose clock is wrong', () => {
  // Regression (fault harness, skewed workers): a failed attempt's time in the error history came
  // from the worker's clock, so a host two minutes ahead wrote errors from the future.
  it('records a failed attempt at the database’s time, not its own', async () => {
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    vi.setSystemTime(new Date(Date.now() + 365 * 86_400_000));
    const job = defineJob({ kind: 'skewed-fail', payload: z.object({}), maxAttempts: 1, run: () => Promise.reject(new Error('no')) });
    const ns = t.client({ jobs: [job], pollIntervalMs: 100 });
    const { id } = await ns.enqueue(job, {});
    await ns.start();
    const row = await waitFor('the failure to be recorded', async () => {
      const r = await t.sql.query(`SELECT state::text, abs(extract(epoch FROM (errors->-1->>'at')::timestamptz - now())) AS off_s FROM ${q()}.jobs_all WHERE id = $1`, [id]);
      return r.rows[0].state === 'discarded' ? (r.rows[0] as { off_s: number }) : undefined;
    });
    // A year of skew would show as ~31,536,000 s; the database's own time is seconds away at most.
    expect(Number(row.off_s)).toBeLessThan(3_600);
  });
});
