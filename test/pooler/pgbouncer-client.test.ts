import pg from 'pg';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, defineSchedule } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { describeWithPgBouncer, usePgBouncer } from '../support/pgbouncer.js';
import { waitFor } from '../support/wait.js';

// The library through PgBouncer in transaction mode with DEFAULT options: every client below is a
// new set of connections to the pooler, which hands each transaction whichever server connection
// is free — where the statements named by earlier clients already exist (42P05), or not (26000).
const t = useTestDatabase('pool');
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });

describeWithPgBouncer('through PgBouncer in transaction mode, with default options', () => {
  const b = usePgBouncer(() => t.url);
  const client = (options: Parameters<typeof t.client>[0] = {}) => t.client({ databaseUrl: b.bouncer().url, ...options });
  const count = async (kind: string) => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind = $1`, [kind])).rows[0].n as number;

  it('clients one after another enqueue single and batched jobs', async () => {
    const job = defineJob({ kind: 'single-and-batch', payload, run: async () => undefined });
    for (let round = 0; round < 4; round++) {
      const c = client({ jobs: [job] });
      await c.enqueue(job, { n: round });
      await c.enqueue(job, { n: round }, { dedupeKey: `key-${round}` });
      await c.enqueueMany(job, [{ n: round }, { n: round }, { n: round }]);
      await c.stop();
    }
    expect(await count('single-and-batch')).toBe(4 * 5);
  });

  it('an enqueue with { db } joins the caller’s transaction: committed with it, rolled back with it', async () => {
    const job = defineJob({ kind: 'outbox', payload, run: async () => undefined });
    const c = client({ jobs: [job] });
    // Earlier statements of this client (and of the test before) are named on the pool.
    await c.enqueue(job, { n: 0 });
    await t.sql.query(`CREATE TABLE IF NOT EXISTS "${t.schema}".orders (id int PRIMARY KEY)`);
    const app = new pg.Pool({ connectionString: b.bouncer().url, max: 2 });
    try {
      for (const [id, commit] of [
        [1, true],
        [2, false],
        [3, true],
      ] as const) {
        const tx = await app.connect();
        try {
          await tx.query('BEGIN');
          await tx.query(`INSERT INTO "${t.schema}".orders (id) VALUES ($1)`, [id]);
          await c.enqueue(job, { n: id }, { db: tx });
          await c.enqueueMany(job, [{ n: id }, { n: id }], { db: tx });
          await tx.query(commit ? 'COMMIT' : 'ROLLBACK');
        } finally {
          tx.release();
        }
      }
    } finally {
      await app.end();
    }
    const payloads = (await t.sql.query(`SELECT (payload->>'n')::int AS n FROM "${t.schema}".jobs_all WHERE kind = 'outbox' ORDER BY id`)).rows.map((r) => r.n);
    expect(payloads).toEqual([0, 1, 1, 1, 3, 3, 3]);
    const orders = (await t.sql.query(`SELECT id FROM "${t.schema}".orders ORDER BY id`)).rows.map((r) => r.id);
    expect(orders).toEqual([1, 3]);
  });

  it('a worker drains jobs of several kinds and queues, each exactly once', async () => {
    const ran = new Map<string, number>();
    const note =
      (kind: string) =>
      async ({ n }: { n: number }) =>
        void ran.set(`${kind}:${n}`, (ran.get(`${kind}:${n}`) ?? 0) + 1);
    const jobs = [
      defineJob({ kind: 'drain-a', payload, queue: 'drain-q1', run: note('drain-a') }),
      defineJob({ kind: 'drain-b', payload, queue: 'drain-q2', run: note('drain-b') }),
      defineJob({ kind: 'drain-c', payload, queue: 'drain-q2', run: note('drain-c'), maxAttempts: 3 }),
    ];
    const producer = client({ jobs });
    for (const job of jobs)
      await producer.enqueueMany(
        job,
        Array.from({ length: 20 }, (_, n) => ({ n })),
      );
    await producer.stop();
    const worker = client({ jobs, concurrency: 4, pollIntervalMs: 100 });
    const errors: string[] = [];
    worker.on((e) => {
      if (e.type === 'worker.error') errors.push(`${e.where}: ${e.error}`);
    });
    await worker.start();
    await waitFor('every job to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind LIKE 'drain-%' AND state = 'completed'`)).rows[0].n === 60);
    expect(ran.size).toBe(60);
    expect([...ran.values()].every((times) => times === 1)).toBe(true);
    expect(errors).toEqual([]);
  });

  it('a schedule ticks and its jobs run', async () => {
    const ticks: number[] = [];
    const job = defineJob({ kind: 'ticked', payload: z.object({ at: z.number() }), run: async ({ at }) => void ticks.push(at) });
    const schedule = defineSchedule({ name: 'every-second', every: '1s', job, payload: ({ at }) => ({ at: at.getTime() }) });
    const c = client({ jobs: [job], schedules: [schedule], pollIntervalMs: 100 });
    const failed: string[] = [];
    c.on((e) => {
      if (e.type === 'schedule.failed' || e.type === 'worker.error') failed.push(e.type);
    });
    await c.start();
    await waitFor('two ticks to run', () => new Set(ticks).size >= 2);
    const fired = await c.scheduleTicks('every-second');
    expect(fired.filter((tick) => tick.outcome === 'enqueued').length).toBeGreaterThanOrEqual(2);
    expect(failed).toEqual([]);
  });

  it('admin listings work: jobs, one job, stats, queues, schedules, processes, audit', async () => {
    const job = defineJob({ kind: 'listed', payload, queue: 'listed-q', run: async () => undefined });
    const schedule = defineSchedule({ name: 'listed-nightly', cron: '0 3 * * *', job, payload: () => ({ n: 0 }) });
    const c = client({ jobs: [job], schedules: [schedule], concurrency: 1 });
    const { id } = await c.enqueue(job, { n: 7 }, { delayMs: 3_600_000 });
    await c.start();
    // Repeated, so that each listing runs on more than one connection of the pool.
    for (let i = 0; i < 3; i++) {
      expect((await c.listJobs({ kind: 'listed' })).map((j) => j.id)).toEqual([id]);
      expect(await c.getJob(id)).toMatchObject({ id, kind: 'listed', queue: 'listed-q', state: 'available' });
      expect((await c.stats()).some((s) => s.queue === 'listed-q')).toBe(true);
      await c.pauseQueue('listed-q', { reason: 'pooler test' });
      expect((await c.listQueues()).find((q) => q.name === 'listed-q')).toMatchObject({ paused: true });
      await c.resumeQueue('listed-q');
      expect((await c.listSchedules()).map((s) => s.name)).toContain('listed-nightly');
      expect((await c.listProcesses()).some((p) => p.id === c.processId)).toBe(true);
      expect((await c.listAudit({ target: 'queue:listed-q' })).length).toBeGreaterThanOrEqual(2 * (i + 1));
    }
  });
});
