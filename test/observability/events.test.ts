import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { defineJob, hold, type NightshiftEvent } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

/** The event types one job went through, in order. */
function pathOf(events: NightshiftEvent[], jobId: string): string[] {
  return events.filter((e) => 'jobId' in e && e.jobId === jobId).map((e) => e.type);
}

describe('the event stream, per job path', () => {
  it('success, retry then success, and discard', async () => {
    const ok = defineJob({ kind: 'ev-ok', payload: z.object({}), run: async () => undefined });
    let calls = 0;
    const flaky = defineJob({
      kind: 'ev-flaky',
      payload: z.object({}),
      backoff: () => 0,
      run: async () => {
        if (++calls === 1) throw new Error('x');
      },
    });
    const doomed = defineJob({ kind: 'ev-doomed', payload: z.object({}), maxAttempts: 1, run: async () => Promise.reject(new Error('y')) });
    const ns = t.client({ jobs: [ok, flaky, doomed], pollIntervalMs: 50 });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    const a = (await ns.enqueue(ok, {})).id;
    const b = (await ns.enqueue(flaky, {})).id;
    const c = (await ns.enqueue(doomed, {})).id;
    await ns.start();
    await waitFor('all settled', () => pathOf(events, a).includes('job.completed') && pathOf(events, b).includes('job.completed') && pathOf(events, c).includes('job.discarded'));
    expect(pathOf(events, a)).toEqual(['job.enqueued', 'job.started', 'job.completed']);
    expect(pathOf(events, b)).toEqual(['job.enqueued', 'job.started', 'job.failed', 'job.retried', 'job.started', 'job.completed']);
    expect(pathOf(events, c)).toEqual(['job.enqueued', 'job.started', 'job.failed', 'job.discarded']);
  });

  it('rescue: a lease that expires is rescued, and the job runs again', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let first = true;
    const job = defineJob({
      kind: 'ev-rescue',
      payload: z.object({}),
      run: async () => {
        if (first) {
          first = false;
          await gate;
        }
      },
    });
    const ns = t.client({ jobs: [job], concurrency: 1, prefetch: 0, leaseMs: 3_600_000, heartbeatMs: 1_200_000, maintenance: false });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    const { id } = await ns.enqueue(job, {});
    await ns.start();
    await waitFor('running', () => pathOf(events, id).includes('job.started'));
    await t.sql.query(`UPDATE "${t.schema}".jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    const rescuer = t.client({ jobs: [job], maintenance: false });
    rescuer.on((e) => events.push(e));
    await rescuer.runMaintenance();
    await rescuer.start();
    await waitFor('completed by the rescuer', () => pathOf(events, id).includes('job.completed'));
    release();
    await waitFor('the stale completion to be refused', () => pathOf(events, id).includes('job.refused'));
    expect(pathOf(events, id)).toEqual(['job.enqueued', 'job.started', 'job.rescued', 'job.started', 'job.completed', 'job.refused']);
  });

  it('cancel of a running job, and an operator resolving a held one', async () => {
    const job = defineJob({
      kind: 'ev-cancel',
      payload: z.object({ hold: z.boolean() }),
      run: (p, ctx) => (p.hold ? hold('review') : new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()))),
    });
    const ns = t.client({ jobs: [job] });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    const run = (await ns.enqueue(job, { hold: false })).id;
    const held = (await ns.enqueue(job, { hold: true })).id;
    await ns.start();
    await waitFor('running and held', () => pathOf(events, run).includes('job.started') && pathOf(events, held).includes('job.held'));
    await ns.cancelJob(run, { actor: 'ops' });
    await waitFor('the worker to let go', () => pathOf(events, run).includes('job.lease-lost'));
    await ns.resolveJob(held, { as: 'completed', actor: 'ops' });
    const cancelPath = pathOf(events, run);
    expect(cancelPath.slice(0, 2)).toEqual(['job.enqueued', 'job.started']);
    // The operator's events and the worker's reaction to the notification may interleave.
    expect(cancelPath.slice(2).sort()).toEqual(['job.cancelled', 'job.lease-lost', 'job.resolved']);
    expect(events.find((e) => e.type === 'job.lease-lost' && e.jobId === run)).toMatchObject({ why: 'cancelled' });
    expect(pathOf(events, held)).toEqual(['job.enqueued', 'job.started', 'job.held', 'job.resolved']);
    expect(events.find((e) => e.type === 'job.resolved' && e.jobId === held)).toMatchObject({ action: 'resolve-completed', to: 'completed', actor: 'ops' });
  });
});

describe('job.started', () => {
  it('waitMs is how long the job had been due, on the database clock', async () => {
    const job = defineJob({ kind: 'ev-wait', payload: z.object({}), run: async () => undefined });
    const ns = t.client({ jobs: [job], pollIntervalMs: 50 });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    // Due for an hour by the database's clock when the worker claims it.
    const { id } = await ns.enqueue(job, {});
    await t.sql.query(`UPDATE "${t.schema}".jobs SET run_at = now() - interval '1 hour' WHERE id = $1`, [id]);
    // This process's wall clock runs 10 minutes ahead of the database's: it must not count.
    const realNow = Date.now.bind(Date);
    const skew = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 600_000);
    try {
      await ns.start();
      await waitFor('started', () => events.some((e) => e.type === 'job.started' && e.jobId === id));
    } finally {
      skew.mockRestore();
    }
    const started = events.find((e) => e.type === 'job.started' && e.jobId === id) as Extract<NightshiftEvent, { type: 'job.started' }>;
    expect(started.waitMs).toBeGreaterThanOrEqual(3_600_000);
    expect(started.waitMs).toBeLessThan(3_600_000 + 60_000);
  });
});
