import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, discard, hold, Hold, retryAfter, type JobContext, type NightshiftEvent } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });

async function state(ns: { getJob(id: string): Promise<{ state: string }> }, id: string, want: string) {
  return waitFor(`job ${id} to be ${want}`, async () => (await ns.getJob(id)).state === want);
}

describe('running jobs', () => {
  it('gives the handler its context: job id, attempt, signal, heartbeat, logger, db', async () => {
    let seen: Partial<JobContext> & { dbOk?: boolean } = {};
    const job = defineJob({
      kind: 'ctx',
      payload,
      run: async (_p, ctx) => {
        await ctx.heartbeat();
        const r = await ctx.db.query({ text: 'SELECT 1 AS one' });
        seen = { jobId: ctx.jobId, attempt: ctx.attempt, kind: ctx.kind, queue: ctx.queue, leaseToken: ctx.leaseToken, dbOk: (r.rows[0] as { one: number }).one === 1 };
        ctx.log.info('hello from the handler');
        expect(ctx.signal.aborted).toBe(false);
      },
    });
    const ns = t.client({ jobs: [job] });
    const { id } = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await state(ns, id, 'completed');
    const stored = await ns.getJob(id);
    expect(seen).toEqual({ jobId: id, attempt: 1, kind: 'ctx', queue: 'default', leaseToken: stored.leaseToken, dbOk: true });
  });

  it('retries a failing job with back-off and keeps each attempt error', async () => {
    let calls = 0;
    const job = defineJob({
      kind: 'flaky',
      payload,
      backoff: { initialMs: 10, maxMs: 20, jitter: 0 },
      run: async () => {
        calls++;
        if (calls < 3) throw new Error(`boom ${calls}`);
      },
    });
    const ns = t.client({ jobs: [job], pollIntervalMs: 50 });
    const { id } = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await state(ns, id, 'completed');
    const j = await ns.getJob(id);
    expect(j.attempt).toBe(3);
    expect(j.errors.map((e) => [e.attempt, e.kind, e.message])).toEqual([
      [1, 'error', 'boom 1'],
      [2, 'error', 'boom 2'],
    ]);
    expect(j.errors[0]!.stack).toContain('boom 1');
  });

  it('discards a job after its last attempt, with its error history', async () => {
    const job = defineJob({ kind: 'doomed', payload, maxAttempts: 2, backoff: () => 0, run: async () => Promise.reject(new Error('always')) });
    const ns = t.client({ jobs: [job], pollIntervalMs: 50 });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    const { id } = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await state(ns, id, 'discarded');
    const j = await ns.getJob(id);
    expect(j.attempt).toBe(2);
    expect(j.errors).toHaveLength(2);
    expect(j.reason).toContain('attempts exhausted');
    expect(j.finishedAt).not.toBeNull();
    await waitFor('the discarded event', () => events.some((e) => e.type === 'job.discarded'));
  });

  it('follows explicit results: retry after, discard and hold, returned or thrown', async () => {
    const outcome = new Map<number, number>();
    const job = defineJob({
      kind: 'steered',
      payload,
      maxAttempts: 1,
      run: async ({ n }, ctx) => {
        outcome.set(n, (outcome.get(n) ?? 0) + 1);
        if (n === 1 && ctx.attempt === 1) return retryAfter(10, 'not yet');
        if (n === 2) return discard('invalid order');
        if (n === 3) throw hold('manual review: orphan confirm id');
        if (n === 4) throw new Hold('held by throw');
        return undefined;
      },
    });
    const ns = t.client({ jobs: [job], pollIntervalMs: 50 });
    const ids = await Promise.all([1, 2, 3, 4].map((n) => ns.enqueue(job, { n }).then((r) => r.id)));
    await ns.start();
    // A requested retry runs again even with maxAttempts 1: the handler asked for it.
    await state(ns, ids[0]!, 'completed');
    expect((await ns.getJob(ids[0]!)).attempt).toBe(2);
    await state(ns, ids[1]!, 'discarded');
    expect((await ns.getJob(ids[1]!)).reason).toBe('invalid order');
    await state(ns, ids[2]!, 'held');
    expect((await ns.getJob(ids[2]!)).reason).toBe('manual review: orphan confirm id');
    await state(ns, ids[3]!, 'held');
  });

  it('does not retry an at-most-once job that threw', async () => {
    let calls = 0;
    const job = defineJob({
      kind: 'escrow',
      payload,
      delivery: 'at-most-once',
      maxAttempts: 5,
      run: async () => {
        calls++;
        throw new Error('exchange said no');
      },
    });
    const ns = t.client({ jobs: [job] });
    const { id } = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await state(ns, id, 'discarded');
    expect(calls).toBe(1);
    expect((await ns.getJob(id)).reason).toContain('at-most-once');
  });

  it('aborts a job past its timeout and records the timeout', async () => {
    let aborted: unknown;
    const job = defineJob({
      kind: 'slow',
      payload,
      timeoutMs: 100,
      maxAttempts: 1,
      run: (_p, ctx) =>
        new Promise<void>((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            aborted = ctx.signal.reason;
            reject(ctx.signal.reason);
          });
        }),
    });
    const ns = t.client({ jobs: [job] });
    const { id } = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await state(ns, id, 'discarded');
    expect(aborted).toMatchObject({ code: 'NS_JOB_TIMEOUT' });
    expect((await ns.getJob(id)).errors[0]).toMatchObject({ kind: 'timeout' });
  });

  it('stores an error whose message has NUL bytes and lone surrogates, so the job is never stuck', async () => {
    const job = defineJob({ kind: 'nul-error', payload, maxAttempts: 1, run: async () => Promise.reject(new Error('bad\u0000byte and \ud800 half')) });
    const ns = t.client({ jobs: [job] });
    const { id } = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await state(ns, id, 'discarded');
    expect((await ns.getJob(id)).errors[0]!.message).toBe('bad\uFFFDbyte and \uFFFD half');
  });

  it('discards a job whose stored payload does not match the schema (enqueued from SQL)', async () => {
    const job = defineJob({ kind: 'typed', payload, run: async () => undefined });
    const ns = t.client({ jobs: [job] });
    await ns.migrate();
    const r = await t.sql.query(`SELECT "${t.schema}".enqueue('typed', '{"n":"not a number"}') AS id`);
    await ns.start();
    await state(ns, String(r.rows[0].id), 'discarded');
    const j = await ns.getJob(String(r.rows[0].id));
    expect(j.errors[0]!.code).toBe('NS_PAYLOAD_INVALID');
  });

  it('runs higher priority first within a queue', async () => {
    const order: number[] = [];
    const job = defineJob({ kind: 'prio', payload, queue: 'prio-q', run: async ({ n }) => void order.push(n) });
    const ns = t.client({ jobs: [job], concurrency: 1 });
    await ns.enqueue(job, { n: 3 }, { priority: 3 });
    await ns.enqueue(job, { n: 1 }, { priority: -1 });
    await ns.enqueue(job, { n: 2 }, { priority: 0 });
    await ns.start();
    await waitFor('all three to run', () => order.length === 3);
    expect(order).toEqual([1, 2, 3]);
  });

  it('respects per-queue and per-process concurrency', async () => {
    let running = 0;
    let peak = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const job = defineJob({
      kind: 'limited',
      payload,
      queue: 'narrow',
      run: async () => {
        running++;
        peak = Math.max(peak, running);
        await gate;
        running--;
      },
    });
    const ns = t.client({ jobs: [job], concurrency: 10, queues: { narrow: { concurrency: 3 } } });
    await ns.enqueueMany(
      job,
      Array.from({ length: 12 }, (_, n) => ({ n })),
    );
    await ns.start();
    await waitFor('three to run', () => running === 3);
    expect(ns.runningCount).toBe(3);
    const r = await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind = 'limited' AND state = 'running'`);
    expect(r.rows[0].n).toBe(3);
    release();
    await waitFor('all to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind = 'limited' AND state = 'completed'`)).rows[0].n === 12);
    expect(peak).toBe(3);
  });

  it('claims only kinds it has a handler for; unknown kinds stay available', async () => {
    const known = defineJob({ kind: 'known', payload, queue: 'shared', run: async () => undefined });
    const other = defineJob({ kind: 'other', payload, queue: 'shared', run: async () => undefined });
    const producer = t.client({ jobs: [other] });
    const { id: otherId } = await producer.enqueue(other, { n: 1 });
    const ns = t.client({ jobs: [known] });
    const { id } = await ns.enqueue(known, { n: 2 });
    await ns.start();
    await state(ns, id, 'completed');
    expect((await ns.getJob(otherId)).state).toBe('available');
  });

  it('does not run a job past its deadline: it expires with the reason', async () => {
    let ran = false;
    const job = defineJob({ kind: 'intent', payload, run: async () => void (ran = true) });
    const ns = t.client({ jobs: [job] });
    const { id } = await ns.enqueue(job, { n: 1 }, { maxAgeMs: 1 });
    await waitFor('the deadline to pass on the database clock', async () => (await t.sql.query(`SELECT expires_at < now() AS past FROM "${t.schema}".jobs_all WHERE id = $1`, [id])).rows[0].past);
    await ns.start();
    await state(ns, id, 'expired');
    expect(ran).toBe(false);
    expect((await ns.getJob(id)).reason).toContain('not started before its deadline');
  });

  it('expires pending jobs of a queue nobody works, by maintenance', async () => {
    const job = defineJob({ kind: 'orphan-intent', payload, queue: 'nobody', run: async () => undefined });
    const ns = t.client({ jobs: [job] });
    const { id } = await ns.enqueue(job, { n: 1 }, { maxAgeMs: 1 });
    await waitFor('the deadline to pass', async () => (await t.sql.query(`SELECT expires_at < now() AS past FROM "${t.schema}".jobs_all WHERE id = $1`, [id])).rows[0].past);
    const done = await ns.runMaintenance();
    expect(done.expired).toBeGreaterThanOrEqual(1);
    expect((await ns.getJob(id)).state).toBe('expired');
  });
});
