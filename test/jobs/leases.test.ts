import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, type NightshiftEvent } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });
const q = () => `"${t.schema}"`;

async function row(id: string) {
  return (await t.sql.query(`SELECT state, lease_token::text, lease_owner, lease_expires_at, attempt, errors, reason, started_at FROM ${q()}.jobs_all WHERE id = $1`, [id])).rows[0];
}

/** Makes the job's lease look expired on the database clock, as if its worker stopped heartbeating long ago. */
async function expireLease(id: string) {
  await t.sql.query(`UPDATE ${q()}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
}

describe('leases and fencing tokens', () => {
  it('never runs one job in two workers at once, and runs each job once', async () => {
    const running = new Set<number>();
    const runs = new Map<number, number>();
    let overlaps = 0;
    const job = defineJob({
      kind: 'race',
      payload,
      queue: 'race',
      run: async ({ n }) => {
        if (running.has(n)) overlaps++;
        running.add(n);
        runs.set(n, (runs.get(n) ?? 0) + 1);
        await new Promise((r) => setImmediate(r));
        running.delete(n);
      },
    });
    const a = t.client({ jobs: [job], concurrency: 10, owner: 'worker-a' });
    const b = t.client({ jobs: [job], concurrency: 10, owner: 'worker-b' });
    await a.enqueueMany(
      job,
      Array.from({ length: 1_000 }, (_, n) => ({ n })),
    );
    await Promise.all([a.start(), b.start()]);
    await waitFor('all jobs to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'race' AND state = 'completed'`)).rows[0].n === 1_000);
    expect(overlaps).toBe(0);
    expect([...runs.values()].every((c) => c === 1)).toBe(true);
    expect(runs.size).toBe(1_000);
    const owners = await t.sql.query(`SELECT count(DISTINCT lease_owner)::int AS n, count(DISTINCT lease_token)::int AS tokens FROM ${q()}.jobs_all WHERE kind = 'race'`);
    expect(owners.rows[0].tokens).toBe(1_000);
  });

  it('refuses a stale worker completion after a rescue; the job ends as the rescuer left it', async () => {
    let releaseA!: () => void;
    const gateA = new Promise<void>((r) => (releaseA = r));
    let aAborted: unknown;
    const handlerA = defineJob({
      kind: 'fenced',
      payload,
      queue: 'fenced',
      run: async (_p, ctx) => {
        ctx.signal.addEventListener('abort', () => (aAborted = ctx.signal.reason));
        await gateA;
      },
    });
    const bRuns: string[] = [];
    const handlerB = defineJob({ kind: 'fenced', payload, queue: 'fenced', run: async (_p, ctx) => void bRuns.push(ctx.leaseToken) });
    // Worker A renews its leases only every 20 minutes, so an expired lease stays expired, and its
    // one slot stays taken by the stalled handler, so it cannot re-claim the job itself.
    const a = t.client({ jobs: [handlerA], owner: 'stale-a', concurrency: 1, leaseMs: 3_600_000, heartbeatMs: 1_200_000, maintenance: false });
    const events: NightshiftEvent[] = [];
    a.on((e) => events.push(e));
    const { id } = await a.enqueue(handlerA, { n: 1 });
    await a.start();
    // Running, and its start recorded (the worker records it once the handler has run 100 ms).
    await waitFor('A to run the job', async () => (await row(id)).started_at !== null);
    const tokenA = (await row(id)).lease_token;
    await expireLease(id);
    const b = t.client({ jobs: [handlerB], owner: 'rescuer-b', maintenance: false });
    expect((await b.runMaintenance()).rescued).toBe(1);
    const rescued = await row(id);
    expect(rescued).toMatchObject({ state: 'available', lease_token: tokenA, attempt: 1 });
    expect(rescued.errors[0]).toMatchObject({ kind: 'lease-expired', attempt: 1 });
    await b.start();
    await waitFor('B to complete the job', async () => (await row(id)).state === 'completed');
    const done = await row(id);
    expect(BigInt(done.lease_token)).toBeGreaterThan(BigInt(tokenA));
    expect(bRuns).toEqual([done.lease_token]);
    // A wakes up and completes: refused by the token, logged as an event, nothing changes.
    releaseA();
    await waitFor('A to report the refused write', () => events.some((e) => e.type === 'job.refused'));
    expect(events.find((e) => e.type === 'job.refused')).toMatchObject({ jobId: id, operation: 'complete', token: tokenA });
    expect(await row(id)).toMatchObject({ state: 'completed', lease_token: done.lease_token, attempt: 2 });
    expect(aAborted).toBeUndefined();
  });

  it('keeps a long job leased by heartbeats: it is never rescued and completes on its first attempt', async () => {
    let renewals = 0;
    const job = defineJob({
      kind: 'long',
      payload,
      queue: 'long',
      run: async (_p, ctx) => {
        // Run until the lease has been renewed several times past its original expiry.
        const first = (await row(ctx.jobId)).lease_expires_at as Date;
        let last = first;
        await waitFor('three heartbeats', async () => {
          const now = (await row(ctx.jobId)).lease_expires_at as Date;
          if (now.getTime() > last.getTime()) {
            renewals++;
            last = now;
          }
          return renewals >= 3;
        });
      },
    });
    const ns = t.client({ jobs: [job], leaseMs: 1_000, heartbeatMs: 200, maintenanceIntervalMs: 100 });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    const { id } = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await waitFor('the long job to complete', async () => (await row(id)).state === 'completed');
    const r = await row(id);
    expect(r.attempt).toBe(1);
    expect(r.errors).toBeNull();
    expect(events.filter((e) => e.type === 'job.rescued')).toEqual([]);
  });

  it('rescues by delivery: at-least-once back to available, at-most-once abandoned, exhausted discarded', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const alo = defineJob({ kind: 'alo', payload, queue: 'rescue', run: async () => gate });
    const amo = defineJob({ kind: 'amo', payload, queue: 'rescue', delivery: 'at-most-once', run: async () => gate });
    const last = defineJob({ kind: 'last', payload, queue: 'rescue', maxAttempts: 1, run: async () => gate });
    const holder = t.client({ jobs: [alo, amo, last], concurrency: 3, leaseMs: 3_600_000, heartbeatMs: 1_200_000, maintenance: false });
    const ids = [(await holder.enqueue(alo, { n: 1 })).id, (await holder.enqueue(amo, { n: 2 })).id, (await holder.enqueue(last, { n: 3 })).id];
    await holder.start();
    // Running, their starts recorded (the worker records a start once the handler has run 100 ms;
    // a lease lost before that gives the attempt back: test/jobs/unstarted-rescue.test.ts).
    await waitFor('all three to run', async () => (await Promise.all(ids.map(row))).every((r) => r.state === 'running' && r.started_at !== null));
    for (const id of ids) await expireLease(id);
    const rescuer = t.client({ maintenance: false });
    expect((await rescuer.runMaintenance()).rescued).toBe(3);
    const [a, b, c] = await Promise.all(ids.map(row));
    expect(a).toMatchObject({ state: 'available', attempt: 1, lease_owner: null });
    expect(b.state).toBe('abandoned');
    expect(b.reason).toContain('at-most-once');
    expect(c.state).toBe('discarded');
    expect(c.reason).toContain('attempts exhausted');
    // The abandoned job is never run again by itself.
    release();
    await holder.stop();
    const again = t.client({ jobs: [amo], maintenance: false });
    await again.start();
    await again.runMaintenance();
    expect((await row(ids[1]!)).state).toBe('abandoned');
  });

  it('aborts a job whose lease was lost, found by the heartbeat', async () => {
    let reason: unknown;
    const job = defineJob({
      kind: 'lost',
      payload,
      queue: 'lost',
      run: (_p, ctx) => new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => ((reason = ctx.signal.reason), resolve()))),
    });
    const ns = t.client({ jobs: [job], leaseMs: 5_000, heartbeatMs: 100, maintenance: false });
    const { id } = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await waitFor('the job to run', async () => (await row(id)).state === 'running');
    // Someone else takes the job (a rescue after a long pause would do the same).
    await t.sql.query(`UPDATE ${q()}.jobs SET state = 'available', lease_token = nextval('${t.schema}.lease_token_seq'), run_at = now() + interval '1 hour' WHERE id = $1`, [id]);
    await waitFor('the handler to be aborted', () => reason !== undefined);
    expect(reason).toMatchObject({ code: 'NS_LEASE_LOST' });
    expect((await row(id)).state).toBe('available');
  });
});
