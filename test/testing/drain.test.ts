import { defineJob, type DrainLimitError } from 'nightshift';
import { createTestSchema, drain, type TestSchema } from 'nightshift/testing';
// drain runs every due job inline, including what those jobs enqueue, with the worker's own claim.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';

const order: string[] = [];
const step = defineJob({
  kind: 'step',
  payload: z.object({ name: z.string(), next: z.array(z.string()).default([]) }),
  run: async ({ name, next }, ctx) => {
    order.push(name);
    if (next.length > 0) await ctx.enqueue(step, { name: next[0]!, next: next.slice(1) });
  },
});
const mail = defineJob({ kind: 'mail', payload: z.object({ to: z.string() }), queue: 'mail', run: async ({ to }) => void order.push(`mail:${to}`) });
const flaky = defineJob({
  kind: 'flaky',
  payload: z.object({}),
  backoff: { initialMs: 60_000, jitter: 0 },
  run: async () => {
    throw new Error('boom');
  },
});
const forever = defineJob({ kind: 'forever', payload: z.object({ n: z.number() }), run: async ({ n }, ctx) => void (await ctx.enqueue(forever, { n: n + 1 })) });

let t: TestSchema;
beforeAll(async () => {
  t = await createTestSchema({ databaseUrl: inject('databaseUrl'), options: { jobs: [step, mail, flaky, forever] }, prefix: 'dr' });
});
afterAll(() => t?.drop());
afterEach(async () => {
  order.length = 0;
  await t.ns.cancelJobs({ state: 'available' });
});

describe('drain', () => {
  it('runs the jobs that jobs enqueue until none is due, and reports each run', async () => {
    await t.ns.enqueue(step, { name: 'a', next: ['b', 'c'] });
    const r = await drain(t.ns);
    expect(order).toEqual(['a', 'b', 'c']);
    expect(r.jobs.map((j) => [j.kind, j.status, (j.job.payload as { name: string }).name])).toEqual([
      ['step', 'completed', 'a'],
      ['step', 'completed', 'b'],
      ['step', 'completed', 'c'],
    ]);
    expect(r.counts.completed).toBe(3);
    expect(await drain(t.ns)).toMatchObject({ jobs: [] });
  });

  it('keeps to the queues and kinds asked for, and leaves the rest waiting', async () => {
    await t.ns.enqueue(mail, { to: 'x' });
    await t.ns.enqueue(step, { name: 'solo' });
    expect((await drain(t.ns, { queues: ['mail'] })).jobs.map((j) => j.kind)).toEqual(['mail']);
    expect(order).toEqual(['mail:x']);
    expect((await drain(t.ns, { kinds: ['step'] })).jobs.map((j) => j.kind)).toEqual(['step']);
  });

  it('claims as the worker does: priority first within a queue; paused queues and future jobs wait', async () => {
    await t.ns.enqueue(step, { name: 'low' }, { priority: 5 });
    await t.ns.enqueue(step, { name: 'high' }, { priority: -5 });
    await t.ns.enqueue(step, { name: 'later' }, { delayMs: 3_600_000 });
    await t.ns.enqueue(mail, { to: 'paused' });
    await t.ns.pauseQueue('mail');
    try {
      await drain(t.ns);
    } finally {
      await t.ns.resumeQueue('mail');
    }
    expect(order).toEqual(['high', 'low']);
  });

  it('ends with a retry scheduled for later; a job past its deadline expires unrun', async () => {
    await t.ns.enqueue(flaky, {});
    // A deadline that passes before anyone claims the job (moved into the past on the database clock:
    // an enqueue with a deadline already past is refused as a job that could never run).
    const stale = await t.ns.enqueue(step, { name: 'stale' }, { expiresAt: new Date(Date.now() + 3_600_000) });
    await t.ns.db.query({ text: `UPDATE "${t.ns.schema}".jobs SET expires_at = now() - interval '1 second' WHERE id = $1`, values: [stale.id] });
    const r = await drain(t.ns);
    expect(r.jobs.map((j) => j.status).sort()).toEqual(['expired', 'retry']);
    const retried = r.jobs.find((j) => j.status === 'retry')!;
    expect(String(retried.error)).toContain('boom');
    expect(order).toEqual([]);
  });

  it('throws NS_DRAIN_LIMIT after maxJobs runs when jobs keep coming, with what ran', async () => {
    await t.ns.enqueue(forever, { n: 0 });
    const err = (await drain(t.ns, { maxJobs: 7 }).catch((e: unknown) => e)) as DrainLimitError;
    expect(err.code).toBe('NS_DRAIN_LIMIT');
    expect(err.ran.map((j) => j.kind)).toEqual(Array(7).fill('forever'));
    expect(err.message).toContain('forever × 7');
    await expect(drain(t.ns, { maxJobs: 0 })).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID' });
  });
});
