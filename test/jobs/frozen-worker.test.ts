import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Database } from '../../src/db/database.js';
import { createPool } from '../../src/db/pool.js';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { startScript, type Proc } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

// A worker frozen (SIGSTOP) the moment a handler started, past its lease: the start was never
// recorded, so the rescuer gives the attempt back and another claim takes the job. When the frozen
// worker continues, its start mark and its completion carry the old lease token: both must be
// refused — the mark must not set started_at on the new claim (which would make a crash of the new
// holder charge an attempt of a job that never started there).

const t = useTestDatabase();
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const freeze = defineJob({ kind: 'freeze', queue: 'pills', payload: z.object({}), run: () => undefined });

function stateOf(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
}

async function stored(id: string) {
  const r = await t.sql.query(`SELECT state::text, attempt, lease_token::text, started_at FROM ${q()}.jobs_all WHERE id = $1`, [id]);
  return r.rows[0] as { state: string; attempt: number; lease_token: string; started_at: Date | null };
}

describe('a worker frozen past its lease, then continued', () => {
  it('writes neither its start mark, its completion nor its log lines over the job’s new claim', { timeout: 120_000 }, async () => {
    await t.sql.query(`CREATE TABLE ${q()}.effects (job_id bigint, attempt int, pid int, token bigint, at timestamptz DEFAULT clock_timestamp())`);
    const ns = t.client({ jobs: [freeze], maintenance: false });
    const { id } = await ns.enqueue(freeze, {}, { maxAttempts: 1 });
    const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_LEASE_MS: '1500', NS_HEARTBEAT_MS: '400' };
    const procs: Proc[] = [];
    const pool = createPool({ connectionString: t.url, max: 1, applicationName: 'second-claim' });
    try {
      const w = startScript('test/fixtures/pill-worker.ts', env);
      procs.push(w);
      await waitFor('the handler to stop its process', () => stateOf(w.pid) === 'T', { timeoutMs: 60_000 });
      const first = await stored(id);
      expect(first).toMatchObject({ state: 'running', attempt: 1, started_at: null });
      await waitFor('the lease to lapse and the job to be given back', async () => {
        await ns.runMaintenance();
        return (await stored(id)).state === 'available';
      });
      expect(await stored(id)).toMatchObject({ attempt: 0 });
      // Another claim takes it (held, as a worker that has not started it yet).
      const db = new Database(pool, t.schema);
      const [row] = await db.jobs.claim({ queue: 'pills', kinds: ['freeze'], limit: 1, owner: 'second', leaseMs: 60_000 });
      expect(row).toMatchObject({ id, attempt: 1 });
      expect(row!.lease_token).not.toBe(first.lease_token);
      w.kill('SIGCONT');
      await waitFor('the continued handler to run on', async () => (await t.sql.query(`SELECT 1 FROM ${q()}.effects WHERE job_id = $1`, [id])).rowCount === 1);
      // A graceful stop writes whatever the worker still holds: its completion, its start marks.
      w.kill('SIGTERM');
      expect((await w.exited).code).toBe(0);
      expect(await stored(id)).toMatchObject({ state: 'running', attempt: 1, lease_token: row!.lease_token, started_at: null });
      // The frozen run's ctx.log lines are not kept as attempt 1's: attempt 1 is now the new claim's
      // (the number was given back), whose own lines would have been dropped beside them.
      expect((await t.sql.query(`SELECT attempt, msg FROM ${q()}.job_logs WHERE job_id = $1`, [id])).rows).toEqual([]);
    } finally {
      await pool.close();
      for (const proc of procs) {
        proc.kill('SIGCONT');
        proc.kill('SIGKILL');
      }
      await Promise.all(procs.map((proc) => proc.exited));
    }
  });
});
