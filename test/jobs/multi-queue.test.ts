import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });

async function states(kind: string): Promise<Record<string, number>> {
  const r = await t.sql.query(`SELECT state::text, count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind = $1 GROUP BY 1`, [kind]);
  return Object.fromEntries(r.rows.map((x: { state: string; n: number }) => [x.state, x.n]));
}

describe('one process, several queues, one slot pool', () => {
  // Issue 11, bug 1: the first queue's fetcher took every slot for its (empty) claim, gave them
  // back, and nothing woke the other fetchers: they waited for a finished job that never came.
  it('runs the jobs of every queue when the first queue is empty and no queue has its own limit', async () => {
    const mk = (q: string) => defineJob({ kind: `mq-${q}`, payload, queue: `mq-${q}`, run: () => undefined });
    const [a, b, c] = [mk('a'), mk('b'), mk('c')];
    const ns = t.client({ jobs: [a, b, c], concurrency: 2, pollIntervalMs: 200 });
    await ns.enqueueMany(
      b,
      Array.from({ length: 5 }, (_, n) => ({ n })),
    );
    await ns.enqueueMany(
      c,
      Array.from({ length: 5 }, (_, n) => ({ n })),
    );
    await ns.start();
    expect(ns.workedQueues).toEqual(['mq-a', 'mq-b', 'mq-c']);
    await waitFor('every job of queues b and c to complete', async () => (await states('mq-b')).completed === 5 && (await states('mq-c')).completed === 5, { timeoutMs: 30_000 });
  });

  // A queue with a deep backlog and prefetch must not take every freed slot: another queue's
  // jobs start while the first still has work (a fair share of the process's slots).
  it('a busy queue with prefetch does not starve another queue of the same process', async () => {
    let busyRuns = 0;
    const busy = defineJob({
      kind: 'mq-busy',
      payload,
      queue: 'mq-busy',
      // Short, real work: the queue keeps every slot busy and its prefetch full for a while.
      run: () => new Promise<void>((resolve) => setTimeout(() => (busyRuns++, resolve()), 2)),
    });
    const other = defineJob({ kind: 'mq-other', payload, queue: 'mq-other', run: () => undefined });
    const ns = t.client({ jobs: [busy, other], concurrency: 4, pollIntervalMs: 100 });
    await ns.enqueueMany(
      busy,
      Array.from({ length: 20_000 }, (_, n) => ({ n })),
    );
    await ns.start();
    await waitFor('the busy queue to run', () => busyRuns > 200);
    await ns.enqueueMany(
      other,
      Array.from({ length: 3 }, (_, n) => ({ n })),
    );
    await waitFor('the other queue to complete its jobs', async () => (await states('mq-other')).completed === 3, { timeoutMs: 60_000 });
    // It did not wait for the backlog: the busy queue still had work when the other finished.
    expect((await states('mq-busy')).available ?? 0).toBeGreaterThan(0);
  });
});

describe('handlers that ignore their abort signal', () => {
  // Issue 11, bug 4: a timed-out handler that never returned kept its slot forever; with
  // concurrency 2, two of them stopped all work while /readyz said ready and running: 0.
  it('give their slot back after the grace period, so other jobs run, and are reported as stuck', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const stubborn = defineJob({ kind: 'stuck-stubborn', payload, queue: 'stuck', timeoutMs: 100, maxAttempts: 1, run: () => gate });
    const normal = defineJob({ kind: 'stuck-normal', payload, queue: 'stuck', run: () => undefined });
    const ns = t.client({ jobs: [stubborn, normal], concurrency: 2, shutdownGraceMs: 2_500 });
    const stuckEvents: string[] = [];
    ns.on((e) => {
      if (e.type === 'job.handler-stuck') stuckEvents.push(e.jobId);
    });
    try {
      const ids = (await ns.enqueueMany(stubborn, [{ n: 1 }, { n: 2 }])).map((r) => r.id);
      await ns.start();
      await waitFor('both stubborn jobs to be discarded by their timeout', async () => (await states('stuck-stubborn')).discarded === 2);
      await ns.enqueueMany(
        normal,
        Array.from({ length: 10 }, (_, n) => ({ n })),
      );
      await waitFor('the other jobs to run although two handlers never returned', async () => (await states('stuck-normal')).completed === 10);
      // One freed slot may run all ten before the other handler's grace period ends: wait for both reports.
      await waitFor('both handlers reported stuck', () => stuckEvents.length === 2);
      expect(stuckEvents.sort()).toEqual([...ids].sort());
      expect(ns.stuckHandlers).toBe(2);
    } finally {
      release();
    }
    await waitFor('the stuck handlers to be counted out once they return', () => ns.stuckHandlers === 0);
  });
});
