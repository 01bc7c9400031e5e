import { defineJob, defineSchedule } from 'nightshift';
import { assertEnqueued, createTestSchema, drain, enqueued, tick, type TestSchema } from 'nightshift/testing';
// tick: the schedule ticker's pass under a clock the test sets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';

const settle = defineJob({ kind: 'settle', payload: z.object({ dayId: z.number() }), run: async () => undefined });
const poll = defineJob({ kind: 'poll', payload: z.object({}), run: async () => undefined });
const DAY = 86_400_000;
const schedules = [
  defineSchedule({ name: 'settle', cron: '0 0 * * *', job: settle, payload: ({ at }) => ({ dayId: Math.floor(at.getTime() / DAY) - 1 }), overlap: 'queue', catchUp: { all: true, window: '3d' } }),
  defineSchedule({ name: 'poll', every: '10m', job: poll, catchUp: 'latest', overlap: 'allow' }),
];

let t: TestSchema;
beforeAll(async () => {
  t = await createTestSchema({ databaseUrl: inject('databaseUrl'), options: { jobs: [settle, poll], schedules }, prefix: 'tick' });
});
afterAll(() => t?.drop());

describe('tick', () => {
  it('starts the clock at the first call, then decides the ticks up to each time given', async () => {
    const first = await tick(t.ns, '2026-02-16T23:55:00Z');
    expect(first.fired).toEqual([]);
    expect(first.nextDueAt).toEqual(new Date('2026-02-17T00:00:00Z'));
    const midnight = await tick(t.ns, new Date('2026-02-17T00:00:00Z'));
    expect(midnight.fired.map((f) => f.schedule).sort()).toEqual(['poll', 'settle']);
    await assertEnqueued(t.ns, settle, { dayId: 20500 }, { count: 1 });
  });

  it("follows each schedule's catch-up and overlap policies after downtime", async () => {
    // Three days and an hour down (the 17 Feb settlement still pending): back at 01:05.
    const r = await tick(t.ns, '2026-02-20T01:05:00Z');
    // settle (queue, all within 3d): the 18th, 19th and 20th are missed but in the window, and wait behind the pending job.
    expect(r.queued.map((q) => q.at.toISOString())).toEqual(['2026-02-18T00:00:00.000Z', '2026-02-19T00:00:00.000Z', '2026-02-20T00:00:00.000Z']);
    // poll (latest): only the most recent missed tick runs; the others are skipped as one entry.
    expect(r.fired).toMatchObject([{ schedule: 'poll', at: new Date('2026-02-20T01:00:00Z'), late: true }]);
    expect(r.skipped).toMatchObject([{ schedule: 'poll', reason: 'catch-up', missed: 3 * 144 + 6 - 1 }]);
    // Each queued tick is released once the previous job finished: drain, tick again at the same time.
    const days: number[] = [];
    for (let i = 0; i < 4; i++) {
      for (const j of (await drain(t.ns, { kinds: [settle] })).jobs) days.push((j.job.payload as { dayId: number }).dayId);
      await tick(t.ns, '2026-02-20T01:05:00Z');
    }
    expect(days).toEqual([20500, 20501, 20502, 20503]);
    expect(await enqueued(t.ns, settle)).toEqual([]);
  });

  it('cannot go back, takes only instants, and names unknown schedules', async () => {
    await expect(tick(t.ns, '2026-02-19T00:00:00Z')).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID', message: expect.stringContaining('cannot go back') });
    await expect(tick(t.ns, '2026-02-21T00:00:00')).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID', message: expect.stringContaining('with a zone') });
    await expect(tick(t.ns, '2026-02-21T00:00:00Z', { schedules: ['setle'] })).rejects.toMatchObject({ code: 'NS_SCHEDULE_NOT_FOUND', message: expect.stringContaining('settle') });
  });

  it('records each tick once in the ticks table: the same time given twice fires nothing the second time', async () => {
    const a = await tick(t.ns, '2026-02-21T00:00:00Z', { schedules: ['poll'] });
    const b = await tick(t.ns, '2026-02-21T00:00:00Z', { schedules: ['poll'] });
    // The latest missed tick (late) and the one on time; the second pass finds both decided.
    expect(a.fired.map((f) => [f.at.toISOString(), f.late])).toEqual([
      ['2026-02-20T23:50:00.000Z', true],
      ['2026-02-21T00:00:00.000Z', false],
    ]);
    expect(b.fired).toHaveLength(0);
    const { rows } = await t.ns.db.query({ text: `SELECT count(*)::int AS n FROM "${t.schema}".schedule_ticks WHERE schedule = 'poll' AND tick_at = '2026-02-21T00:00:00Z'` });
    expect(rows).toEqual([{ n: 1 }]);
  });
});
