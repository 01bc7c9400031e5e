import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { drain } from '../../src/testing/index.js';
import { useTestDatabase } from '../support/db.js';

const t = useTestDatabase('hist');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const DAY = 86_400_000;

const rows = async (table: string, id: string) => (await t.sql.query(`SELECT state::text FROM ${q()}.${table} WHERE id = $1`, [id])).rows.map((r) => r.state as string);
/** The UTC day `days` ago, as the history's partitions name it (YYYYMMDD). */
const dayName = (days: number) => new Date(Date.now() - days * DAY).toISOString().slice(0, 10).replaceAll('-', '');
const partition = async (name: string) => (await t.sql.query(`SELECT to_regclass($1)::text AS r`, [`${t.schema}.${name}`])).rows[0].r as string | null;

describe('finished jobs live in jobs_history (migration 0008)', () => {
  it('a completion moves the row out of jobs in the same statement; every admin read still finds it', async () => {
    const job = defineJob({ kind: 'h-done', payload: z.object({ n: z.number() }), run: async (_p, ctx) => ctx.log.info('ran') });
    const ns = t.client({ jobs: [job] });
    const { id } = await ns.enqueue(job, { n: 1 });
    await drain(ns);
    expect(await rows('jobs', id)).toEqual([]);
    expect(await rows('jobs_history', id)).toEqual(['completed']);
    expect(await rows('jobs_all', id)).toEqual(['completed']);
    const got = await ns.getJob(id);
    expect(got).toMatchObject({ id, state: 'completed', payload: { n: 1 }, attempt: 1 });
    expect(got.startedAt).toBeInstanceOf(Date);
    expect(got.finishedAt).toBeInstanceOf(Date);
    expect((await ns.listJobs({ kind: 'h-done', state: 'completed' })).map((j) => j.id)).toEqual([id]);
    expect((await ns.jobLogs(id)).map((l) => l.msg)).toEqual(['ran']);
  });

  it('a discarded job is moved by maintenance, and a retry brings it back to run again under the same id', async () => {
    let fail = true;
    const job = defineJob({
      kind: 'h-flaky',
      payload: z.object({}),
      maxAttempts: 1,
      run: async () => {
        if (fail) throw new Error('boom');
      },
    });
    const ns = t.client({ jobs: [job] });
    const { id } = await ns.enqueue(job, {});
    await drain(ns);
    expect(await rows('jobs', id)).toEqual(['discarded']);
    const { archived } = await ns.runMaintenance();
    expect(archived).toBeGreaterThanOrEqual(1);
    expect(await rows('jobs', id)).toEqual([]);
    expect(await rows('jobs_history', id)).toEqual(['discarded']);
    expect((await ns.getJob(id)).state).toBe('discarded');
    fail = false;
    expect((await ns.retryJob(id, { actor: 'test', reason: 'fixed' })).state).toBe('available');
    expect(await rows('jobs_history', id)).toEqual([]);
    await drain(ns);
    expect(await rows('jobs_history', id)).toEqual(['completed']);
    expect((await ns.getJob(id)).attempt).toBe(2);
  });

  it("an 'ever' dedupe key holds while its job is in the history, and goes when the job is pruned", async () => {
    const job = defineJob({ kind: 'h-once', payload: z.object({ k: z.string() }), dedupeScope: 'ever', run: async () => undefined });
    const ns = t.client({ jobs: [job], retention: { completed: DAY } });
    const first = await ns.enqueue(job, { k: 'a' }, { dedupeKey: 'a' });
    await drain(ns);
    expect(await rows('jobs_history', first.id)).toEqual(['completed']);
    const again = await ns.enqueue(job, { k: 'a' }, { dedupeKey: 'a' });
    expect(again).toMatchObject({ id: first.id, deduped: true });
    await t.sql.query(`UPDATE ${q()}.jobs_history SET finished_at = now() - interval '3 days' WHERE id = $1`, [first.id]);
    await ns.prune();
    expect(await rows('jobs_all', first.id)).toEqual([]);
    const after = await ns.enqueue(job, { k: 'a' }, { dedupeKey: 'a' });
    expect(after.deduped).toBe(false);
    expect(after.id).not.toBe(first.id);
  });

  it('prunes a whole day by dropping its partition, with its logs; kinds with a retention of their own are spared and pruned at their own age', async () => {
    const plain = defineJob({ kind: 'h-plain', payload: z.object({}), run: async (_p, ctx) => ctx.log.info('plain ran') });
    const kept = defineJob({ kind: 'h-kept', payload: z.object({}), retention: { completed: 5 * DAY }, run: async (_p, ctx) => ctx.log.info('kept ran') });
    const ns = t.client({ jobs: [plain, kept], retention: { completed: DAY } });
    await t.sql.query(`SELECT ${q()}.history_partitions_ensure(6, 3)`);
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await ns.enqueue(plain, {})).id);
    const keptId = (await ns.enqueue(kept, {})).id;
    await drain(ns);
    // Three days ago: that day's partition takes them (moving rows between partitions on update).
    await t.sql.query(`UPDATE ${q()}.jobs_history SET finished_at = date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '3 days' + interval '1 hour' WHERE id = ANY($1::bigint[])`, [
      [...ids, keptId],
    ]);
    const day = `jobs_history_completed_p${dayName(3)}`;
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.${day}`)).rows[0].n).toBe(6);
    const pruned = await ns.prune();
    expect(pruned.completed).toBeGreaterThanOrEqual(5);
    expect(await partition(day)).toBeNull();
    for (const id of ids) expect(await rows('jobs_all', id)).toEqual([]);
    expect(await rows('jobs_history_completed_default', keptId)).toEqual(['completed']);
    expect((await t.sql.query(`SELECT msg FROM ${q()}.job_logs WHERE job_id = ANY($1::bigint[])`, [[...ids, keptId]])).rows.map((r) => r.msg)).toEqual(['kept ran']);
    // Past its own five days, the spared job goes too (row by row, from the default partition).
    await t.sql.query(`UPDATE ${q()}.jobs_history SET finished_at = now() - interval '6 days' WHERE id = $1`, [keptId]);
    await ns.prune();
    expect(await rows('jobs_all', keptId)).toEqual([]);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.job_logs WHERE job_id = $1`, [keptId])).rows[0].n).toBe(0);
  });

  it('keeps a day whose jobs are not all past the retention (at least the retention, at most a day longer)', async () => {
    const job = defineJob({ kind: 'h-young', payload: z.object({}), run: async () => undefined });
    const ns = t.client({ jobs: [job], retention: { completed: DAY } });
    await t.sql.query(`SELECT ${q()}.history_partitions_ensure(2, 1)`);
    const { id } = await ns.enqueue(job, {});
    await drain(ns);
    // Yesterday's partition: its day ends less than a day ago, so it stays, though the job's own
    // finish may be more than a day ago.
    await t.sql.query(`UPDATE ${q()}.jobs_history SET finished_at = date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 day' + interval '1 minute' WHERE id = $1`, [id]);
    await ns.prune();
    expect(await rows('jobs_all', id)).toEqual(['completed']);
    expect(await partition(`jobs_history_completed_p${dayName(1)}`)).not.toBeNull();
  });

  it('refuses a retention it cannot apply before any statement runs, naming the state and the fix', async () => {
    const ns = t.client();
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'resolved',
        (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`,
      );
    expect(await code(ns.prune({ completed: -1 }))).toMatch(/^NS_OPTIONS_INVALID: .*completed: must be a whole number of milliseconds/s);
    expect(await code(ns.prune({ completd: 1 } as never))).toMatch(/^NS_OPTIONS_INVALID: .*completd.*completed/s);
    expect(await code(ns.prune({ completed: '1d' } as never))).toMatch(/^NS_OPTIONS_INVALID/);
    expect(await code(ns.prune({ completed: Number.NaN }))).toMatch(/^NS_OPTIONS_INVALID/);
    expect(await code(ns.prune({ held: 0 } as never))).toMatch(/^NS_OPTIONS_INVALID: .*held/s);
    expect(await code(ns.prune('1d' as never))).toMatch(/^NS_OPTIONS_INVALID: .*must be an object/s);
  });
});
