import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Database } from '../../src/db/database.js';
import { createPool } from '../../src/db/pool.js';
import { defineJob, type DedupeScope } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const payload = z.object({ v: z.number() });

async function job(id: string) {
  const r = await t.sql.query(`SELECT id::text, state::text, attempt, dedupe_key, dedupe_given, errors FROM ${q()}.jobs_all WHERE id = $1`, [id]);
  return r.rows[0] as { id: string; state: string; attempt: number; dedupe_key: string | null; dedupe_given: string | null; errors: { kind: string }[] | null };
}

/** Claims jobs of `queue` as a worker that started their handlers and then died: its lease expires at once. */
async function claimAsCrashedWorker(queue: string, kinds: string[], n: number) {
  const pool = createPool({ connectionString: t.url, max: 1, applicationName: 'crashed' });
  try {
    const db = new Database(pool, t.schema);
    const rows = await db.jobs.claim({ queue, kinds, limit: n, owner: 'crashed-worker', leaseMs: 60_000 });
    await db.jobs.start({ ids: rows.map((r) => r.id), tokens: rows.map((r) => r.lease_token) });
    await t.sql.query(`UPDATE ${q()}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ANY($1::bigint[])`, [rows.map((r) => r.id)]);
    return rows;
  } finally {
    await pool.close();
  }
}

const kindOf = (name: string, scope?: DedupeScope, run: () => unknown = () => undefined) => defineJob({ kind: name, payload, queue: name, ...(scope ? { dedupeScope: scope } : {}), run });

describe("the 'pending' scope: a follow-up takes a running job's key", () => {
  // Issue 11, bug 2: the running job could then not be rescued (unique violation), and the
  // rescuer's one-statement batch failed for every crashed job of the schema.
  it('rescues a crashed job whose key a follow-up took, and every other crashed job with it', async () => {
    const keyed = kindOf('scope-rescue');
    const plain = kindOf('scope-rescue-plain');
    const ns = t.client({ jobs: [keyed, plain] });
    await ns.migrate();
    const first = await ns.enqueue(keyed, { v: 1 }, { dedupeKey: 'k' });
    await claimAsCrashedWorker('scope-rescue', ['scope-rescue'], 1);
    const others = await ns.enqueueMany(plain, [{ v: 1 }, { v: 2 }, { v: 3 }]);
    await claimAsCrashedWorker('scope-rescue-plain', ['scope-rescue-plain'], 3);
    const followUp = await ns.enqueue(keyed, { v: 2 }, { dedupeKey: 'k' });
    expect(followUp.deduped).toBe(false);

    expect((await ns.runMaintenance()).rescued).toBe(4);
    const rescued = await job(first.id);
    expect(rescued.state).toBe('available');
    // It gave the key up to the follow-up, which still holds it: both will run.
    expect(rescued).toMatchObject({ dedupe_key: null, dedupe_given: 'k' });
    expect((await job(followUp.id)).dedupe_key).toBe('k');
    for (const o of others) expect((await job(o.id)).state).toBe('available');
    const record = await ns.getJob(first.id);
    expect(record).toMatchObject({ dedupeKey: 'k', dedupeScope: 'pending', dedupeReleased: true });
    // A repeat now lands on the follow-up, the job that holds the key.
    expect(await ns.enqueue(keyed, { v: 3 }, { dedupeKey: 'k' })).toEqual({ id: followUp.id, deduped: true });
  });

  it('retries a failed job whose key a follow-up took, and both run', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const runs: number[] = [];
    const flaky = defineJob({
      kind: 'scope-retry',
      payload,
      queue: 'scope-retry',
      backoff: () => 0,
      run: async ({ v }, ctx) => {
        runs.push(v);
        if (v === 1 && ctx.attempt === 1) {
          await gate;
          throw new Error('first attempt fails');
        }
      },
    });
    const ns = t.client({ jobs: [flaky], concurrency: 2, prefetch: 0 });
    const first = await ns.enqueue(flaky, { v: 1 }, { dedupeKey: 'k' });
    await ns.start();
    await waitFor('the first attempt to run', () => runs.length === 1);
    const followUp = await ns.enqueue(flaky, { v: 2 }, { runAt: new Date(Date.now() + 3_600_000), dedupeKey: 'k' });
    release();
    await waitFor('the failed job to be retried and complete', async () => (await job(first.id)).state === 'completed');
    expect(runs.filter((v) => v === 1)).toHaveLength(2);
    expect(await job(followUp.id)).toMatchObject({ state: 'available', dedupe_key: 'k' });
  });

  it("an operator's retry of a finished job whose key is taken runs it without the key, and a bulk retry does too", async () => {
    const k = kindOf('scope-admin');
    const ns = t.client({ jobs: [k] });
    await ns.migrate();
    const a = await ns.enqueue(k, { v: 1 }, { dedupeKey: 'k' });
    await ns.cancelJob(a.id);
    const b = await ns.enqueue(k, { v: 2 }, { dedupeKey: 'k' });
    expect(b.deduped).toBe(false);
    const retried = await ns.retryJob(a.id);
    expect(retried).toMatchObject({ state: 'available', dedupeReleased: true });
    const c = await ns.enqueue(k, { v: 3 }, { dedupeKey: 'k2' });
    await ns.cancelJob(c.id);
    await ns.enqueue(k, { v: 4 }, { dedupeKey: 'k2' });
    expect(await ns.retryJobs({ kind: 'scope-admin', state: 'cancelled' })).toBe(1);
    expect((await job(c.id)).state).toBe('available');
  });
});

describe("the 'active' scope: one pending or running job per key", () => {
  it('dedupes while the job is pending or running, not after it finished', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = 0;
    const k = kindOf('scope-active', 'active', async () => {
      started++;
      await gate;
    });
    const ns = t.client({ jobs: [k], concurrency: 1, prefetch: 0 });
    const a = await ns.enqueue(k, { v: 1 }, { dedupeKey: 'k' });
    expect(await ns.enqueue(k, { v: 2 }, { dedupeKey: 'k' })).toEqual({ id: a.id, deduped: true });
    await ns.start();
    await waitFor('the job to run', () => started === 1);
    expect(await ns.enqueue(k, { v: 3 }, { dedupeKey: 'k' })).toEqual({ id: a.id, deduped: true });
    // The same through SQL, with the kind's registered scope.
    const viaSql = await t.sql.query(`SELECT ${q()}.enqueue('scope-active', '{"v":4}', dedupe_key => 'k') AS id`);
    expect(String(viaSql.rows[0].id)).toBe(a.id);
    release();
    await waitFor('the job to complete', async () => (await job(a.id)).state === 'completed');
    const b = await ns.enqueue(k, { v: 5 }, { dedupeKey: 'k' });
    expect(b.deduped).toBe(false);
  });

  it("refuses an operator's retry while another job holds the key, with the holder named; a bulk retry leaves it", async () => {
    const k = kindOf('scope-active-admin', 'active');
    const ns = t.client({ jobs: [k] });
    await ns.migrate();
    const a = await ns.enqueue(k, { v: 1 }, { dedupeKey: 'k' });
    await ns.cancelJob(a.id);
    const b = await ns.enqueue(k, { v: 2 }, { dedupeKey: 'k' });
    await expect(ns.retryJob(a.id)).rejects.toMatchObject({ code: 'NS_DEDUPE_CONFLICT', holder: b.id });
    expect(await ns.retryJobs({ kind: 'scope-active-admin', state: 'cancelled' })).toBe(0);
    expect((await job(a.id)).state).toBe('cancelled');
    await ns.cancelJob(b.id);
    expect((await ns.retryJob(a.id)).state).toBe('available');
  });

  it('a crashed running job is rescued without conflict: the scope kept the key for it', async () => {
    const k = kindOf('scope-active-rescue', 'active');
    const ns = t.client({ jobs: [k] });
    await ns.migrate();
    const a = await ns.enqueue(k, { v: 1 }, { dedupeKey: 'k' });
    await claimAsCrashedWorker('scope-active-rescue', ['scope-active-rescue'], 1);
    expect(await ns.enqueue(k, { v: 2 }, { dedupeKey: 'k' })).toEqual({ id: a.id, deduped: true });
    expect((await ns.runMaintenance()).rescued).toBe(1);
    expect(await job(a.id)).toMatchObject({ state: 'available', dedupe_key: 'k' });
  });
});

describe("the 'ever' and 'within' scopes", () => {
  it("'ever': a key holds after the job finished, until the job is pruned", async () => {
    const k = kindOf('scope-ever', 'ever');
    const ns = t.client({ jobs: [k] });
    const a = await ns.enqueue(k, { v: 1 }, { dedupeKey: 'once' });
    await ns.start();
    await waitFor('the job to complete', async () => (await job(a.id)).state === 'completed');
    expect(await ns.enqueue(k, { v: 2 }, { dedupeKey: 'once' })).toEqual({ id: a.id, deduped: true });
    expect(await ns.enqueueMany(k, [{ v: 3 }, { v: 4 }], { dedupeKey: 'once' })).toEqual([
      { id: a.id, deduped: true },
      { id: a.id, deduped: true },
    ]);
    expect(await ns.getJob(a.id)).toMatchObject({ dedupeKey: 'once', dedupeScope: 'ever', dedupeReleased: false });
    // Pruned with its job (retention 0 for completed jobs), the key is free again.
    await ns.prune({ completed: 0 });
    const b = await ns.enqueue(k, { v: 5 }, { dedupeKey: 'once' });
    expect(b.deduped).toBe(false);
  });

  it("'within': a key holds for its period from the enqueue, then a new job takes it", async () => {
    const k = kindOf('scope-within', { withinMs: 3_600_000 });
    const ns = t.client({ jobs: [k] });
    await ns.migrate();
    const a = await ns.enqueue(k, { v: 1 }, { dedupeKey: 'w' });
    await ns.cancelJob(a.id);
    expect(await ns.enqueue(k, { v: 2 }, { dedupeKey: 'w' })).toEqual({ id: a.id, deduped: true });
    // The period ends (on the database clock).
    await t.sql.query(`UPDATE ${q()}.dedupe_keys SET expires_at = now() - interval '1 second' WHERE kind = 'scope-within'`);
    const b = await ns.enqueue(k, { v: 3 }, { dedupeKey: 'w' });
    expect(b.deduped).toBe(false);
    expect(await ns.enqueue(k, { v: 4 }, { dedupeKey: 'w' })).toEqual({ id: b.id, deduped: true });
  });

  it('rejects debounce on a scope other than pending', async () => {
    const k = kindOf('scope-ever-debounce', 'ever');
    const ns = t.client({ jobs: [k] });
    await expect(ns.enqueue(k, { v: 1 }, { dedupeKey: 'x', debounceMs: 1_000 })).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID' });
  });

  it('rejects an invalid dedupeScope when the kind is defined', () => {
    expect(() => kindOf('bad-scope', 'forever' as unknown as DedupeScope)).toThrow(/dedupeScope/);
    expect(() => kindOf('bad-scope', { withinMs: -1 })).toThrow(/dedupeScope/);
  });
});
