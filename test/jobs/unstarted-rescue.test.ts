import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Database } from '../../src/db/database.js';
import { UNSTARTED_RESCUES } from '../../src/db/jobs-maintenance.js';
import { createPool } from '../../src/db/pool.js';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

// Issue 11, bug 3, for every claimed job: the claim records no start, so a process that dies after
// its claim committed and before a handler ran gives the attempt back — and the number of times
// that can happen to one job is bounded, so a handler that kills its process at once cannot loop.

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

  it(`gives the attempt back ${UNSTARTED_RESCUES} times at most: then the attempt counts, so a job whose handler kills its process at once ends`, async () => {
    const job = defineJob({ kind: 'us-pill', payload, queue: 'us-pill', maxAttempts: 1, run: () => undefined });
    const ns = t.client({ jobs: [job], maintenance: false });
    const { id } = await ns.enqueue(job, { n: 1 });
    for (let i = 1; i <= UNSTARTED_RESCUES; i++) {
      expect(await claimAndDie('us-pill', ['us-pill'])).toEqual([id]);
      expect((await ns.runMaintenance()).rescued).toBe(1);
      expect(await stored(id)).toMatchObject({ state: 'available', attempt: 0 });
    }
    expect(await claimAndDie('us-pill', ['us-pill'])).toEqual([id]);
    expect((await ns.runMaintenance()).rescued).toBe(1);
    const end = await stored(id);
    expect(end).toMatchObject({ state: 'discarded', attempt: 1, reason: 'attempts exhausted (last one lost its lease)' });
    expect(end.errors!.filter((e) => e.unstarted)).toHaveLength(UNSTARTED_RESCUES);
    expect(end.errors!.at(-1)!.message).toContain(`with no start recorded, ${UNSTARTED_RESCUES} times before: the attempt counts`);
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
