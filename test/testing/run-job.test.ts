import { defineJob, LeaseLostError, type JobContext, type NightshiftEvent } from 'nightshift';
import { assertEnqueued, createTestSchema, runJob, type TestSchema } from 'nightshift/testing';
// runJob gives the handler the context a worker gives it: every JobContext member with its real
// behaviour, and the outcome as the worker records it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';
import { waitFor } from '../support/wait.js';

const echo = defineJob({ kind: 'echo', payload: z.object({ n: z.number() }), run: async ({ n }) => ({ doubled: n * 2 }) });
const follow = defineJob({ kind: 'follow', payload: z.object({ from: z.string() }), queue: 'next', run: async () => undefined });

let t: TestSchema;
const sql = async (text: string, values: unknown[] = []) => (await t.ns.db.query({ text, values })).rows as Record<string, unknown>[];
beforeAll(async () => {
  t = await createTestSchema({ databaseUrl: inject('databaseUrl'), options: { jobs: [echo, follow], heartbeatMs: 200, leaseMs: 1_000 }, prefix: 'rj' });
  await t.ns.db.query({ text: `CREATE TABLE "${t.schema}".seen (job_id bigint, token bigint)` });
});
afterAll(() => t?.drop());

describe('runJob', () => {
  it('gives the handler a real job row, lease, pool, logger and enqueue', async () => {
    let seen: { jobId: string; kind: string; queue: string; attempt: number; maxAttempts: number; leaseToken: string } | undefined;
    const probe = defineJob({
      kind: 'probe',
      payload: z.object({}),
      maxAttempts: 4,
      run: async (_p, ctx: JobContext) => {
        seen = { jobId: ctx.jobId, kind: ctx.kind, queue: ctx.queue, attempt: ctx.attempt, maxAttempts: ctx.maxAttempts, leaseToken: ctx.leaseToken };
        // The pool: a write in the handler's own statement, visible once the job is done.
        await ctx.db.query({ text: `INSERT INTO "${t.schema}".seen VALUES ($1, $2)`, values: [ctx.jobId, ctx.leaseToken] });
        await ctx.heartbeat();
        ctx.log.info({ step: 1 }, 'probing');
        await ctx.enqueue(follow, { from: ctx.jobId });
        return 'done';
      },
    });
    // A definition the client does not define runs too.
    const out = await runJob(t.ns, probe, {});
    expect(out).toMatchObject({ status: 'completed', result: 'done', kind: 'probe', attempt: 1 });
    expect(seen).toEqual({ jobId: out.jobId, kind: 'probe', queue: 'default', attempt: 1, maxAttempts: 4, leaseToken: expect.any(String) });
    // The lease token is the one the job row was claimed with, and the row records the run.
    expect(await sql(`SELECT token::text FROM "${t.schema}".seen WHERE job_id = $1`, [out.jobId])).toEqual([{ token: seen!.leaseToken }]);
    expect(out.job).toMatchObject({ id: out.jobId, state: 'completed', attempt: 1, leaseToken: seen!.leaseToken });
    expect((await t.ns.jobLogs(out.jobId)).map((l) => l.msg)).toEqual(['probing']);
    await assertEnqueued(t.ns, follow, { from: out.jobId }, { count: 1 });
  });

  it('emits the worker events on the client', async () => {
    const events: NightshiftEvent['type'][] = [];
    const off = t.ns.on((e) => events.push(e.type));
    try {
      await runJob(t.ns, echo, { n: 2 });
    } finally {
      off();
    }
    expect(events).toEqual(expect.arrayContaining(['job.enqueued', 'job.started', 'job.completed']));
  });

  it('renews the lease while a long handler runs, and its heartbeat fails once the lease is taken', async () => {
    let heartbeatError: unknown;
    let aborted = false;
    const slow = defineJob({
      kind: 'slow',
      payload: z.object({}),
      run: async (_p, ctx) => {
        // Longer than the 1 s lease: only the renewals keep it.
        const expiry = async () => (await sql(`SELECT lease_expires_at FROM "${t.schema}".jobs_all WHERE id = $1`, [ctx.jobId]))[0]!.lease_expires_at as Date;
        const first = await expiry();
        await waitFor('a heartbeat to extend the lease', async () => (await expiry()).getTime() > first.getTime(), { everyMs: 50 });
        // An operator takes the job away: the next heartbeat says so and the signal aborts.
        await sql(`UPDATE "${t.schema}".jobs SET lease_token = lease_token + 1000 WHERE id = $1`, [ctx.jobId]);
        heartbeatError = await ctx.heartbeat().catch((e: unknown) => e);
        aborted = ctx.signal.aborted;
        return 'late';
      },
    });
    const out = await runJob(t.ns, slow, {});
    expect(heartbeatError).toBeInstanceOf(LeaseLostError);
    expect(aborted).toBe(true);
    // The late result is refused by the fence: the row stays as the operator left it.
    expect(out).toMatchObject({ status: 'lease-lost', result: 'late', job: { state: 'running' } });
  }, 60_000);

  it('aborts ctx.signal with the reason given, and on timeout records a failed attempt', async () => {
    const untilAborted = (_p: unknown, ctx: JobContext) =>
      new Promise((_resolve, reject) => {
        if (ctx.signal.aborted) reject(ctx.signal.reason);
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason));
      });
    const stoppable = defineJob({ kind: 'stoppable', payload: z.object({}), run: untilAborted });
    const waits = defineJob({ kind: 'waits', payload: z.object({}), timeoutMs: 300, run: untilAborted });
    const controller = new AbortController();
    const pending = runJob(t.ns, stoppable, {}, { signal: controller.signal });
    controller.abort(new Error('test says stop'));
    const stopped = await pending;
    expect(stopped.status).toBe('retry');
    expect(String(stopped.error)).toContain('test says stop');

    const timedOut = await runJob(t.ns, waits, {});
    expect(timedOut.status).toBe('retry');
    expect(timedOut.job.errors.at(-1)).toMatchObject({ kind: 'timeout' });
    expect((timedOut.error as { code?: string }).code).toBe('NS_JOB_TIMEOUT');
  });

  it('runs at-most-once jobs with their start recorded first', async () => {
    const once = defineJob({ kind: 'once', payload: z.object({}), delivery: 'at-most-once', run: async () => 'ran' });
    const out = await runJob(t.ns, once, {});
    expect(out).toMatchObject({ status: 'completed', result: 'ran', job: { delivery: 'at-most-once' } });
    expect(out.job.startedAt).not.toBeNull();
  });

  it('runs by kind name, validates the payload before anything runs, and checks its options', async () => {
    expect(await runJob(t.ns, 'echo', { n: 4 })).toMatchObject({ status: 'completed', result: { doubled: 8 } });
    await expect(runJob(t.ns, echo, { n: 'x' } as never)).rejects.toMatchObject({ code: 'NS_PAYLOAD_INVALID' });
    await expect(runJob(t.ns, 'nope', {})).rejects.toMatchObject({ code: 'NS_UNKNOWN_KIND' });
    await expect(runJob(t.ns, echo, { n: 1 }, { attempt: 0 })).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID' });
  });

  it('runs now, whatever else is due; a job whose deadline is past is refused before anything runs', async () => {
    await t.ns.enqueue(echo, { n: 100 });
    let ran = false;
    const marker = defineJob({ kind: 'marker', payload: z.object({}), run: async () => void (ran = true) });
    expect((await runJob(t.ns, marker, {}, { priority: 1000 })).status).toBe('completed');
    expect(ran).toBe(true);
    ran = false;
    await expect(runJob(t.ns, marker, {}, { expiresAt: new Date(Date.now() - 60_000) })).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID' });
    expect(ran).toBe(false);
  });
});
