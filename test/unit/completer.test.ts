import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import type { ClaimedRow } from '../../src/db/jobs-run.js';
import { defineJob } from '../../src/index.js';
import { Completer, MARK_DELAY_MS } from '../../src/worker/completer.js';
import { ManualClock } from '../lifecycle/manual-clock.js';
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

/** `n` jobs of a queue of their own, claimed by a process (the claim records no start); the completer runs on a clock moved by hand. */
async function setup(n: number, options: { maxBatch?: number; retryForMs?: number } = {}) {
  const queue = `cmp-${++queues}`;
  const def = defineJob({ kind: queue, queue, payload: z.object({ n: z.number() }), run: () => undefined });
  const o = observedDatabase(t.url, t.schema);
  observed.push(o);
  await t.client({ jobs: [def] }).enqueueMany(
    def,
    Array.from({ length: n }, (_, i) => ({ n: i })),
  );
  const claimed = await o.db.jobs.claim({ queue, kinds: [queue], limit: n, owner: 'unit-completer', leaseMs: 60_000 });
  expect(claimed).toHaveLength(n);
  o.reset();
  const errors: unknown[] = [];
  const clock = new ManualClock();
  const completer = new Completer({ database: o.db, maxBatch: options.maxBatch ?? 1_000, retryForMs: options.retryForMs ?? 5_000, onError: (err) => errors.push(err), clock });
  /** Completes a job whose handler started `ranMs` ago on the completer's clock. */
  const complete = (j: ClaimedRow, ranMs = 0) => completer.complete(j.id, j.lease_token, clock.monotonic() - ranMs);
  return { o, jobs: claimed, completer, errors, clock, complete };
}

async function row(job: ClaimedRow): Promise<{ state: string; started: boolean }> {
  const { rows } = await t.sql.query(`SELECT state::text, started_at IS NOT NULL AS started FROM "${t.schema}".jobs_all WHERE id = $1`, [job.id]);
  return rows[0] as { state: string; started: boolean };
}

/** How long before its finish (or before now, while it runs) the job's recorded start is, in ms. */
async function startedBefore(job: ClaimedRow): Promise<number> {
  const { rows } = await t.sql.query(`SELECT (extract(epoch FROM coalesce(finished_at, now()) - started_at) * 1000)::float8 AS ms FROM "${t.schema}".jobs_all WHERE id = $1`, [job.id]);
  return (rows[0] as { ms: number }).ms;
}

/** The job ids each statement carried as completions ($1). */
const completedIds = (sent: { values: unknown[] }[]) => sent.map((s) => s.values[0]);

describe('Completer: completions', () => {
  it('writes the completions queued in one turn in one statement, fenced by their tokens', async () => {
    const { o, jobs, complete } = await setup(3);
    const applied = await Promise.all(jobs.map((j) => complete(j)));
    expect(applied).toEqual([true, true, true]);
    expect(o.names()).toEqual(['job_complete']);
    expect(completedIds(o.sent)).toEqual([jobs.map((j) => j.id)]);
    for (const j of jobs) expect(await row(j)).toEqual({ state: 'completed', started: true });
  });

  it('gathers the completions that arrive while a write is in flight into the next statement', async () => {
    const { o, jobs, complete } = await setup(3);
    const [a, b, c] = jobs as [ClaimedRow, ClaimedRow, ClaimedRow];
    const release = o.hold('job_complete');
    const first = complete(a);
    await o.sentCount(1);
    // Separate turns of the event loop: without the write in flight each would go alone.
    const second = complete(b);
    await new Promise((r) => setImmediate(r));
    const third = complete(c);
    await new Promise((r) => setImmediate(r));
    expect(o.sent).toHaveLength(1);
    release();
    expect(await Promise.all([first, second, third])).toEqual([true, true, true]);
    expect(completedIds(o.sent)).toEqual([[a.id], [b.id, c.id]]);
  });

  it('splits the queued completions by maxBatch', async () => {
    const { o, jobs, complete } = await setup(3, { maxBatch: 2 });
    await Promise.all(jobs.map((j) => complete(j)));
    expect(completedIds(o.sent)).toEqual([[jobs[0]!.id, jobs[1]!.id], [jobs[2]!.id]]);
  });

  it('resolves false for a completion whose token is stale and applies the others of its statement', async () => {
    const { jobs, complete } = await setup(2);
    const [kept, taken] = jobs as [ClaimedRow, ClaimedRow];
    // An operator (or a rescuer) took the second job: its lease token moved on.
    await t.sql.query(`UPDATE "${t.schema}".jobs SET lease_token = lease_token + 1000 WHERE id = $1`, [taken.id]);
    const applied = await Promise.all([complete(kept), complete(taken)]);
    expect(applied).toEqual([true, false]);
    expect(await row(kept)).toMatchObject({ state: 'completed' });
    expect(await row(taken)).toMatchObject({ state: 'running' });
  });

  it('gives a write that keeps failing up once retryForMs has passed: the completion resolves false and the error is reported', async () => {
    const { o, jobs, errors, complete } = await setup(1, { retryForMs: 0 });
    await o.close(); // every statement now fails: the pool has ended
    await expect(complete(jobs[0]!)).resolves.toBe(false);
    expect(errors.length).toBeGreaterThan(0);
    // Nothing was written: the lease stays until it lapses and the rescuer decides.
    expect(await row(jobs[0]!)).toEqual({ state: 'running', started: false });
  });
});

describe('Completer: the start a completion records', () => {
  it('records the start of a job no mark recorded as its finish minus the run time the worker measured', async () => {
    const { jobs, complete } = await setup(2);
    const [quick, slow] = jobs as [ClaimedRow, ClaimedRow];
    await Promise.all([complete(quick, 0), complete(slow, 5_000)]);
    expect(await startedBefore(quick)).toBe(0);
    expect(await startedBefore(slow)).toBeCloseTo(5_000, 3);
  });
});

describe('Completer: start marks', () => {
  it(`carries the marks of handlers that have run ${MARK_DELAY_MS} ms in the next completion, and leaves younger ones`, async () => {
    const { o, jobs, completer, complete, clock } = await setup(4);
    const [first, done, older, young] = jobs as [ClaimedRow, ClaimedRow, ClaimedRow, ClaimedRow];
    completer.markStarted(older.id, older.lease_token);
    const release = o.hold('job_complete');
    const inFlight = complete(first);
    await o.sentCount(1);
    // The older mark falls due while a completion is in flight: its timer leaves it to the next write.
    await clock.advance(MARK_DELAY_MS);
    completer.markStarted(young.id, young.lease_token);
    const next = complete(done);
    release();
    expect(await Promise.all([inFlight, next])).toEqual([true, true]);
    expect(o.names()).toEqual(['job_complete', 'job_complete_marked']);
    expect(o.sent[1]!.values.slice(3)).toEqual([[older.id], [older.lease_token], [MARK_DELAY_MS]]);
    expect(await row(older)).toEqual({ state: 'running', started: true });
    expect(await row(young)).toEqual({ state: 'running', started: false });
    // The young one goes alone once it is due.
    await clock.advance(MARK_DELAY_MS);
    await waitFor('the young mark to be written', async () => (await row(young)).started);
    expect(o.names()).toEqual(['job_complete', 'job_complete_marked', 'job_mark_started']);
  });

  it('writes a mark whose delay ran out while a completion was in flight once that write is done, when no completion follows', async () => {
    const { o, jobs, completer, complete, clock } = await setup(2);
    const [done, started] = jobs as [ClaimedRow, ClaimedRow];
    completer.markStarted(started.id, started.lease_token);
    const release = o.hold('job_complete');
    const completion = complete(done);
    await o.sentCount(1);
    await clock.advance(MARK_DELAY_MS); // fires during the write: left to the write after it
    release();
    await expect(completion).resolves.toBe(true);
    await clock.advance(0); // the timer the write re-armed, already due
    await waitFor('the start mark to be written after the completion', async () => (await row(started)).started);
    expect(o.names()).toEqual(['job_complete', 'job_mark_started']);
    expect(await row(started)).toEqual({ state: 'running', started: true });
  });

  it('dates a mark carried by a completion that was retried back to its start, not to the age it had at the first try', async () => {
    const { o, jobs, completer, complete, clock } = await setup(3);
    const [first, done, started] = jobs as [ClaimedRow, ClaimedRow, ClaimedRow];
    completer.markStarted(started.id, started.lease_token);
    const release = o.hold('job_complete');
    const inFlight = complete(first);
    await o.sentCount(1);
    await clock.advance(MARK_DELAY_MS); // due during the write: left to the next one
    o.fail('job_complete_marked');
    const next = complete(done);
    release();
    await expect(inFlight).resolves.toBe(true);
    await o.sentCount(2);
    // The retry waits 100 ms (the completer's clock): the handler has then run twice the delay.
    await waitFor('the retry to be waiting', () => clock.pending > 0);
    await clock.advance(100);
    await expect(next).resolves.toBe(true);
    expect(o.names()).toEqual(['job_complete', 'job_complete_marked', 'job_complete_marked']);
    expect(o.sent[2]!.values.slice(3)).toEqual([[started.id], [started.lease_token], [MARK_DELAY_MS + 100]]);
    expect(await startedBefore(started)).toBeGreaterThanOrEqual(MARK_DELAY_MS + 100);
  });

  it('drops the mark of a job that completes itself: its completion records the start', async () => {
    const { o, jobs, completer, complete, clock } = await setup(1);
    const job = jobs[0]!;
    completer.markStarted(job.id, job.lease_token);
    await expect(complete(job, 40)).resolves.toBe(true);
    await clock.advance(MARK_DELAY_MS * 2);
    await completer.drain();
    expect(o.names()).toEqual(['job_complete']);
    expect(await row(job)).toEqual({ state: 'completed', started: true });
  });

  it(`writes a mark that no completion carries alone, once its handler has run ${MARK_DELAY_MS} ms, dated back to its start`, async () => {
    const { o, jobs, completer, clock } = await setup(1);
    const job = jobs[0]!;
    completer.markStarted(job.id, job.lease_token);
    await clock.advance(MARK_DELAY_MS - 1);
    expect(o.sent).toHaveLength(0);
    await clock.advance(1);
    await waitFor('the start mark to be written', async () => (await row(job)).started);
    expect(o.names()).toEqual(['job_mark_started']);
    expect(o.sent[0]!.values[2]).toEqual([MARK_DELAY_MS]);
    expect(await row(job)).toEqual({ state: 'running', started: true });
    expect(await startedBefore(job)).toBeGreaterThanOrEqual(MARK_DELAY_MS);
  });

  it('writes the marks that fall due together in one statement, and a later one when it falls due', async () => {
    const { o, jobs, completer, clock } = await setup(3);
    const [a, b, c] = jobs as [ClaimedRow, ClaimedRow, ClaimedRow];
    completer.markStarted(a.id, a.lease_token);
    completer.markStarted(b.id, b.lease_token);
    await clock.advance(50);
    completer.markStarted(c.id, c.lease_token);
    await clock.advance(MARK_DELAY_MS - 50);
    await waitFor('the first two marks to be written', async () => (await row(b)).started);
    expect(o.sent.map((x) => x.values[0])).toEqual([[a.id, b.id]]);
    expect(await row(c)).toMatchObject({ started: false });
    await clock.advance(50);
    await waitFor('the third mark to be written', async () => (await row(c)).started);
    expect(o.sent.map((x) => x.values[0])).toEqual([[a.id, b.id], [c.id]]);
  });

  it('writes the marks still waiting when drained (shutdown), without waiting for their delay', async () => {
    const { o, jobs, completer } = await setup(1);
    completer.markStarted(jobs[0]!.id, jobs[0]!.lease_token);
    // The clock never moves: only drain() can write the mark.
    await completer.drain();
    expect(o.names()).toEqual(['job_mark_started']);
    expect(await row(jobs[0]!)).toMatchObject({ started: true });
  });
});
