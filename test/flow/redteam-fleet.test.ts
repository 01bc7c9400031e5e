import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/db.js';
import { startScript, type Proc } from '../support/processes.js';
import { waitFor } from '../support/wait.js';
import { redteamJobs, SHARED } from './fixtures/redteam-jobs.js';

// Three worker processes on two queues whose kinds share one named limit (plus a limit per key in
// one queue, a queue limit in the other), each process claiming a different set of queues, with
// the poll at an hour: every wait for a slot must end by a notification, and at no commit do more
// leases hold a key than its limit (a deferred constraint trigger records every excess it sees).
const t = useTestDatabase('rtfleet');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

async function guard(): Promise<void> {
  const s = q();
  await t.sql.query(`
  CREATE TABLE IF NOT EXISTS ${s}.rt_excess (k text, n int, at timestamptz DEFAULT clock_timestamp());
  CREATE OR REPLACE FUNCTION ${s}.rt_check() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO ${s}.rt_excess (k, n)
    SELECT e.k, count(*) FROM ${s}.jobs j, unnest(j.limit_keys) e(k), ${s}.limits l
    WHERE j.state = 'running' AND j.lease_expires_at IS NOT NULL AND e.k = ANY (NEW.limit_keys) AND l.name = split_part(e.k, '#', 1)
    GROUP BY e.k HAVING count(*) > max(l.max);
    RETURN NULL;
  END $$;
  DROP TRIGGER IF EXISTS rt_check ON ${s}.jobs;
  CREATE CONSTRAINT TRIGGER rt_check AFTER UPDATE OF state ON ${s}.jobs DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.state = 'running') EXECUTE FUNCTION ${s}.rt_check()`);
}

function fleet(queues: string[][], env: Record<string, string> = {}): Promise<Proc[]> {
  const procs = queues.map((qs) =>
    startScript('test/flow/fixtures/redteam-worker.ts', { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_QUEUES: qs.join(','), NS_CONCURRENCY: '10', NS_SHARED: String(SHARED), ...env }),
  );
  return Promise.all(procs.map((p) => p.waitForLine('ready'))).then(() => procs);
}

describe('shared limits across queues and processes', () => {
  it('never holds more leases than a limit, and drains without waiting for a poll', async () => {
    await guard();
    const { a, b, jobs } = redteamJobs();
    const producer = t.client({ jobs });
    const procs = await fleet([['qa'], ['qb'], ['qa', 'qb']]);
    try {
      let seed = 11;
      const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
      await producer.enqueueMany(
        a,
        Array.from({ length: 150 }, () => ({ key: `k${rnd(40)}`, workMs: rnd(15) })),
      );
      await producer.enqueueMany(
        b,
        Array.from({ length: 150 }, () => ({ key: 'x', workMs: rnd(15) })),
      );
      await waitFor('every job to complete (no wait for the hour-long poll)', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE state = 'completed'`)).rows[0].n === 300, {
        timeoutMs: 60_000,
      });
      expect((await t.sql.query(`SELECT k, n FROM ${q()}.rt_excess`)).rows).toEqual([]);
    } finally {
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    }
  });

  it('with the listeners cut again and again, drains by polling and no process dies', async () => {
    await guard();
    const before = (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE state = 'completed'`)).rows[0].n;
    await t.sql.query(`DELETE FROM ${q()}.rt_excess`);
    const { a, b, jobs } = redteamJobs();
    const producer = t.client({ jobs });
    const procs = await fleet([['qa'], ['qb'], ['qa', 'qb']], { NS_POLL_MS: '300' });
    let died = false;
    let cut = 0;
    for (const p of procs) void p.exited.then(() => (died = true));
    try {
      await producer.enqueueMany(
        a,
        Array.from({ length: 100 }, (_, n) => ({ key: `k${n % 7}`, workMs: 5 })),
      );
      await producer.enqueueMany(
        b,
        Array.from({ length: 100 }, () => ({ key: 'x', workMs: 5 })),
      );
      const done = async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE state = 'completed'`)).rows[0].n === before + 200;
      await waitFor(
        'every job to complete while the listeners are cut',
        async () => {
          // Every LISTEN connection of this schema's workers, cut at each check.
          cut += (await t.sql.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%' AND query LIKE $1 AND pid <> pg_backend_pid()`, [`%${t.schema}%`])).rowCount ?? 0;
          return done();
        },
        { timeoutMs: 60_000, everyMs: 100 },
      );
      expect(cut).toBeGreaterThan(0); // the listeners were cut
      expect(died).toBe(false);
      expect((await t.sql.query(`SELECT k, n FROM ${q()}.rt_excess`)).rows).toEqual([]);
    } finally {
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    }
  });
});
