import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

// Issue 13: a process serving many queues polled each one on its own, ~200 statements per poll
// interval for 200 idle queues. Now one statement per interval (queue_due) tells which queues have
// a due job, and only those claim. The statements are counted on the real pool the client runs on
// (every statement it sends goes through pool.query or a client checked out of it).

const t = useTestDatabase('idle_probe');
t.migrateBeforeAll();

const QUEUES = 100;
const payload = z.object({ n: z.number() });
const kinds = Array.from({ length: QUEUES }, (_, i) => defineJob({ kind: `ip-${i}`, queue: `ip-q${i}`, payload, run: () => undefined }));

interface Sent {
  name: string;
  values: unknown[];
}

const pools: pg.Pool[] = [];
// The clients are stopped after each test (useTestDatabase); their pools are ours to end.
afterAll(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
});

/**
 * A pg pool whose statements are recorded as they are sent, by their name without the schema's
 * tag (`plain` for unnamed ones). Every statement of the pool goes through one of its clients'
 * `query` (pool.query checks a client out and calls it), so each is recorded once.
 */
function countingPool() {
  const pool = new pg.Pool({ connectionString: t.url, max: 10 });
  pools.push(pool);
  const sent: Sent[] = [];
  pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...a: unknown[]) => unknown;
    (client as unknown as { query: (...a: unknown[]) => unknown }).query = (...a: unknown[]) => {
      const [config, values] = a;
      const c: { name?: string; values?: unknown[] } = typeof config === 'string' ? {} : (config as { name?: string; values?: unknown[] });
      const vals = Array.isArray(values) ? values : (c.values ?? []);
      sent.push({ name: c.name?.replace(/^ns_[0-9a-f]{8}_/, '') ?? 'plain', values: vals });
      return query(...a);
    };
  });
  return { pool, sent, since: (n: number) => sent.slice(n) };
}

/** Options of a worker that sends nothing periodic but its polls (no maintenance, no registry). */
const quiet = { maintenance: false, registerProcess: false } as const;

describe('the idle poll of a process serving many queues', () => {
  it('sends one statement per poll interval for 100 idle queues, and no claim', async () => {
    const c = countingPool();
    const ns = t.client({ databaseUrl: undefined, pool: c.pool, jobs: kinds, concurrency: 10, pollIntervalMs: 100, ...quiet });
    await ns.start();
    expect(ns.workedQueues).toHaveLength(QUEUES);
    // Each queue claims once at start (and asks when its next job is due), then waits for the probe.
    await waitFor('every queue to have claimed once', () => new Set(c.sent.filter((s) => s.name === 'job_claim').map((s) => s.values[0])).size === QUEUES);
    await waitFor('a probe of all the queues', () => c.sent.some((s) => s.name === 'queue_due' && (s.values[0] as string[]).length === QUEUES));
    const from = c.sent.length;
    await waitFor('ten more idle polls', () => c.since(from).filter((s) => s.name === 'queue_due').length >= 10);
    const window = c.since(from);
    const probes = window.filter((s) => s.name === 'queue_due');
    // Every statement of the idle window is a probe, and each probe asks about every queue.
    expect(window.filter((s) => s.name !== 'queue_due')).toEqual([]);
    for (const p of probes) expect([...(p.values[0] as string[])].sort()).toEqual(kinds.map((k) => k.queue).sort());
    await ns.stop();
  });

  it('finds a job that no notification announced, and only that queue claims', async () => {
    const c = countingPool();
    const ns = t.client({ databaseUrl: undefined, pool: c.pool, jobs: kinds, concurrency: 10, pollIntervalMs: 100, listen: false, ...quiet });
    await ns.start();
    await waitFor('a probe of all the queues', () => c.sent.some((s) => s.name === 'queue_due' && (s.values[0] as string[]).length === QUEUES));
    const from = c.sent.length;
    const [job] = await ns.enqueueMany(kinds[57]!, [{ n: 1 }]);
    await waitFor('the job to complete', async () => (await ns.getJob(job!.id))?.state === 'completed');
    const claims = c.since(from).filter((s) => s.name === 'job_claim');
    expect(claims.length).toBeGreaterThan(0);
    expect(new Set(claims.map((s) => s.values[0]))).toEqual(new Set(['ip-q57']));
    await ns.stop();
  });

  it('leaves a paused queue out until it is resumed', async () => {
    const c = countingPool();
    const ns = t.client({ databaseUrl: undefined, pool: c.pool, jobs: kinds, concurrency: 10, pollIntervalMs: 100, listen: false, ...quiet });
    await ns.pauseQueue('ip-q3');
    await ns.start();
    await waitFor('every queue to have claimed once', () => new Set(c.sent.filter((s) => s.name === 'job_claim').map((s) => s.values[0])).size === QUEUES);
    const [job] = await ns.enqueueMany(kinds[3]!, [{ n: 1 }]);
    const from = c.sent.length;
    await waitFor('five idle polls after the enqueue', () => c.since(from).filter((s) => s.name === 'queue_due').length >= 5);
    expect(c.since(from).filter((s) => s.name === 'job_claim' && s.values[0] === 'ip-q3')).toEqual([]);
    expect((await ns.getJob(job!.id))?.state).toBe('available');
    await ns.resumeQueue('ip-q3');
    await waitFor('the job to run once its queue is resumed', async () => (await ns.getJob(job!.id))?.state === 'completed');
    await ns.stop();
  });
});

describe('the idle poll and a queue whose limit is full', () => {
  it('does not wake the queue at every probe while its due jobs wait for the limit, and runs them once it frees', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const limited = defineJob({ kind: 'ip-limited', queue: 'ip-limited', payload, concurrency: { limit: 1 }, run: (p) => (p.n === 0 ? gate : undefined) });
    const c = countingPool();
    // Other queues whose jobs keep the probe at its shortest interval (each ran out of work just now).
    const ns = t.client({ databaseUrl: undefined, pool: c.pool, jobs: [limited, ...kinds.slice(0, 5)], concurrency: 10, pollIntervalMs: 2_000, ...quiet });
    await ns.start();
    const [first] = await ns.enqueueMany(limited, [{ n: 0 }]);
    await waitFor('the first job to hold the limit', async () => (await ns.getJob(first!.id))?.state === 'running');
    const rest = await ns.enqueueMany(
      limited,
      Array.from({ length: 3 }, (_, i) => ({ n: i + 1 })),
    );
    await waitFor('a claim that the limit held back', () => c.sent.some((s) => s.name === 'job_claim_limited'));
    const from = c.sent.length;
    // Busy neighbours: every one of them has work and runs out of it, again and again.
    for (let round = 0; round < 5; round++) {
      await ns.enqueueMany(kinds[round]!, [{ n: round }]);
      await waitFor('a probe after the neighbour ran out of work', () => c.since(from).filter((s) => s.name === 'queue_due').length > round);
    }
    const window = c.since(from);
    const probes = window.filter((s) => s.name === 'queue_due');
    const limitedClaims = window.filter((s) => s.name === 'job_claim_limited' && s.values[0] === 'ip-limited');
    // The limited queue is left out of the probes after a claim its limit held back.
    expect(probes.filter((p) => (p.values[0] as string[]).includes('ip-limited')).length).toBeLessThan(probes.length);
    expect(limitedClaims.length).toBeLessThan(probes.length);
    for (const j of rest) expect((await ns.getJob(j.id))?.state).toBe('available');
    release();
    await waitFor('every limited job to run once the limit frees', async () => {
      for (const j of rest) if ((await ns.getJob(j.id))?.state !== 'completed') return false;
      return true;
    });
    await ns.stop();
  });
});
