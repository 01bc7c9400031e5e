import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { startScript, type Proc } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const effect = defineJob({ kind: 'effect', payload: z.object({ n: z.number(), workMs: z.number().optional() }), run: async () => undefined });

describe('a crash while jobs wait in the worker for a slot', () => {
  // Issue 11, bug 3: jobs claimed ahead of free slots counted an attempt at the claim; after a
  // SIGKILL the rescuer discarded those on their last attempt though no handler ever saw them.
  it('gives back the attempt of every job that never ran: none is discarded without a run', async () => {
    await t.sql.query(`CREATE TABLE ${q()}.effects (job_id bigint, attempt int, pid int, token bigint, at timestamptz DEFAULT clock_timestamp())`);
    const producer = t.client({ jobs: [effect] });
    const total = 4_000;
    await producer.enqueueMany(
      effect,
      Array.from({ length: total }, (_, n) => ({ n, workMs: 3 })),
      { maxAttempts: 1 },
    );
    const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_LEASE_MS: '2000', NS_HEARTBEAT_MS: '500', NS_MAINTENANCE_MS: '300', NS_CONCURRENCY: '4' };
    const procs: Proc[] = [startScript('test/fixtures/effect-worker.ts', env)];
    try {
      await procs[0]!.waitForLine('ready');
      // Fast jobs: the worker holds more leases than its four slots (jobs claimed ahead, not started).
      await waitFor('the worker to hold jobs ahead of its slots', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE state = 'running'`)).rows[0].n > 8);
      procs[0]!.kill('SIGKILL');
      await procs[0]!.exited;
      procs.push(startScript('test/fixtures/effect-worker.ts', env));
      await waitFor('every job to finish', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE state IN ('completed', 'discarded')`)).rows[0].n === total, {
        timeoutMs: 120_000,
      });
      // The scenario happened: jobs were taken back from the killed worker.
      const rescued = await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE errors @> '[{"kind":"lease-expired"}]'`);
      expect(rescued.rows[0].n).toBeGreaterThan(4);
      // A discarded job is one a handler ran: its only attempt was lost with the killed process. Its
      // effect may be missing only if the kill came between its start (recorded when it took one of
      // the four slots) and the effect's commit — at most one job per slot; a job that merely
      // waited for a slot is never among them.
      const discardedUnrun = await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all j WHERE state = 'discarded' AND NOT EXISTS (SELECT 1 FROM ${q()}.effects e WHERE e.job_id = j.id)`);
      expect(discardedUnrun.rows[0].n).toBeLessThanOrEqual(4);
    } finally {
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    }
  });
});
