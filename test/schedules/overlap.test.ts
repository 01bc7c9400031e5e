import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, type JobDefinition } from '../../src/index.js';
import { defineSchedule, type Overlap } from '../../src/schedules/define-schedule.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { useTickers } from './support.js';

const t = useTestDatabase('sched');
t.migrateBeforeAll();
const replica = useTickers(t);

/** A job kind whose runs the test can hold and release, counting how many run at once. */
function heldJob(kind: string, holdAll: boolean) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const state = { running: 0, maxRunning: 0, started: [] as string[], finished: 0 };
  const job = defineJob({
    kind,
    payload: z.object({ at: z.string() }),
    run: async ({ at }, ctx) => {
      state.running++;
      state.maxRunning = Math.max(state.maxRunning, state.running);
      state.started.push(at);
      try {
        if (holdAll || state.started.length === 1) {
          await Promise.race([gate, new Promise((r) => ctx.signal.addEventListener('abort', r))]);
        }
      } finally {
        state.running--;
        state.finished++;
      }
    },
  });
  return { job, state, release: () => release() };
}

function everySecond(name: string, job: JobDefinition, overlap: Overlap) {
  return defineSchedule({
    name,
    every: '1s',
    job: job as JobDefinition<z.ZodObject<{ at: z.ZodString }>>,
    payload: ({ at }) => ({ at: at.toISOString() }),
    overlap,
    catchUp: { all: true, window: '1h' },
  });
}

async function ticks(name: string) {
  const { rows } = await t.sql.query<{ tick_at: Date; outcome: string; job_id: string | null }>(`SELECT tick_at, outcome, job_id::text FROM "${t.schema}".schedule_ticks WHERE schedule = $1 ORDER BY tick_at`, [
    name,
  ]);
  return rows;
}

describe('overlap while the previous tick’s job runs', () => {
  it("'skip' records the ticks as skipped-overlap and fires again once the job has finished", async () => {
    const { job, state, release } = heldJob('held-skip', false);
    const { ticker } = replica([everySecond('skip', job, 'skip')], [job]);
    const worker = t.client({ jobs: [job], concurrency: 5 });
    await worker.start();
    await ticker.start();
    await waitFor('the first job to run', () => state.started.length === 1);
    await waitFor('two skipped ticks', async () => (await ticks('skip')).filter((r) => r.outcome === 'skipped-overlap').length >= 2);
    release();
    await waitFor('a second job to run', () => state.started.length >= 2);
    await ticker.stop();
    const rows = await ticks('skip');
    const firstEnqueued = rows.findIndex((r) => r.outcome === 'enqueued');
    const secondEnqueued = rows.findIndex((r, i) => i > firstEnqueued && r.outcome === 'enqueued');
    expect(rows.slice(firstEnqueued + 1, secondEnqueued).every((r) => r.outcome === 'skipped-overlap')).toBe(true);
    expect(secondEnqueued - firstEnqueued - 1).toBeGreaterThanOrEqual(2);
    expect(state.maxRunning).toBe(1);
    expect(rows.filter((r) => r.outcome === 'skipped-overlap').every((r) => r.job_id === null)).toBe(true);
  });

  it("'queue' keeps every tick and runs their jobs one after another, in tick order", async () => {
    const { job, state, release } = heldJob('held-queue', false);
    const { ticker } = replica([everySecond('queue', job, 'queue')], [job]);
    const worker = t.client({ jobs: [job], concurrency: 5 });
    await worker.start();
    await ticker.start();
    await waitFor('the first job to run', () => state.started.length === 1);
    await waitFor('two queued ticks', async () => (await ticks('queue')).filter((r) => r.outcome === 'queued').length >= 2);
    release();
    await waitFor('the queued ticks to run', () => state.finished >= 4);
    await ticker.stop();
    await waitFor('jobs in flight to finish', () => state.running === 0);
    expect(state.maxRunning).toBe(1);
    // Jobs ran in tick order, and each ran for a recorded tick with its job.
    expect([...state.started].sort()).toEqual(state.started);
    const rows = await ticks('queue');
    const enqueued = rows.filter((r) => r.outcome === 'enqueued');
    expect(enqueued.map((r) => r.tick_at.toISOString()).slice(0, state.started.length)).toEqual(state.started);
    expect(enqueued.every((r) => r.job_id !== null)).toBe(true);
    expect(rows.some((r) => r.outcome.startsWith('skipped'))).toBe(false);
    // Nothing was lost: every tick is either enqueued or still queued.
    expect(rows.every((r) => r.outcome === 'enqueued' || r.outcome === 'queued')).toBe(true);
  });

  it("'allow' enqueues every tick at once; jobs run side by side", async () => {
    const { job, state, release } = heldJob('held-allow', true);
    const { ticker } = replica([everySecond('allow', job, 'allow')], [job]);
    const worker = t.client({ jobs: [job], concurrency: 5 });
    await worker.start();
    await ticker.start();
    await waitFor('two jobs running at once', () => state.running >= 2);
    await ticker.stop();
    release();
    await waitFor('the jobs to finish', () => state.running === 0);
    const rows = await ticks('allow');
    expect(rows.every((r) => r.outcome === 'enqueued' && r.job_id !== null)).toBe(true);
    expect(state.maxRunning).toBeGreaterThanOrEqual(2);
  });
});
