import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, NightshiftError } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase('dstats');
t.migrateBeforeAll();

const payload = z.object({ orderId: z.string(), fail: z.boolean().optional(), customer: z.object({ id: z.string() }).optional() });
const order = defineJob({
  kind: 'order.ship',
  payload,
  queue: 'orders',
  maxAttempts: 1,
  run: async (p) => {
    if (p.fail) throw new Error('provider down');
  },
});

async function codeOf(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(NightshiftError);
  return (err as NightshiftError).code;
}

describe('job aggregates for the charts', () => {
  it('counts completions, failures and discards per minute from the workers, merged across writers by maintenance', async () => {
    const ns = t.client({ jobs: [order], concurrency: 4 });
    await ns.enqueueMany(order, [{ orderId: 'a' }, { orderId: 'b' }, { orderId: 'c', fail: true }]);
    await ns.start();
    await waitFor('three finished', async () => (await ns.countJobs({ state: ['completed', 'discarded'] })) === 3);
    // Stopping flushes what the recorder counted.
    await ns.stop();
    const reader = t.client();
    const points = await reader.jobStats({ range: 'hour' });
    const sum = (f: (p: (typeof points)[number]) => number) => points.reduce((a, p) => a + f(p), 0);
    expect(sum((p) => p.completed)).toBe(2);
    expect(sum((p) => p.failed)).toBe(1);
    expect(sum((p) => p.discarded)).toBe(1);
    expect(sum((p) => p.started)).toBe(3);
    expect(points.every((p) => p.waitMsAvg === null || p.waitMsAvg >= 0)).toBe(true);
    const perQueue = await reader.queueActivity({ minutes: 60 });
    expect(perQueue.find((q) => q.queue === 'orders')).toMatchObject({ completed: 2, failed: 1, discarded: 1 });

    // A second writer's rows for the same minute; compaction merges them into one row, same sums.
    const { rows: before } = await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".job_stats WHERE writer <> ''`);
    expect(before[0].n).toBeGreaterThan(0);
    await t.sql.query(`UPDATE "${t.schema}".job_stats SET bucket = bucket - interval '10 minutes'`);
    await t.sql.query(`INSERT INTO "${t.schema}".job_stats (width_s, bucket, queue, kind, writer, completed) SELECT 60, bucket, queue, kind, 'other', 5 FROM "${t.schema}".job_stats`);
    const { JOB_STATS_KEEP } = await import('../../src/maintenance/maintenance-service.js');
    // @ts-expect-error -- the database is internal; the maintenance leader runs this every minute.
    await reader.database.stats.maintain(JOB_STATS_KEEP);
    const { rows } = await t.sql.query(`SELECT writer, sum(completed)::int AS c FROM "${t.schema}".job_stats WHERE width_s = 60 GROUP BY writer`);
    expect(rows).toEqual([{ writer: '', c: 2 + 5 * before[0].n }]);
  });

  it('refuses a range it does not know', async () => {
    const ns = t.client();
    expect(await codeOf(ns.jobStats({ range: 'year' as never }))).toBe('NS_OPTIONS_INVALID');
    expect(await codeOf(ns.queueActivity({ minutes: 0 }))).toBe('NS_OPTIONS_INVALID');
  });
});

describe('searching jobs', () => {
  it('finds a job by a payload field, nested fields too, and counts with a cap', async () => {
    const ns = t.client({ jobs: [order] });
    const made = await ns.enqueueMany(order, [{ orderId: 'o-1', customer: { id: 'c-9' } }, { orderId: 'o-2' }, { orderId: 'o-3' }, { orderId: 'o-3' }]);
    const found = await ns.searchJobs({ payload: { orderId: 'o-1' } });
    expect(found.map((j) => j.id)).toEqual([made[0]!.id]);
    expect((await ns.searchJobs({ payload: { customer: { id: 'c-9' } } })).map((j) => j.id)).toEqual([made[0]!.id]);
    expect(await ns.countJobs({ payload: { orderId: 'o-3' } })).toBe(2);
    // Capped: at most cap + 1 rows are counted.
    expect(await ns.countJobs({ queue: 'orders', cap: 2 })).toBe(3);
    // The window: only the newest jobs are searched.
    expect(await ns.searchJobs({ payload: { orderId: 'o-1' }, window: 1 })).toEqual([]);
    const later = new Date(Date.now() + 60_000);
    expect(await ns.searchJobs({ payload: { orderId: 'o-1' }, createdAfter: later })).toEqual([]);
  });

  it('finds finished jobs in the history (migration 0008) as well as live ones', async () => {
    const ns = t.client({ jobs: [order] });
    await ns.enqueue(order, { orderId: 'live-1' }, { runAt: new Date(Date.now() + 3_600_000) });
    const moved = await ns.enqueue(order, { orderId: 'moved-1' });
    await ns.start();
    await waitFor('the due job to complete', async () => (await ns.getJob(moved.id)).state === 'completed');
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_history WHERE id = $1`, [moved.id])).rows[0].n).toBe(1);
    const found = await ns.searchJobs({ payload: { orderId: 'moved-1' } });
    expect(found.map((j) => [j.id, j.state])).toEqual([[moved.id, 'completed']]);
    expect(await ns.countJobs({ payload: { orderId: 'live-1' } })).toBe(1);
  });

  it('refuses a malformed search', async () => {
    const ns = t.client();
    expect(await codeOf(ns.searchJobs({ payload: 'x' as never }))).toBe('NS_OPTIONS_INVALID');
    expect(await codeOf(ns.searchJobs({ createdAfter: new Date('nope') }))).toBe('NS_OPTIONS_INVALID');
    expect(await codeOf(ns.countJobs({ cap: 0 }))).toBe('NS_OPTIONS_INVALID');
  });
});
