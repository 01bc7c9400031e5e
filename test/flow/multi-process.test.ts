import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/db.js';
import { startScript, type Proc } from '../support/processes.js';
import { waitFor } from '../support/wait.js';
import { limitJobs, limitRunsTable } from './fixtures/limit-jobs.js';
import { maxOverlap, startsInWindow } from './overlap.js';
import { limitRuns, rateStarts } from './runs.js';

// Three real worker processes × concurrency 20 on one queue of limited kinds: the limits hold
// across the fleet, exactly, and a SIGKILLed worker's slots come back when its leases are rescued.
const t = useTestDatabase('flowmp');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const LIMITS = { global: 2, perKey: 1, rate: 20, perMs: 1000 };

/** Each test works on a table of runs of its own. */
async function freshRuns(): Promise<void> {
  await t.sql.query(limitRunsTable(t.schema));
  await t.sql.query(`TRUNCATE ${q()}.limit_runs, ${q()}.limit_rate_claims`);
}

async function fleet(env: Record<string, string> = {}): Promise<Proc[]> {
  const procs = [0, 1, 2].map(() =>
    startScript('test/flow/fixtures/limit-worker.ts', {
      DATABASE_URL: t.url,
      NS_SCHEMA: t.schema,
      NS_CONCURRENCY: '20',
      NS_LIMIT_GLOBAL: String(LIMITS.global),
      NS_LIMIT_KEY: String(LIMITS.perKey),
      NS_LIMIT_RATE: String(LIMITS.rate),
      NS_LIMIT_PER_MS: String(LIMITS.perMs),
      ...env,
    }),
  );
  await Promise.all(procs.map((p) => p.waitForLine('ready')));
  return procs;
}

async function stop(procs: Proc[]): Promise<void> {
  for (const p of procs) p.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
}

async function completed(kind: string): Promise<number> {
  return (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = $1 AND state = 'completed'`, [kind])).rows[0].n;
}

describe('limits across three worker processes', () => {
  it('a global limit of 2 is never exceeded, and is reached', async () => {
    await freshRuns();
    const jobs = limitJobs(t.schema, LIMITS);
    const producer = t.client({ jobs: [jobs.global] });
    await producer.enqueueMany(
      jobs.global,
      Array.from({ length: 60 }, (_, n) => ({ key: String(n), workMs: 20 })),
    );
    const procs = await fleet();
    try {
      await waitFor('every job to complete', async () => (await completed('lim-global')) === 60, { timeoutMs: 120_000 });
      const runs = await limitRuns(t.sql, t.schema, 'lim-global');
      expect(runs).toHaveLength(60);
      expect(maxOverlap(runs)).toBe(LIMITS.global);
      // More than one process ran them: the limit is the fleet's, not a process's.
      expect(new Set(runs.map((r) => r.pid)).size).toBeGreaterThan(1);
    } finally {
      await stop(procs);
    }
  });

  it('a limit of 1 per key over 20 keys holds while every key progresses', async () => {
    await freshRuns();
    const jobs = limitJobs(t.schema, LIMITS);
    const producer = t.client({ jobs: [jobs.perKey] });
    // Key by key: each key's backlog lies in one block of the claim order, so a claim that read
    // only the head of the queue would run one key at a time.
    await producer.enqueueMany(
      jobs.perKey,
      Array.from({ length: 200 }, (_, n) => ({ key: `k${Math.floor(n / 10)}`, workMs: 10 })),
    );
    const procs = await fleet();
    try {
      await waitFor('every job to complete', async () => (await completed('lim-key')) === 200, { timeoutMs: 120_000 });
      const runs = await limitRuns(t.sql, t.schema, 'lim-key');
      expect(runs).toHaveLength(200);
      const keys = [...new Set(runs.map((r) => r.key))];
      expect(keys).toHaveLength(20);
      for (const k of keys) expect(maxOverlap(runs.filter((r) => r.key === k)), `key ${k}`).toBe(1);
      // Every key progresses: each key's first run started before any key's third run did.
      const firsts = keys.map((k) => Math.min(...runs.filter((r) => r.key === k).map((r) => r.start)));
      const third = Math.min(
        ...keys.map(
          (k) =>
            runs
              .filter((r) => r.key === k)
              .map((r) => r.start)
              .sort((a, b) => a - b)[2]!,
        ),
      );
      expect(Math.max(...firsts)).toBeLessThan(third);
      expect(maxOverlap(runs)).toBeGreaterThan(1);
    } finally {
      await stop(procs);
    }
  });

  it('a rate limit of 20 per second holds in every window', async () => {
    await freshRuns();
    const jobs = limitJobs(t.schema, LIMITS);
    const producer = t.client({ jobs: [jobs.rate] });
    await producer.enqueueMany(
      jobs.rate,
      Array.from({ length: 70 }, (_, n) => ({ key: String(n), workMs: 0 })),
    );
    const procs = await fleet();
    try {
      await waitFor('every job to complete', async () => (await completed('lim-rate')) === 70, { timeoutMs: 120_000 });
      const runs = await limitRuns(t.sql, t.schema, 'lim-rate');
      expect(runs).toHaveLength(70);
      // Every run was counted by the rate limit, and the counted starts fill no window past it.
      const starts = await rateStarts(t.sql, t.schema);
      expect(starts).toHaveLength(70);
      expect(startsInWindow(starts, LIMITS.perMs)).toBe(LIMITS.rate);
    } finally {
      await stop(procs);
    }
  });

  it('a worker SIGKILLed while holding limited jobs frees their slots when its leases are rescued', async () => {
    await freshRuns();
    const jobs = limitJobs(t.schema, LIMITS);
    const producer = t.client({ jobs: [jobs.global] });
    const ids = (
      await producer.enqueueMany(
        jobs.global,
        // Long enough that the kill lands while the run it was aimed at still runs, on a loaded machine.
        Array.from({ length: 12 }, (_, n) => ({ key: String(n), workMs: 1_500 })),
      )
    ).map((r) => r.id);
    const procs = await fleet({ NS_LEASE_MS: '2000', NS_HEARTBEAT_MS: '500', NS_MAINTENANCE_MS: '300' });
    try {
      const { rows } = await waitFor('a process to be running a limited job', async () => {
        const r = await t.sql.query(`SELECT pid FROM ${q()}.limit_runs WHERE ended_at IS NULL AND job_id = ANY($1::bigint[]) LIMIT 1`, [ids]);
        return r.rows.length ? r : undefined;
      });
      const victim = procs.find((p) => p.pid === rows[0].pid)!;
      victim.kill('SIGKILL');
      await victim.exited;
      await waitFor('every job to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE id = ANY($1::bigint[]) AND state = 'completed'`, [ids])).rows[0].n === 12, {
        timeoutMs: 120_000,
      });
      const runs = (await limitRuns(t.sql, t.schema, 'lim-global')).filter((r) => ids.includes(r.jobId));
      const killed = runs.filter((r) => r.killed);
      expect(killed.length).toBeGreaterThan(0);
      // The killed runs held their slots until their rescue (an end at the rescue), no longer:
      // the limit holds with them, and every job completed after them.
      expect(killed.every((r) => Number.isFinite(r.end))).toBe(true);
      expect(maxOverlap(runs)).toBeLessThanOrEqual(LIMITS.global);
      for (const k of killed) expect(ids).toContain(k.jobId);
      // Every killed run's job was rescued (jobs the victim held ahead, unstarted, were rescued too).
      const { rows: rescued } = await t.sql.query(`SELECT id::text FROM ${q()}.jobs_all WHERE id = ANY($1::bigint[]) AND errors @> '[{"kind":"lease-expired"}]'`, [ids]);
      const rescuedIds = rescued.map((r: { id: string }) => r.id);
      for (const k of killed) expect(rescuedIds).toContain(k.jobId);
    } finally {
      await stop(procs);
    }
  });
});
