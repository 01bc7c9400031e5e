import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, defineQueue } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { limitRunsTable } from './fixtures/limit-jobs.js';
import { maxOverlap, startsInWindow } from './overlap.js';
import { rateStarts } from './runs.js';

const t = useTestDatabase('flow');
t.migrateBeforeAll();

/** A runs table: each run records its start and end on the database clock. */
async function runsTable(): Promise<void> {
  await t.sql.query(`CREATE TABLE IF NOT EXISTS "${t.schema}".runs (job_id bigint, key text, started_at timestamptz, ended_at timestamptz)`);
  await t.sql.query(`TRUNCATE "${t.schema}".runs`);
}

/** A handler that records its run and waits until released (a row in `gate`), so overlaps are real. */
function recordingJob(kind: string, options: Record<string, unknown>, holdMs = 0) {
  return defineJob({
    kind,
    payload: z.object({ key: z.string(), n: z.number() }),
    ...options,
    run: async (p, ctx) => {
      await ctx.db.query({ text: `INSERT INTO "${t.schema}".runs (job_id, key, started_at) VALUES ($1, $2, clock_timestamp())`, values: [ctx.jobId, p.key] });
      if (holdMs > 0) await ctx.db.query({ text: `SELECT pg_sleep($1)`, values: [holdMs / 1000] });
      await ctx.db.query({ text: `UPDATE "${t.schema}".runs SET ended_at = clock_timestamp() WHERE job_id = $1 AND ended_at IS NULL`, values: [ctx.jobId] });
    },
  });
}

async function runs(): Promise<{ key: string; start: number; end: number }[]> {
  const { rows } = await t.sql.query(`SELECT key, extract(epoch FROM started_at) * 1000 AS s, extract(epoch FROM ended_at) * 1000 AS e FROM "${t.schema}".runs`);
  return rows.map((r: { key: string; s: string; e: string }) => ({ key: r.key, start: Number(r.s), end: Number(r.e) }));
}

describe('fleet-wide concurrency limit', () => {
  it('never runs more than the limit at once across two workers, and runs every job', async () => {
    await runsTable();
    const job = recordingJob('limited-global', { concurrency: { limit: 2 } }, 30);
    const a = t.client({ jobs: [job], concurrency: 10 });
    const b = t.client({ jobs: [job], concurrency: 10 });
    await a.enqueueMany(
      job,
      Array.from({ length: 30 }, (_, n) => ({ key: 'k', n })),
    );
    await Promise.all([a.start(), b.start()]);
    await waitFor('every job to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind = 'limited-global' AND state = 'completed'`)).rows[0].n === 30);
    const all = await runs();
    expect(all).toHaveLength(30);
    expect(maxOverlap(all)).toBeLessThanOrEqual(2);
    expect(maxOverlap(all)).toBe(2);
  });

  it('holds per key, and every key progresses', async () => {
    await runsTable();
    const job = recordingJob('limited-key', { concurrency: { limit: 1, key: (p: { key: string }) => p.key } }, 10);
    const a = t.client({ jobs: [job], concurrency: 8 });
    await a.enqueueMany(
      job,
      Array.from({ length: 40 }, (_, n) => ({ key: `k${n % 5}`, n })),
    );
    await a.start();
    await waitFor('every job to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind = 'limited-key' AND state = 'completed'`)).rows[0].n === 40);
    const all = await runs();
    for (let k = 0; k < 5; k++) expect(maxOverlap(all.filter((r) => r.key === `k${k}`))).toBe(1);
    expect(maxOverlap(all)).toBeGreaterThan(1);
  });

  it('holds for a queue, whatever the kind', async () => {
    await runsTable();
    const x = recordingJob('q-x', { queue: 'narrow' }, 20);
    const y = recordingJob('q-y', { queue: 'narrow' }, 20);
    const a = t.client({ jobs: [x, y], concurrency: 10, queueDefinitions: [defineQueue({ name: 'narrow', concurrency: { limit: 3 } })] });
    await a.enqueueMany(
      x,
      Array.from({ length: 10 }, (_, n) => ({ key: 'x', n })),
    );
    await a.enqueueMany(
      y,
      Array.from({ length: 10 }, (_, n) => ({ key: 'y', n })),
    );
    await a.start();
    await waitFor('every job to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE queue = 'narrow' AND state = 'completed'`)).rows[0].n === 20);
    expect(maxOverlap(await runs())).toBeLessThanOrEqual(3);
  });
});

describe('fleet-wide rate limit', () => {
  it('starts at most the limit in any window', async () => {
    await runsTable();
    await t.sql.query(limitRunsTable(t.schema)); // records the starts the rate limit counts
    const job = recordingJob('rated', { rateLimit: { limit: 5, per: 500 } });
    const a = t.client({ jobs: [job], concurrency: 10 });
    await a.enqueueMany(
      job,
      Array.from({ length: 15 }, (_, n) => ({ key: 'r', n })),
    );
    await a.start();
    await waitFor('every job to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind = 'rated' AND state = 'completed'`)).rows[0].n === 15);
    const starts = await rateStarts(t.sql, t.schema, 'kind:rated:r');
    expect(starts).toHaveLength(15);
    expect(startsInWindow(starts, 500)).toBe(5);
  });
});

describe('limited and unlimited kinds in one process', () => {
  // Found by two trials as new users: a process with one limited kind claimed its other queues
  // through the limited claim, which failed on a job of a kind without limits ("cannot extract
  // elements from a scalar"), so none of those queues' jobs ran.
  it('runs the unlimited kinds of its other queues and of the same queue, enqueued by the API and in SQL', async () => {
    const limited = defineJob({ kind: 'mix-limited', payload: z.object({}), queue: 'mix-a', concurrency: { limit: 1 }, run: async () => undefined });
    const sameQueue = defineJob({ kind: 'mix-plain-a', payload: z.object({}), queue: 'mix-a', run: async () => undefined });
    const otherQueue = defineJob({ kind: 'mix-plain-b', payload: z.object({}), queue: 'mix-b', run: async () => undefined });
    const ns = t.client({ jobs: [limited, sameQueue, otherQueue], concurrency: 4 });
    await ns.enqueueMany(limited, [{}, {}, {}]);
    await ns.enqueueMany(sameQueue, [{}, {}, {}]);
    await ns.enqueueMany(otherQueue, [{}, {}, {}]);
    const errors: string[] = [];
    ns.on((e) => {
      if (e.type === 'worker.error') errors.push(e.type);
    });
    await ns.start();
    // Without limit keys: as a schedule or the SQL enqueue() leaves a job (kinds are known once started).
    await t.sql.query(`SELECT "${t.schema}".enqueue('mix-plain-b', '{}'::jsonb, queue => 'mix-b')`);
    await t.sql.query(`SELECT "${t.schema}".enqueue('mix-plain-a', '{}'::jsonb, queue => 'mix-a')`);
    const done = async () => (await ns.listJobs({ state: 'completed', limit: 100 })).filter((j) => j.kind.startsWith('mix-')).length;
    try {
      await waitFor('every job of the three kinds to complete', async () => (await done()) === 11);
      expect(errors).toEqual([]);
    } finally {
      await ns.stop();
    }
  });
});
