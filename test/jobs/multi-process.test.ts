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

describe('several worker processes', () => {
  it('drain thousands of jobs while one is SIGKILLed: nothing lost, duplicates only from the killed process', async () => {
    await t.sql.query(`CREATE TABLE ${q()}.effects (job_id bigint, attempt int, pid int, token bigint, at timestamptz DEFAULT clock_timestamp())`);
    const producer = t.client({ jobs: [effect] });
    const total = 3_000;
    await producer.enqueueMany(
      effect,
      Array.from({ length: total }, (_, n) => ({ n, workMs: 2 })),
    );
    const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_LEASE_MS: '2000', NS_HEARTBEAT_MS: '500', NS_MAINTENANCE_MS: '300' };
    const procs: Proc[] = [0, 1, 2].map(() => startScript('test/fixtures/effect-worker.ts', env));
    try {
      await Promise.all(procs.map((p) => p.waitForLine('ready')));
      const victim = procs[1]!;
      await waitFor('the victim to have done some work', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.effects WHERE pid = $1`, [victim.pid])).rows[0].n >= 100);
      victim.kill('SIGKILL');
      await victim.exited;
      await waitFor('every job to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'effect' AND state = 'completed'`)).rows[0].n === total, {
        timeoutMs: 120_000,
      });
      // Nothing lost: every job's effect is there.
      const missing = await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all j WHERE kind = 'effect' AND NOT EXISTS (SELECT 1 FROM ${q()}.effects e WHERE e.job_id = j.id)`);
      expect(missing.rows[0].n).toBe(0);
      // Every duplicate is a job the killed process was running: it has an effect from the
      // victim under an older token than the run that completed it.
      const dups = await t.sql.query(
        `SELECT e.job_id, array_agg(e.pid ORDER BY e.token) AS pids, array_agg(e.token::text ORDER BY e.token) AS tokens, j.lease_token::text AS final
         FROM ${q()}.effects e JOIN ${q()}.jobs_all j ON j.id = e.job_id GROUP BY e.job_id, j.lease_token HAVING count(*) > 1`,
      );
      for (const d of dups.rows as { pids: number[]; tokens: string[]; final: string }[]) {
        expect(d.pids.slice(0, -1).every((p) => p === victim.pid)).toBe(true);
        expect(d.tokens.at(-1)).toBe(d.final);
      }
      // The survivors saw the rescue: the victim's jobs were taken back by lease expiry.
      const rescued = await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'effect' AND errors @> '[{"kind":"lease-expired"}]'`);
      expect(rescued.rows[0].n).toBeGreaterThan(0);
    } finally {
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    }
  });

  it('a SIGTERMed worker finishes or hands back its jobs and exits', async () => {
    await t.sql.query(`CREATE TABLE IF NOT EXISTS ${q()}.effects (job_id bigint, attempt int, pid int, token bigint, at timestamptz DEFAULT clock_timestamp())`);
    const producer = t.client({ jobs: [effect] });
    const ids = (
      await producer.enqueueMany(
        effect,
        Array.from({ length: 200 }, (_, n) => ({ n: 10_000 + n, workMs: 50 })),
      )
    ).map((r) => r.id);
    const proc = startScript('test/fixtures/effect-worker.ts', { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_CONCURRENCY: '50', NS_GRACE_MS: '2000' });
    try {
      await proc.waitForLine('ready');
      await waitFor('jobs to be running', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE state = 'running' AND id = ANY($1::bigint[])`, [ids])).rows[0].n > 0);
      proc.kill('SIGTERM');
      expect((await proc.exited).code).toBe(0);
      const left = await t.sql.query(`SELECT state, count(*)::int AS n FROM ${q()}.jobs_all WHERE id = ANY($1::bigint[]) GROUP BY state`, [ids]);
      // Nothing is left running under a dead process's lease: completed or available again.
      for (const r of left.rows as { state: string }[]) expect(['completed', 'available']).toContain(r.state);
    } finally {
      proc.kill('SIGKILL');
      await proc.exited;
    }
  });
});
