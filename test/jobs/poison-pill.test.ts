import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { UNSTARTED_RESCUES } from '../../src/db/jobs-maintenance.js';
import { defineJob, type Nightshift } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { startScript, type Proc } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

// A handler that kills its own process at once (test/fixtures/pill-worker.ts) takes with it every
// job its worker held: jobs claimed ahead of a free slot, whose handlers never ran. The rescuer
// bounds how often such a pill's attempt is given back; the jobs merely held beside it must not be
// charged for it, however often it happens (issue 11, bug 3: no job discarded without a run).

const t = useTestDatabase();
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const effect = defineJob({ kind: 'effect', queue: 'pills', payload: z.object({ n: z.number() }), run: () => undefined });
const pill = defineJob({ kind: 'pill', queue: 'pills', payload: z.object({}), run: () => undefined });

async function stateOf(ids: string[]) {
  const r = await t.sql.query(
    `SELECT id::text, state::text, attempt, reason, (SELECT count(*)::int FROM jsonb_array_elements(coalesce(errors, '[]')) e WHERE e->>'kind' = 'lease-expired') AS lost,
            EXISTS (SELECT 1 FROM ${q()}.effects f WHERE f.job_id = j.id) AS ran
     FROM ${q()}.jobs_all j WHERE id = ANY($1::bigint[]) ORDER BY id`,
    [ids],
  );
  return r.rows as { id: string; state: string; attempt: number; reason: string | null; lost: number; ran: boolean }[];
}

async function effectsTable() {
  await t.sql.query(`CREATE TABLE IF NOT EXISTS ${q()}.effects (job_id bigint, attempt int, pid int, token bigint, at timestamptz DEFAULT clock_timestamp())`);
}

/**
 * Starts pill workers one after the other (each killed by the pill, its leases rescued) while the
 * pill is still available, at most 12 times; `beforeEach` runs before each worker starts.
 */
async function crashRounds(ns: Nightshift, env: Record<string, string>, pillId: string, procs: Proc[], beforeEach?: () => Promise<unknown>) {
  for (let round = 1; round <= 12; round++) {
    if ((await stateOf([pillId]))[0]!.state !== 'available') break;
    await beforeEach?.();
    const proc = startScript('test/fixtures/pill-worker.ts', env);
    procs.push(proc);
    let exit: Awaited<Proc['exited']> | undefined;
    void proc.exited.then((e) => (exit = e));
    await waitFor('the pill to kill the worker', () => exit, { timeoutMs: 120_000 });
    expect(exit!.signal).toBe('SIGKILL');
    await waitFor(
      'the killed worker’s leases to be rescued',
      async () => {
        await ns.runMaintenance();
        return (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs WHERE state = 'running'`)).rows[0].n === 0;
      },
      { timeoutMs: 30_000 },
    );
  }
}

describe('a handler that kills its process at once', () => {
  it('ends after its attempts, and never discards a job that waited unstarted beside it, however many crashes it caused', { timeout: 300_000 }, async () => {
    await effectsTable();
    const ns = t.client({ jobs: [effect, pill], maintenance: false });
    const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_LEASE_MS: '1500', NS_HEARTBEAT_MS: '400', NS_CONCURRENCY: '1' };
    const { id: pillId } = await ns.enqueue(pill, {}, { maxAttempts: 3 });
    // Enqueued after the pill, same priority: claimed right behind it, so they wait for the slot it
    // takes. Not always: one left unclaimed in a round keeps its run_at while the rescue moves the
    // pill's to now, and then runs before the pill — whose start must wait for that job's
    // completion to be written, or the crash loses it (test/unit/job-runner-suspect.test.ts).
    const innocents = (
      await ns.enqueueMany(
        effect,
        Array.from({ length: 20 }, (_, n) => ({ n })),
        { maxAttempts: 1 },
      )
    ).map((j) => j.id);
    const procs: Proc[] = [];
    try {
      // Quick jobs first (lower priority number), so the worker claims ahead of its one slot by the
      // time it reaches the pill: the jobs behind the pill are held, not started.
      await crashRounds(ns, env, pillId, procs, () =>
        ns.enqueueMany(
          effect,
          Array.from({ length: 300 }, (_, n) => ({ n })),
          { priority: -1 },
        ),
      );
      const [p] = await stateOf([pillId]);
      // The pill ended: its attempt given back a bounded number of times, then its attempts counted.
      expect(p).toMatchObject({ state: 'discarded', attempt: 3 });
      expect(p!.lost).toBe(UNSTARTED_RESCUES + 3);
      // The scenario happened: jobs behind the pill were taken back more often than the pill's
      // attempt is given back unstarted.
      const before = await stateOf(innocents);
      expect(Math.max(...before.map((j) => j.lost))).toBeGreaterThan(UNSTARTED_RESCUES);
      expect(before.filter((j) => j.state === 'discarded')).toEqual([]);
      const last = startScript('test/fixtures/pill-worker.ts', env);
      procs.push(last);
      await last.waitForLine('ready');
      await waitFor('every job behind the pill to finish', async () => (await stateOf(innocents)).every((j) => j.state === 'completed' || j.state === 'discarded'), { timeoutMs: 60_000 });
      const after = await stateOf(innocents);
      expect(after.filter((j) => j.state !== 'completed' || !j.ran)).toEqual([]);
    } finally {
      for (const proc of procs) proc.kill('SIGKILL');
      await Promise.all(procs.map((proc) => proc.exited));
    }
  });
});

// The same with the kinds under a fleet-wide concurrency limit (not hit) in the worker: the limited
// claim asks for the start first as the plain claim does (it counts the unstarted rescues in its
// own statement), and stamps the keys of jobs enqueued without them (this test's client does not
// know the limit).
describe.each([
  ['', undefined],
  [', its kinds under a fleet-wide limit', '10'],
])('a handler that kills its process at once, in a worker that starts several jobs at once%s', (_what, limit) => {
  it('never charges the jobs started in the same turn beside it: once they are suspected too, their starts are recorded one at a time', { timeout: 300_000 }, async () => {
    await effectsTable();
    const ns = t.client({ jobs: [effect, pill], maintenance: false });
    const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_LEASE_MS: '1500', NS_HEARTBEAT_MS: '400', NS_CONCURRENCY: '4', ...(limit ? { NS_LIMIT: limit } : {}) };
    const { id: pillId } = await ns.enqueue(pill, {}, { maxAttempts: 3, priority: -5 });
    // Claimed with the pill every time (the pill first: a lower priority number), started at once.
    const beside = (
      await ns.enqueueMany(
        effect,
        Array.from({ length: 3 }, (_, n) => ({ n })),
        { maxAttempts: 1, priority: -4 },
      )
    ).map((j) => j.id);
    const procs: Proc[] = [];
    try {
      await crashRounds(ns, env, pillId, procs);
      expect((await stateOf([pillId]))[0]).toMatchObject({ state: 'discarded', attempt: 3 });
      const before = await stateOf(beside);
      // The scenario: each was taken back with the pill more often than the pill is given back unstarted.
      expect(Math.min(...before.map((j) => j.lost))).toBeGreaterThan(UNSTARTED_RESCUES);
      expect(before.filter((j) => j.state !== 'available')).toEqual([]);
      const last = startScript('test/fixtures/pill-worker.ts', env);
      procs.push(last);
      await waitFor('the jobs beside the pill to complete', async () => (await stateOf(beside)).every((j) => j.state === 'completed' && j.ran), { timeoutMs: 60_000 });
    } finally {
      for (const proc of procs) proc.kill('SIGKILL');
      await Promise.all(procs.map((proc) => proc.exited));
    }
  });
});

describe('an at-most-once handler that kills its process at once', () => {
  it('is abandoned at its first crash (its start was recorded before it ran), and the job held behind it runs', { timeout: 120_000 }, async () => {
    await effectsTable();
    const amo = defineJob({ kind: 'pill', queue: 'pills', delivery: 'at-most-once', payload: z.object({}), run: () => undefined });
    const ns = t.client({ jobs: [effect, amo], maintenance: false });
    const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_LEASE_MS: '1500', NS_HEARTBEAT_MS: '400', NS_DELIVERY: 'at-most-once' };
    const { id: pillId } = await ns.enqueue(amo, {}, { maxAttempts: 5 });
    const behind = (
      await ns.enqueueMany(
        effect,
        Array.from({ length: 5 }, (_, n) => ({ n })),
        { maxAttempts: 1 },
      )
    ).map((j) => j.id);
    const procs: Proc[] = [];
    try {
      const first = startScript('test/fixtures/pill-worker.ts', env);
      procs.push(first);
      expect((await first.exited).signal).toBe('SIGKILL');
      await waitFor('the pill to be rescued', async () => {
        await ns.runMaintenance();
        return (await stateOf([pillId]))[0]!.state !== 'running';
      });
      const [p] = await stateOf([pillId]);
      expect(p).toMatchObject({ state: 'abandoned', attempt: 1, lost: 1 });
      const last = startScript('test/fixtures/pill-worker.ts', env);
      procs.push(last);
      await waitFor('the jobs behind the pill to complete', async () => (await stateOf(behind)).every((j) => j.state === 'completed' && j.ran), { timeoutMs: 60_000 });
      // It was not run again.
      expect((await stateOf([pillId]))[0]!.state).toBe('abandoned');
    } finally {
      for (const proc of procs) proc.kill('SIGKILL');
      await Promise.all(procs.map((proc) => proc.exited));
    }
  });
});
