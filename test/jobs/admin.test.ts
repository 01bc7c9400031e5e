import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, hold, NightshiftError } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });
const q = () => `"${t.schema}"`;
const noop = defineJob({ kind: 'noop', payload, queue: 'adminq', run: async () => undefined });

async function codeOf(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(NightshiftError);
  return (err as NightshiftError).code;
}

describe('admin operations', () => {
  it('lists jobs with filters, newest first, and pages with beforeId', async () => {
    const ns = t.client({ jobs: [noop] });
    const ids = (await ns.enqueueMany(noop, [{ n: 1 }, { n: 2 }, { n: 3 }])).map((r) => r.id);
    const all = await ns.listJobs({ kind: 'noop', state: 'available' });
    expect(all.map((j) => j.id).slice(0, 3)).toEqual([...ids].reverse());
    const page = await ns.listJobs({ kind: 'noop', beforeId: ids[2]!, limit: 1 });
    expect(page.map((j) => j.id)).toEqual([ids[1]]);
    expect(await codeOf(ns.listJobs({ state: 'bogus' as never }))).toBe('NS_OPTIONS_INVALID');
    expect(await codeOf(ns.listJobs({ limit: 0 }))).toBe('NS_OPTIONS_INVALID');
  });

  it('gets a job, and reports a missing or malformed id', async () => {
    const ns = t.client({ jobs: [noop] });
    expect(await codeOf(ns.getJob('999999999'))).toBe('NS_JOB_NOT_FOUND');
    expect(await codeOf(ns.getJob('1; DROP TABLE jobs'))).toBe('NS_OPTIONS_INVALID');
  });

  it('retries a discarded job now, audited with actor and reason', async () => {
    const fails = defineJob({
      kind: 'fails-once',
      payload,
      maxAttempts: 1,
      run: async (_p, ctx) => {
        if (ctx.attempt === 1) throw new Error('first');
      },
    });
    const ns = t.client({ jobs: [fails] });
    const { id } = await ns.enqueue(fails, { n: 1 });
    await ns.start();
    await waitFor('discarded', async () => (await ns.getJob(id)).state === 'discarded');
    const retried = await ns.retryJob(id, { actor: 'alice', reason: 'provider fixed' });
    // The record as the retry left it (the worker may claim it a moment later).
    expect(retried.state).toBe('available');
    await waitFor('completed after retry', async () => (await ns.getJob(id)).state === 'completed');
    expect((await ns.getJob(id)).attempt).toBe(2);
    const audit = await ns.listAudit({ target: `job:${id}` });
    expect(audit[0]).toMatchObject({ actor: 'alice', action: 'retry', reason: 'provider fixed', details: { from: 'discarded', to: 'available', kind: 'fails-once' } });
    expect(audit[0]!.at).toBeInstanceOf(Date);
  });

  it('refuses actions that do not fit the state, with NS_INVALID_TRANSITION', async () => {
    const ns = t.client({ jobs: [noop] });
    const { id } = await ns.enqueue(noop, { n: 1 });
    expect(await codeOf(ns.retryJob(id))).toBe('NS_INVALID_TRANSITION');
    expect(await codeOf(ns.resolveJob(id, { as: 'completed' }))).toBe('NS_INVALID_TRANSITION');
    expect(await codeOf(ns.resolveJob(id, { as: 'maybe' as never }))).toBe('NS_OPTIONS_INVALID');
    expect(await codeOf(ns.cancelJob('424242424'))).toBe('NS_JOB_NOT_FOUND');
    expect(await ns.listAudit({ target: `job:${id}` })).toEqual([]);
  });

  it('cancels a pending job', async () => {
    const ns = t.client({ jobs: [noop] });
    const { id } = await ns.enqueue(noop, { n: 1 });
    const j = await ns.cancelJob(id, { actor: 'bob', reason: 'customer withdrew' });
    expect(j).toMatchObject({ state: 'cancelled', reason: 'cancelled: customer withdrew' });
  });

  it('cancels a running job: its handler gets the abort signal and its completion is refused', async () => {
    let reason: unknown;
    const job = defineJob({
      kind: 'cancellable',
      payload,
      run: (_p, ctx) => new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => ((reason = ctx.signal.reason), resolve()))),
    });
    const worker = t.client({ jobs: [job] });
    const { id } = await worker.enqueue(job, { n: 1 });
    await worker.start();
    await waitFor('running', async () => (await worker.getJob(id)).state === 'running');
    // Cancelled from another client (another process, the CLI): the worker hears it via NOTIFY.
    const operator = t.client();
    await operator.cancelJob(id, { actor: 'ops' });
    await waitFor('the handler to be aborted', () => reason !== undefined);
    expect(reason).toMatchObject({ code: 'NS_JOB_CANCELLED' });
    await waitFor('the worker to let go of it', () => worker.runningCount === 0);
    expect((await worker.getJob(id)).state).toBe('cancelled');
  });

  it('resolves held jobs as completed, failed or retried, and audits it', async () => {
    const job = defineJob({ kind: 'review', payload, run: async ({ n }, ctx) => (ctx.attempt === 1 ? hold(`needs review ${n}`) : undefined) });
    const ns = t.client({ jobs: [job] });
    const ids = (await ns.enqueueMany(job, [{ n: 1 }, { n: 2 }, { n: 3 }])).map((r) => r.id);
    await ns.start();
    await waitFor('all held', async () => (await Promise.all(ids.map((id) => ns.getJob(id)))).every((j) => j.state === 'held'));
    expect(await ns.resolveJob(ids[0]!, { as: 'completed', actor: 'carol', reason: 'confirmed by PSP' })).toMatchObject({ state: 'completed', reason: 'resolved as completed: confirmed by PSP' });
    expect(await ns.resolveJob(ids[1]!, { as: 'failed', actor: 'carol', reason: 'voided' })).toMatchObject({ state: 'discarded' });
    await ns.resolveJob(ids[2]!, { as: 'retry', actor: 'carol' });
    await waitFor('the retried one to complete', async () => (await ns.getJob(ids[2]!)).state === 'completed');
    const actions = (await ns.listAudit({ limit: 10 })).filter((a) => ids.includes(a.target.slice(4))).map((a) => a.action);
    expect(actions.sort()).toEqual(['resolve-completed', 'resolve-failed', 'resolve-retry']);
  });

  it('retries every discarded job of a kind in bulk, with a dry run first', async () => {
    const ns = t.client({ jobs: [noop] });
    const ids = (
      await ns.enqueueMany(
        noop,
        Array.from({ length: 1_200 }, (_, n) => ({ n })),
      )
    ).map((r) => r.id);
    await t.sql.query(`UPDATE ${q()}.jobs SET state = 'discarded', finished_at = now() WHERE id = ANY($1::bigint[])`, [ids]);
    expect(await ns.retryJobs({ kind: 'noop', dryRun: true })).toBe(1_200);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE id = ANY($1::bigint[]) AND state = 'discarded'`, [ids])).rows[0].n).toBe(1_200);
    const progress: number[] = [];
    expect(await ns.retryJobs({ kind: 'noop', actor: 'dave', onProgress: (d) => progress.push(d) })).toBe(1_200);
    expect(progress.at(-1)).toBe(1_200);
    expect(progress.length).toBeGreaterThan(1);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE id = ANY($1::bigint[]) AND state = 'available'`, [ids])).rows[0].n).toBe(1_200);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.audit_log WHERE actor = 'dave' AND action = 'retry'`)).rows[0].n).toBe(1_200);
  });

  it('pauses a queue for every process and resumes it', async () => {
    const ran: number[] = [];
    const job = defineJob({ kind: 'pausable', payload, queue: 'pausable', run: async ({ n }) => void ran.push(n) });
    const worker = t.client({ jobs: [job], pollIntervalMs: 50 });
    const operator = t.client();
    await operator.pauseQueue('pausable', { actor: 'erin', reason: 'provider down' });
    await worker.enqueue(job, { n: 1 });
    let emptyClaims = 0;
    let polls = 0;
    worker.on((e) => {
      if (e.type === 'worker.claimed' && e.queue === 'pausable' && e.count === 0) emptyClaims++;
      // The process's idle poll asks about the queue and does not find the paused queue's job due.
      if (e.type === 'worker.polled' && e.queues.includes('pausable') && !e.due.includes('pausable')) polls++;
    });
    await worker.start();
    // The worker claims the paused queue with a job in it, finds nothing, and its polls pass it over.
    await waitFor('a claim and three polls of the paused queue', () => emptyClaims >= 1 && polls >= 3);
    expect((await operator.listQueues()).find((qq) => qq.name === 'pausable')).toMatchObject({ paused: true, available: 1, running: 0 });
    await operator.resumeQueue('pausable', { actor: 'erin' });
    await waitFor('the job to run after resume', () => ran.length === 1);
    const audit = await operator.listAudit({ target: 'queue:pausable' });
    expect(audit.map((a) => a.action)).toEqual(['resume', 'pause']);
  });

  it('prunes finished jobs by age per state, never held or abandoned ones', async () => {
    const ns = t.client({ jobs: [noop] });
    const ids = (await ns.enqueueMany(noop, [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }])).map((r) => r.id);
    await t.sql.query(
      `UPDATE ${q()}.jobs SET state = (ARRAY['completed','completed','discarded','held'])[ord]::${q()}.job_state,
         finished_at = now() - (ARRAY[interval '2 days', interval '1 hour', interval '40 days', interval '90 days'])[ord]
       FROM unnest($1::bigint[]) WITH ORDINALITY AS u(id, ord) WHERE jobs.id = u.id`,
      [ids],
    );
    const pruned = await ns.prune({ completed: 86_400_000, discarded: 30 * 86_400_000 });
    expect(pruned.completed).toBeGreaterThanOrEqual(1);
    const left = (await t.sql.query(`SELECT id::text FROM ${q()}.jobs_all WHERE id = ANY($1::bigint[]) ORDER BY id`, [ids])).rows.map((r: { id: string }) => r.id);
    expect(left).toEqual([ids[1], ids[3]]);
  });

  it('reports counts per queue, kind and state', async () => {
    const ns = t.client({ jobs: [noop] });
    await ns.enqueue(noop, { n: 1 });
    const stats = await ns.stats();
    expect(stats.find((s) => s.kind === 'noop' && s.state === 'available')?.count).toBeGreaterThanOrEqual(1);
  });
});
