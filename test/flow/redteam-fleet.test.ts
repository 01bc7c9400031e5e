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
  CREATE CONSTRAINT TRIGGER rt_check AFTER UPDATE OF state ON ${s}.jobs DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.state = 'running') EXECUTE FUNCTION ${s}.rt_check()`);
}

function fleet(queues: string[][]): Promise<Proc[]> {
  const procs = queues.map((qs) => startScript('test/flow/fixtures/redteam-worker.ts', { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_QUEUES: qs.join(','), NS_CONCURRENCY: '10', NS_SHARED: String(SHARED) }));
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
});
