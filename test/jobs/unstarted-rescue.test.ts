import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Database } from '../../src/db/database.js';
import { UNSTARTED_RESCUES } from '../../src/db/jobs-maintenance.js';
import { createPool } from '../../src/db/pool.js';
import { defineJob } from '../../src/index.js';
import { drain } from '../../src/testing/index.js';
import { limitPlan } from '../../src/worker/limit-plan.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

// Issue 11, bug 3, for every claimed job: the claim records no start, so a process that dies after
// its claim committed and before a handler ran gives the attempt back, however often; after a few
// times the worker records the job's start before its handler runs, so a handler that kills its
// process at once uses up its attempts and cannot loop (test/jobs/poison-pill.test.ts: real processes).

const t = useTestDatabase();
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });
const q = () => `"${t.schema}"`;

async function stored(id: string) {
  const r = await t.sql.query(`SELECT state::text, attempt, started_at, reason, errors FROM ${q()}.jobs_all WHERE id = $1`, [id]);
  return r.rows[0] as { state: string; attempt: number; started_at: Date | null; reason: string | null; errors: { message: string; unstarted?: boolean }[] | null };
}

/** Claims the due jobs of `queue` as a worker does (to start them at once), then dies: the lease is made to expire. */
async function claimAndDie(queue: string, kinds: string[]): Promise<string[]> {
  const pool = createPool({ connectionString: t.url, max: 1, applicationName: 'dies-after-claim' });
  try {
    const db = new Database(pool, t.schema);
    const rows = await db.jobs.claim({ queue, kinds, limit: 10, owner: 'dies-after-claim', leaseMs: 60_000 });
    await t.sql.query(`UPDATE ${q()}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ANY($1::bigint[])`, [rows.map((r) => r.id)]);
    return rows.map((r) => r.id);
  } finally {
    await pool.close();
  }
}

describe('a crash between the claim and the handler’s start', () => {
  it('gives the attempt of a job claimed to start at once back: on its only attempt it is not discarded, and it runs later', async () => {
    const ran: number[] = [];
    const job = defineJob({ kind: 'us-once', payload, queue: 'us-once', maxAttempts: 1, run: ({ n }) => void ran.push(n) });
    const ns = t.client({ jobs: [job], maintenance: false });
    const { id } = await ns.enqueue(job, { n: 1 });
    expect(await claimAndDie('us-once', ['us-once'])).toEqual([id]);
    expect(await stored(id)).toMatchObject({ state: 'running', attempt: 1, started_at: null });
    expect((await ns.runMaintenance()).rescued).toBe(1);
    const back = await stored(id);
    expect(back).toMatchObject({ state: 'available', attempt: 0 });
    expect(back.errors!.at(-1)).toMatchObject({ unstarted: true });
    expect(back.errors!.at(-1)!.message).toContain('before the handler started');
    await ns.start();
    await waitFor('the job to complete', async () => (await stored(id)).state === 'completed');
    expect(ran).toEqual([1]);
    expect((await stored(id)).attempt).toBe(1);
  });

  it(`gives the attempt back however often it happens; after ${UNSTARTED_RESCUES} times the claim asks the worker to record the start before the handler runs`, async () => {
    const job = defineJob({ kind: 'us-pill', payload, queue: 'us-pill', maxAttempts: 1, run: () => undefined });
    const ns = t.client({ jobs: [job], maintenance: false });
    const { id } = await ns.enqueue(job, { n: 1 });
    const pool = createPool({ connectionString: t.url, max: 1, applicationName: 'claims' });
    try {
      const db = new Database(pool, t.schema);
      for (let i = 0; i <= UNSTARTED_RESCUES + 2; i++) {
        const [row] = await db.jobs.claim({ queue: 'us-pill', kinds: ['us-pill'], limit: 1, owner: 'dies-after-claim', leaseMs: 60_000 });
        // Suspected once the lease expired unstarted UNSTARTED_RESCUES times (a handler that kills
        // its process at once, or a job held beside one that often): its start goes first.
        expect(row).toMatchObject({ id, start_first: i >= UNSTARTED_RESCUES });
        await t.sql.query(`UPDATE ${q()}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
        expect((await ns.runMaintenance()).rescued).toBe(1);
        // Never charged: no start was recorded, so no handler can have run long (or, when its
        // start goes first, at all).
        expect(await stored(id)).toMatchObject({ state: 'available', attempt: 0 });
      }
    } finally {
      await pool.close();
    }
    const end = await stored(id);
    expect(end.errors!.filter((e) => e.unstarted)).toHaveLength(UNSTARTED_RESCUES + 3);
  });

  it('charges the attempt of a suspected job whose start went first: a handler that kills its process ends', async () => {
    const job = defineJob({ kind: 'us-pill2', payload, queue: 'us-pill2', maxAttempts: 1, run: () => undefined });
    const ns = t.client({ jobs: [job], maintenance: false });
    const { id } = await ns.enqueue(job, { n: 1 });
    for (let i = 0; i < UNSTARTED_RESCUES; i++) {
      await claimAndDie('us-pill2', ['us-pill2']);
      await ns.runMaintenance();
    }
    // A worker that records the start first (as the JobRunner does for start_first), then dies.
    const pool = createPool({ connectionString: t.url, max: 1, applicationName: 'starts-then-dies' });
    try {
      const db = new Database(pool, t.schema);
      const [row] = await db.jobs.claim({ queue: 'us-pill2', kinds: ['us-pill2'], limit: 1, owner: 'starts-then-dies', leaseMs: 60_000 });
      expect(row).toMatchObject({ id, start_first: true });
      expect(await db.jobs.start({ ids: [id], tokens: [row!.lease_token] })).toEqual(new Set([row!.lease_token]));
      await t.sql.query(`UPDATE ${q()}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    } finally {
      await pool.close();
    }
    expect((await ns.runMaintenance()).rescued).toBe(1);
    expect(await stored(id)).toMatchObject({ state: 'discarded', attempt: 1, reason: 'attempts exhausted (last one lost its lease)' });
  });

  it('keeps no log lines of a run whose attempt was given back: its number is the next run’s', async () => {
    const job = defineJob({ kind: 'us-logs', payload, queue: 'us-logs', run: () => undefined });
    const ns = t.client({ jobs: [job], maintenance: false });
    const { id } = await ns.enqueue(job, { n: 1 });
    const pool = createPool({ connectionString: t.url, max: 1, applicationName: 'frozen-run' });
    try {
      const db = new Database(pool, t.schema);
      const [row] = await db.jobs.claim({ queue: 'us-logs', kinds: ['us-logs'], limit: 1, owner: 'frozen-run', leaseMs: 60_000 });
      await t.sql.query(`UPDATE ${q()}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
      await ns.runMaintenance();
      expect(await stored(id)).toMatchObject({ state: 'available', attempt: 0 });
      // The run that held attempt 1 (frozen, say) writes what it logged once it goes on.
      const line = { seq: 0, at: new Date(), level: 'info', msg: 'late', fields: null };
      await db.jobLogs.insert({ jobId: id, attempt: 1, token: row!.lease_token, lines: [line] });
      expect((await t.sql.query(`SELECT 1 FROM ${q()}.job_logs WHERE job_id = $1`, [id])).rowCount).toBe(0);
      // The run that has the number now keeps its lines.
      const [next] = await db.jobs.claim({ queue: 'us-logs', kinds: ['us-logs'], limit: 1, owner: 'next-run', leaseMs: 60_000 });
      expect(next).toMatchObject({ attempt: 1 });
      await db.jobLogs.insert({ jobId: id, attempt: 1, token: next!.lease_token, lines: [{ ...line, msg: 'mine' }] });
      expect((await t.sql.query(`SELECT msg FROM ${q()}.job_logs WHERE job_id = $1`, [id])).rows).toEqual([{ msg: 'mine' }]);
    } finally {
      await pool.close();
    }
  });

  it('gives an at-most-once job’s attempt back every time its start was not recorded (no handler can have run)', async () => {
    const job = defineJob({ kind: 'us-amo', payload, queue: 'us-amo', delivery: 'at-most-once', maxAttempts: 1, run: () => undefined });
    const ns = t.client({ jobs: [job], maintenance: false });
    const { id } = await ns.enqueue(job, { n: 1 });
    for (let i = 0; i <= UNSTARTED_RESCUES; i++) {
      expect(await claimAndDie('us-amo', ['us-amo'])).toEqual([id]);
      expect((await ns.runMaintenance()).rescued).toBe(1);
      expect(await stored(id)).toMatchObject({ state: 'available', attempt: 0 });
    }
  });
});

describe('the worker records each start', () => {
  it('records the start of a handler that runs on, while it runs, and keeps it when the job completes', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const job = defineJob({ kind: 'us-long', payload, queue: 'us-long', run: () => gate });
    const ns = t.client({ jobs: [job], prefetch: 0 });
    const { id } = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await waitFor('the running job’s start to be recorded', async () => (await stored(id)).started_at !== null);
    const started = (await stored(id)).started_at!;
    release();
    await waitFor('the job to complete', async () => (await stored(id)).state === 'completed');
    expect((await stored(id)).started_at).toEqual(started);
  });

  it('records the start of a quick job from its run time, before its finish', async () => {
    const job = defineJob({ kind: 'us-quick', payload, queue: 'us-quick', run: () => undefined });
    const ns = t.client({ jobs: [job] });
    const { id } = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await waitFor('the job to complete', async () => (await stored(id)).state === 'completed');
    const r = await t.sql.query(`SELECT started_at <= finished_at AS ordered, started_at >= created_at AS after FROM ${q()}.jobs_all WHERE id = $1`, [id]);
    expect(r.rows[0]).toEqual({ ordered: true, after: true });
  });
});

describe('a suspected job (its lease lost unstarted too often)', () => {
  /** A job whose lease was lost with no start recorded UNSTARTED_RESCUES times; its handler reads its own started_at. */
  async function suspect(kind: string) {
    const seen: (Date | null)[] = [];
    const job = defineJob({
      kind,
      payload,
      queue: kind,
      maxAttempts: 1,
      run: async (_p, ctx) => {
        const r = await ctx.db.query({ text: `SELECT started_at FROM ${q()}.jobs WHERE id = $1`, values: [ctx.jobId] });
        seen.push((r.rows[0] as { started_at: Date | null }).started_at);
      },
    });
    const ns = t.client({ jobs: [job], maintenance: false });
    const { id } = await ns.enqueue(job, { n: 1 });
    for (let i = 0; i < UNSTARTED_RESCUES; i++) {
      await claimAndDie(kind, [kind]);
      await ns.runMaintenance();
    }
    return { ns, id, seen };
  }

  it('has its start recorded before its handler runs, by a worker', async () => {
    const { ns, id, seen } = await suspect('us-suspect-worker');
    await ns.start();
    await waitFor('the job to complete', async () => (await stored(id)).state === 'completed');
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeInstanceOf(Date);
  });

  it('has its start recorded before its handler runs, by drain (nightshift/testing)', async () => {
    const { ns, id, seen } = await suspect('us-suspect-drain');
    const result = await drain(ns);
    expect(result.jobs.map((j) => [j.jobId, j.status])).toEqual([[id, 'completed']]);
    expect(seen[0]).toBeInstanceOf(Date);
  });
});

describe('the limited claim (flow control)', () => {
  it(`asks for the start first, as the plain claim does, after ${UNSTARTED_RESCUES} unstarted rescues`, async () => {
    const job = defineJob({ kind: 'us-limited', payload, queue: 'us-limited', concurrency: { limit: 5 }, run: () => undefined });
    const ns = t.client({ jobs: [job], maintenance: false });
    const { id } = await ns.enqueue(job, { n: 1 });
    const plan = limitPlan([job], [])!;
    const pool = createPool({ connectionString: t.url, max: 1, applicationName: 'limited-claims' });
    try {
      const db = new Database(pool, t.schema);
      await db.limits.register(job.limits!.map((l) => ({ name: l.name, type: l.type, max: l.max, perMs: l.perMs, keyed: l.key !== undefined })));
      for (let i = 0; i <= UNSTARTED_RESCUES; i++) {
        const c = await db.limits.claim({ queue: 'us-limited', kinds: ['us-limited'], limit: 1, owner: 'dies-after-claim', leaseMs: 60_000, ...plan });
        expect(c.rows).toEqual([expect.objectContaining({ id, start_first: i >= UNSTARTED_RESCUES })]);
        await t.sql.query(`UPDATE ${q()}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
        expect((await ns.runMaintenance()).rescued).toBe(1);
      }
    } finally {
      await pool.close();
    }
    expect(await stored(id)).toMatchObject({ state: 'available', attempt: 0 });
  });
});
