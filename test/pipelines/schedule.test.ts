import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePipeline } from '../../src/index.js';
import { drain, tick } from '../../src/testing/index.js';
import { useTestDatabase } from '../support/db.js';
import { tempStore } from './support.js';

const t = useTestDatabase('plsc');
t.migrateBeforeAll();

const DAY_MS = 86_400_000;
const settle = definePipeline({ name: 'nightly', key: z.string().regex(/^\d+$/), store: tempStore().store }).step('settle', async (ctx) => ({ day: Number(ctx.key) }));
const nightly = settle.schedule({
  name: 'nightly-settle',
  cron: '0 0 * * *',
  key: ({ at }) => String(Math.floor(at.getTime() / DAY_MS) - 1),
  catchUp: { all: true, window: '3d' },
});

describe('a schedule that starts a pipeline', () => {
  it('starts the run of the day that ended at 00:00 UTC, and after downtime settles each missed night once, in order', async () => {
    const ns = t.client({ pipelines: [settle], schedules: [nightly] });
    await tick(ns, '2026-02-16T23:00:00Z');
    expect((await tick(ns, '2026-02-17T00:00:00Z')).fired).toMatchObject([{ schedule: 'nightly-settle', late: false }]);
    await drain(ns);
    // Down from just after midnight on the 17th until 00:30 on the 20th: three nights missed.
    const back = await tick(ns, '2026-02-20T00:30:00Z');
    expect(back.fired.map((f) => f.at.toISOString().slice(0, 10))).toEqual(['2026-02-18', '2026-02-19', '2026-02-20']);
    await drain(ns);
    // A starter that runs twice (at-least-once) still starts one run: trigger the last tick by hand.
    await ns.triggerSchedule('nightly-settle', { key: String(Math.floor(Date.parse('2026-02-20T00:00:00Z') / DAY_MS) - 1), by: 'schedule:nightly-settle' });
    await drain(ns);
    const runs = (await ns.pipelines.listRuns({ pipeline: 'nightly' })).reverse();
    expect(runs.map((r) => [r.key, r.state, r.startedBy])).toEqual([
      ['20500', 'succeeded', 'schedule:nightly-settle'],
      ['20501', 'succeeded', 'schedule:nightly-settle'],
      ['20502', 'succeeded', 'schedule:nightly-settle'],
      ['20503', 'succeeded', 'schedule:nightly-settle'],
    ]);
  });

  it('discards a starter whose key the pipeline refuses, instead of retrying it', async () => {
    const bad = settle.schedule({ name: 'bad-key', every: '1d', key: () => 'not-a-number' });
    const ns = t.client({ pipelines: [settle], schedules: [bad] });
    await ns.triggerSchedule('bad-key');
    const r = await drain(ns);
    expect(r.jobs.map((j) => [j.kind, j.status])).toEqual([['pipeline:nightly', 'discarded']]);
    expect(r.jobs[0]!.job.reason).toMatch(/key/);
  });
});
