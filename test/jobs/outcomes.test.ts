import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Database } from '../../src/db/database.js';
import type { ClaimedRow } from '../../src/db/jobs-run.js';
import { createPool, type PoolHandle } from '../../src/db/pool.js';
import { JobTimeoutError } from '../../src/errors.js';
import { defineJob, type NightshiftEvent } from '../../src/index.js';
import { systemClock } from '../../src/lifecycle/clock.js';
import { EventBus } from '../../src/telemetry/events.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { ActiveJobs } from '../../src/worker/active-jobs.js';
import { Completer } from '../../src/worker/completer.js';
import { Outcomes } from '../../src/worker/outcomes.js';
import { useTestDatabase } from '../support/db.js';

// Issue 12: one writer decides a claimed job's end (src/worker/outcomes.ts); the first cause
// decides, and every write is fenced by the claim's lease token.

const t = useTestDatabase('outcomes');
t.migrateBeforeAll();

const job = defineJob({ kind: 'oc', payload: z.object({ n: z.number() }), maxAttempts: 3, run: () => undefined });
const pools: PoolHandle[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

async function setUp() {
  const pool = createPool({ connectionString: t.url, max: 2, applicationName: 'outcomes-test' });
  pools.push(pool);
  const db = new Database(pool, t.schema);
  const events = new EventBus();
  const seen: NightshiftEvent[] = [];
  events.on((e) => seen.push(e));
  const active = new ActiveJobs();
  const errors: unknown[] = [];
  const completer = new Completer({ database: db, maxBatch: 100, retryForMs: 1_000, onError: (e) => errors.push(e) });
  const outcomes = new Outcomes({
    database: db,
    active,
    completer,
    events,
    logger: silentLogger(),
    owner: 'outcomes-test',
    clock: systemClock,
    onError: (_where, err) => errors.push(err),
  });
  const ns = t.client({ jobs: [job] });
  /** Enqueues `n` jobs of a queue of the test's own and claims them, the first `startNow` recorded as started. */
  const claim = async (queue: string, n: number, startNow = n): Promise<ClaimedRow[]> => {
    await ns.enqueueMany(
      job,
      Array.from({ length: n }, (_, i) => ({ n: i })),
      { queue },
    );
    const rows = await db.jobs.claim({ queue, kinds: ['oc'], limit: n, owner: 'outcomes-test', leaseMs: 60_000 });
    const started = rows.slice(0, startNow);
    if (started.length > 0) await db.jobs.start({ ids: started.map((r) => r.id), tokens: started.map((r) => r.lease_token) });
    return rows;
  };
  const stored = (id: string) => ns.getJob(id);
  return { db, events, seen, active, errors, outcomes, completer, claim, stored };
}

describe('Outcomes: the one writer of a claimed job’s end', () => {
  it('the first cause decides: a timeout is written, and the handler returning afterwards changes nothing', async () => {
    const s = await setUp();
    const [row] = await s.claim('oc-timeout', 1);
    const j = s.active.add(row!);
    const err = new JobTimeoutError(50);
    expect(await s.outcomes.finish(j, { cause: 'timeout', def: job, error: err })).toBe('retry');
    expect(j.controller.signal.aborted).toBe(true);
    expect(j.controller.signal.reason).toBe(err);
    expect(await s.outcomes.finish(j, { cause: 'completed' })).toBe('already-decided');
    await s.completer.drain();
    const stored = await s.stored(row!.id);
    expect(stored).toMatchObject({ state: 'available', attempt: 1 });
    expect(stored.errors.map((e) => e.kind)).toEqual(['timeout']);
    expect(s.active.size).toBe(0);
  });

  it('a write fenced by a stale token changes nothing and is reported as refused', async () => {
    const s = await setUp();
    const [row] = await s.claim('oc-stale', 1);
    const j = s.active.add(row!);
    // The lease was taken meanwhile (rescued and claimed again by another worker): a new token.
    await t.sql.query(`UPDATE "${t.schema}".jobs SET state = 'available', lease_token = NULL WHERE id = $1`, [row!.id]);
    const [again] = await s.db.jobs.claim({ queue: 'oc-stale', kinds: ['oc'], limit: 1, owner: 'other', leaseMs: 60_000 });
    expect(again!.lease_token).not.toBe(row!.lease_token);
    expect(await s.outcomes.finish(j, { cause: 'completed' })).toBe('refused');
    expect(await s.stored(row!.id)).toMatchObject({ state: 'running', leaseOwner: 'other', leaseToken: again!.lease_token });
    expect(s.seen.filter((e) => e.type === 'job.refused')).toMatchObject([{ jobId: row!.id, operation: 'complete', token: row!.lease_token }]);
    expect(s.active.size).toBe(0);
  });

  it('a cancel or a lost lease writes nothing (another statement wrote the state), aborts the signal and lets the job go', async () => {
    const s = await setUp();
    const [a, b] = await s.claim('oc-lost', 2);
    const ja = s.active.add(a!);
    const jb = s.active.add(b!);
    expect(await s.outcomes.finish(ja, { cause: 'cancelled' })).toBe('not-written');
    expect(await s.outcomes.finish(jb, { cause: 'lease-lost', why: 'heartbeat found the lease taken' })).toBe('not-written');
    expect(ja.controller.signal.reason).toMatchObject({ code: 'NS_JOB_CANCELLED' });
    expect(jb.controller.signal.reason).toMatchObject({ code: 'NS_LEASE_LOST' });
    expect((await s.stored(a!.id)).state).toBe('running');
    expect(s.seen.filter((e) => e.type === 'job.lease-lost').map((e) => (e as { why: string }).why)).toEqual(['cancelled', 'heartbeat found the lease taken']);
    expect(s.active.size).toBe(0);
    // A late result of either handler is ignored.
    expect(await s.outcomes.finish(ja, { cause: 'completed' })).toBe('already-decided');
  });

  it('the shutdown hand-back leaves out decided jobs, gives an unstarted job its attempt back, and counts a started one', async () => {
    const s = await setUp();
    const [started, held, done] = await s.claim('oc-handback', 3, 3);
    const js = s.active.add(started!);
    js.started = true;
    const jh = s.active.add(held!);
    const jd = s.active.add(done!);
    expect(await s.outcomes.finish(jd, { cause: 'completed' })).toBe('completed');
    await s.outcomes.handBack([js, jh, jd]);
    expect(await s.stored(started!.id)).toMatchObject({ state: 'available', attempt: 1 });
    expect(await s.stored(held!.id)).toMatchObject({ state: 'available', attempt: 0 });
    expect((await s.stored(done!.id)).state).toBe('completed');
    expect(
      s.seen
        .filter((e) => e.type === 'job.released')
        .map((e) => (e as { jobId: string }).jobId)
        .sort(),
    ).toEqual([started!.id, held!.id].sort());
    expect(js.end).toBe('handed-back');
    expect(jd.end).toBe('completed');
    expect(s.active.size).toBe(0);
  });

  it('a held job past its deadline is expired fenced by its token, its attempt given back', async () => {
    const s = await setUp();
    const [row] = await s.claim('oc-expire', 1, 0);
    const j = s.active.add(row!);
    expect(await s.outcomes.finish(j, { cause: 'expired' })).toBe('expired');
    expect(await s.stored(row!.id)).toMatchObject({ state: 'expired', attempt: 0 });
    expect(s.seen.filter((e) => e.type === 'job.expired')).toHaveLength(1);
    expect(s.errors).toEqual([]);
  });
});
