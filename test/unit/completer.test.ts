import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { ClaimedRow } from '../../src/db/jobs-run.js';
import { defineJob } from '../../src/index.js';
import { Completer } from '../../src/worker/completer.js';
import { useTestDatabase } from '../support/db.js';
import { observedDatabase } from '../support/observed-database.js';
import { waitFor } from '../support/wait.js';

// The worker's batched completer against the real database: which statement carries which
// completions and start marks, and what each leaves in the jobs table. The statements are only
// observed (and, where a test needs a write in flight, held back) on their way to PostgreSQL.

const t = useTestDatabase('unit_cmp');
t.migrateBeforeAll();

let queues = 0;
const observed: ReturnType<typeof observedDatabase>[] = [];

afterEach(async () => {
  vi.useRealTimers();
  await Promise.all(observed.splice(0).map((o) => o.close()));
});

/** `n` jobs of a queue of their own, claimed by a process that started none of them (they wait for slots, as held jobs do). */
async function setup(n: number, options: { maxBatch?: number; retryForMs?: number } = {}) {
  const queue = `cmp-${++queues}`;
  const def = defineJob({ kind: queue, queue, payload: z.object({ n: z.number() }), run: () => undefined });
  const o = observedDatabase(t.url, t.schema);
  observed.push(o);
  await t.client({ jobs: [def] }).enqueueMany(
    def,
    Array.from({ length: n }, (_, i) => ({ n: i })),
  );
  const claimed = await o.db.jobs.claim({ queue, kinds: [queue], limit: n, startNow: 0, owner: 'unit-completer', leaseMs: 60_000 });
  expect(claimed).toHaveLength(n);
  o.reset();
  const errors: unknown[] = [];
  const completer = new Completer({ database: o.db, maxBatch: options.maxBatch ?? 1_000, retryForMs: options.retryForMs ?? 5_000, onError: (err) => errors.push(err) });
  return { o, jobs: claimed, completer, errors };
}

async function row(job: ClaimedRow): Promise<{ state: string; started: boolean }> {
  const { rows } = await t.sql.query(`SELECT state::text, started_at IS NOT NULL AS started FROM "${t.schema}".jobs_all WHERE id = $1`, [job.id]);
  return rows[0] as { state: string; started: boolean };
}

/** The job ids each statement carried as completions ($1). */
const completedIds = (sent: { values: unknown[] }[]) => sent.map((s) => s.values[0]);

describe('Completer: completions', () => {
  it('writes the completions queued in one turn in one statement, fenced by their tokens', async () => {
    const { o, jobs, completer } = await setup(3);
    const applied = await Promise.all(jobs.map((j) => completer.complete(j.id, j.lease_token)));
    expect(applied).toEqual([true, true, true]);
    expect(o.names()).toEqual(['job_complete']);
    expect(completedIds(o.sent)).toEqual([jobs.map((j) => j.id)]);
    for (const j of jobs) expect(await row(j)).toEqual({ state: 'completed', started: true });
  });

  it('gathers the completions that arrive while a write is in flight into the next statement', async () => {
    const { o, jobs, completer } = await setup(3);
    const [a, b, c] = jobs as [ClaimedRow, ClaimedRow, ClaimedRow];
    const release = o.hold('job_complete');
    const first = completer.complete(a.id, a.lease_token);
    await o.sentCount(1);
    // Separate turns of the event loop: without the write in flight each would go alone.
    const second = completer.complete(b.id, b.lease_token);
    await new Promise((r) => setImmediate(r));
    const third = completer.complete(c.id, c.lease_token);
    await new Promise((r) => setImmediate(r));
    expect(o.sent).toHaveLength(1);
    release();
    expect(await Promise.all([first, second, third])).toEqual([true, true, true]);
    expect(completedIds(o.sent)).toEqual([[a.id], [b.id, c.id]]);
  });

  it('splits the queued completions by maxBatch', async () => {
    const { o, jobs, completer } = await setup(3, { maxBatch: 2 });
    await Promise.all(jobs.map((j) => completer.complete(j.id, j.lease_token)));
    expect(completedIds(o.sent)).toEqual([[jobs[0]!.id, jobs[1]!.id], [jobs[2]!.id]]);
  });

  it('resolves false for a completion whose token is stale and applies the others of its statement', async () => {
    const { jobs, completer } = await setup(2);
    const [kept, taken] = jobs as [ClaimedRow, ClaimedRow];
    // An operator (or a rescuer) took the second job: its lease token moved on.
    await t.sql.query(`UPDATE "${t.schema}".jobs SET lease_token = lease_token + 1000 WHERE id = $1`, [taken.id]);
    const applied = await Promise.all([completer.complete(kept.id, kept.lease_token), completer.complete(taken.id, taken.lease_token)]);
    expect(applied).toEqual([true, false]);
    expect(await row(kept)).toMatchObject({ state: 'completed' });
    expect(await row(taken)).toMatchObject({ state: 'running' });
  });

  it('gives a write that keeps failing up once retryForMs has passed: the completion resolves false and the error is reported', async () => {
    const { o, jobs, completer, errors } = await setup(1, { retryForMs: 0 });
    await o.close(); // every statement now fails: the pool has ended
    await expect(completer.complete(jobs[0]!.id, jobs[0]!.lease_token)).resolves.toBe(false);
    expect(errors.length).toBeGreaterThan(0);
    // Nothing was written: the lease stays until it lapses and the rescuer decides.
    expect(await row(jobs[0]!)).toEqual({ state: 'running', started: false });
  });
});

describe('Completer: start marks of held jobs', () => {
  it('carries the start marks in the next completion (one statement), and leaves nothing to write alone', async () => {
    const { o, jobs, completer } = await setup(2);
    const [done, started] = jobs as [ClaimedRow, ClaimedRow];
    completer.markStarted(started.id, started.lease_token);
    await expect(completer.complete(done.id, done.lease_token)).resolves.toBe(true);
    expect(o.names()).toEqual(['job_complete_marked']);
    expect(await row(done)).toEqual({ state: 'completed', started: true });
    expect(await row(started)).toEqual({ state: 'running', started: true });
    await completer.drain();
    expect(o.names()).toEqual(['job_complete_marked']);
  });

  it('drops the mark of a job that completes itself: its completion records the start', async () => {
    const { o, jobs, completer } = await setup(1);
    const job = jobs[0]!;
    completer.markStarted(job.id, job.lease_token);
    await expect(completer.complete(job.id, job.lease_token)).resolves.toBe(true);
    await completer.drain();
    expect(o.names()).toEqual(['job_complete']);
    expect(await row(job)).toEqual({ state: 'completed', started: true });
  });

  it('writes a mark that no completion carries alone, once 100 ms have passed on the clock', async () => {
    const { o, jobs, completer } = await setup(1);
    const job = jobs[0]!;
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    completer.markStarted(job.id, job.lease_token);
    vi.advanceTimersByTime(99);
    await new Promise((r) => setImmediate(r));
    expect(o.sent).toHaveLength(0);
    vi.advanceTimersByTime(1);
    vi.useRealTimers();
    await waitFor('the start mark to be written', async () => (await row(job)).started);
    expect(o.names()).toEqual(['job_mark_started']);
    expect(await row(job)).toEqual({ state: 'running', started: true });
  });

  // A mark made while a completion was in flight: its timer fired during the write and left it to
  // the write after — which, with no completion to come, never came; the job kept started_at null.
  it('writes a mark whose delay ran out while a completion was in flight, once that write is done', async () => {
    const { o, jobs, completer } = await setup(2);
    const [done, started] = jobs as [ClaimedRow, ClaimedRow];
    const release = o.hold('job_complete');
    const completion = completer.complete(done.id, done.lease_token);
    await o.sentCount(1);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    completer.markStarted(started.id, started.lease_token);
    vi.advanceTimersByTime(100);
    vi.useRealTimers();
    release();
    await expect(completion).resolves.toBe(true);
    await waitFor('the start mark to be written after the completion', async () => (await row(started)).started);
    expect(o.names()).toEqual(['job_complete', 'job_mark_started']);
  });

  it('writes every mark made within the delay in one statement', async () => {
    const { o, jobs, completer } = await setup(3);
    for (const j of jobs) completer.markStarted(j.id, j.lease_token);
    await waitFor('the start marks to be written', async () => (await Promise.all(jobs.map(row))).every((r) => r.started));
    expect(o.names()).toEqual(['job_mark_started']);
    expect(o.sent[0]!.values[0]).toEqual(jobs.map((j) => j.id));
  });

  it('writes the marks still waiting when drained (shutdown), without waiting for the delay', async () => {
    const { o, jobs, completer } = await setup(1);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    completer.markStarted(jobs[0]!.id, jobs[0]!.lease_token);
    vi.useRealTimers();
    // The fake clock never moves: only drain() can write the mark.
    await completer.drain();
    expect(o.names()).toEqual(['job_mark_started']);
    expect(await row(jobs[0]!)).toMatchObject({ started: true });
  });
});
