import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, definePipeline } from '../../src/index.js';
import { drain } from '../../src/testing/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { tempStore } from './support.js';

const t = useTestDatabase('plr');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

describe('rerun', () => {
  it('resumes a failed run: succeeded steps keep their outputs and do not run again; only the failed fan-out item runs again', async () => {
    const runs: string[] = [];
    let broken = true;
    const p = definePipeline({ name: 'rerun', store: tempStore().store, maxAttempts: 1 })
      .step('freeze', async () => {
        runs.push('freeze');
        return { pools: [1, 2, 3] };
      })
      .map('settle', { needs: ['freeze'], items: ({ freeze }) => freeze.pools, itemKey: (n) => `pool-${n}` }, async (_ctx, n) => {
        runs.push(`settle:${n}`);
        if (n === 2 && broken) throw new Error('pool 2 rpc timeout');
        return n * 100;
      })
      .step('commit', { needs: ['settle'] }, async (ctx) => {
        runs.push('commit');
        return ctx.needs.settle.reduce((s, r) => s + r.value, 0);
      });
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, '20444');
    await drain(ns);
    expect((await ns.pipelines.getRun('rerun', '20444')).state).toBe('failed');
    const before = [...runs];
    broken = false;
    const rerun = await ns.pipelines.rerun(p, '20444', { reason: 'rpc back' });
    expect(rerun.state).toBe('running');
    await drain(ns);
    const run = await ns.pipelines.getRun('rerun', '20444');
    expect(run.state).toBe('succeeded');
    expect(run.generation).toBe(1);
    expect(run.stepList.find((s) => s.name === 'commit')!.output).toBe(600);
    // Only what had not succeeded ran again: the failed item (pool-3, not started when pool-2
    // failed, was cancelled and runs now too), then the steps after it.
    expect(before).toEqual(['freeze', 'settle:1', 'settle:2']);
    expect(runs.slice(before.length)).toEqual(['settle:2', 'settle:3', 'commit']);
    const audit = await t.sql.query(`SELECT actor, action, reason FROM ${q()}.audit_log WHERE target = 'pipeline:rerun:20444' ORDER BY id`);
    expect(audit.rows.map((r) => r.action)).toEqual(['pipeline-start', 'pipeline-rerun']);
    expect(audit.rows[1].reason).toBe('rpc back');
  });

  it('does nothing to a running run and refuses a succeeded one', async () => {
    const p = definePipeline({ name: 'rerun2', store: tempStore().store }).step('a', async () => 1);
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'k');
    expect((await ns.pipelines.rerun(p, 'k')).state).toBe('running');
    await drain(ns);
    await expect(ns.pipelines.rerun(p, 'k')).rejects.toMatchObject({ code: 'NS_PIPELINE_INVALID_STATE' });
  });

  it('enqueues a failure follow-up once, though the run fails again after a rerun', async () => {
    const page = defineJob({ kind: 'page-ops', payload: z.object({}), run: async () => undefined });
    const p = definePipeline({ name: 'failtwice', store: tempStore().store, maxAttempts: 1 })
      .step('a', async () => {
        throw new Error('still broken');
      })
      .onFailure(page);
    const ns = t.client({ pipelines: [p], jobs: [page] });
    await ns.pipelines.start(p, 'k');
    await drain(ns, { kinds: ['pipeline:failtwice:a'] });
    await ns.pipelines.rerun(p, 'k');
    await drain(ns, { kinds: ['pipeline:failtwice:a'] });
    expect((await ns.pipelines.getRun('failtwice', 'k')).state).toBe('failed');
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'page-ops'`)).rows[0].n).toBe(1);
  });
});

describe('restart --from', () => {
  it('runs the step and everything after it as a new generation, keeping the history and the earlier steps', async () => {
    const runs: string[] = [];
    const { store, root } = tempStore();
    const notify = defineJob({ kind: 'restart-done', payload: z.object({ g: z.number() }), run: async () => undefined });
    let version = 'v1';
    const p = definePipeline({ name: 'restart', store })
      .step('inputs', async () => {
        runs.push('inputs');
        return 'frozen';
      })
      .step('result', { needs: ['inputs'] }, async (ctx) => {
        runs.push('result');
        await ctx.artifact('result.json', { version });
        return version;
      })
      .step('bundle', { needs: ['inputs', 'result'] }, async (ctx) => {
        runs.push('bundle');
        return `${ctx.needs.inputs}:${ctx.needs.result}`;
      })
      .onSuccess(notify, (run) => ({ g: run.generation }));
    const ns = t.client({ pipelines: [p], jobs: [notify] });
    await ns.pipelines.start(p, 'day');
    await drain(ns, { kinds: p.spec.steps.map((s) => s.kind) });
    expect(readFileSync(join(root, 'restart', 'day', 'result.json'), 'utf8')).toContain('v1');
    version = 'v2';
    const r = await ns.pipelines.restart(p, 'day', { from: 'result' });
    expect(r.generation).toBe(2);
    await drain(ns, { kinds: p.spec.steps.map((s) => s.kind) });
    const run = await ns.pipelines.getRun('restart', 'day');
    expect(run.state).toBe('succeeded');
    expect(run.generation).toBe(2);
    expect(runs).toEqual(['inputs', 'result', 'bundle', 'result', 'bundle']);
    expect(run.stepList.find((s) => s.name === 'result')!.output).toBe('v2');
    expect(run.history.map((h) => [h.generation, h.step, h.state])).toEqual([
      [1, 'bundle', 'succeeded'],
      [1, 'result', 'succeeded'],
    ]);
    // The new file is the run's; the old one is kept aside, still verifiable, and recorded as superseded.
    expect(readFileSync(join(root, 'restart', 'day', 'result.json'), 'utf8')).toContain('v2');
    const old = run.artifacts.find((a) => !a.current)!;
    expect(old).toMatchObject({ name: 'result.json', generation: 1, location: 'restart/day/.generations/1/result.json' });
    expect(readFileSync(join(root, old.location), 'utf8')).toContain('v1');
    expect((await ns.pipelines.verify(p, 'day')).ok).toBe(true);
    // A new generation is a new end: its success follow-up is enqueued once more.
    const follow = await t.sql.query(`SELECT payload FROM ${q()}.jobs_all WHERE kind = 'restart-done' ORDER BY id`);
    expect(follow.rows.map((x) => x.payload)).toEqual([{ g: 1 }, { g: 2 }]);
    expect(existsSync(join(root, 'restart', 'day', '.attempts'))).toBe(false);
  });

  it('refuses a running run and a step that is not in the graph', async () => {
    const p = definePipeline({ name: 'restart2', store: tempStore().store }).step('a', async () => 1);
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'k');
    await expect(ns.pipelines.restart(p, 'k', { from: 'a' })).rejects.toMatchObject({ code: 'NS_PIPELINE_INVALID_STATE' });
    await drain(ns);
    await expect(ns.pipelines.restart(p, 'k', { from: 'zzz' })).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID', message: expect.stringMatching(/its steps: a/) });
  });
});

describe('cancel', () => {
  it('aborts running steps through the job core (their signal), starts nothing new, and a rerun resumes the run', async () => {
    const reasons: unknown[] = [];
    let started = 0;
    let hang = true;
    const p = definePipeline({ name: 'cancel', store: tempStore().store })
      .step('a', async () => 1)
      .map('slow', { needs: ['a'], items: () => [1, 2], itemKey: (n) => `s${n}` }, async (ctx) => {
        started++;
        if (!hang) return 'done';
        return new Promise((_r, reject) =>
          ctx.signal.addEventListener('abort', () => {
            reasons.push((ctx.signal.reason as { code?: string }).code);
            reject(ctx.signal.reason);
          }),
        );
      })
      .step('after', { needs: ['slow'] }, async () => 'after');
    const ns = t.client({ pipelines: [p], pollIntervalMs: 20, heartbeatMs: 200, leaseMs: 5_000 });
    await ns.start();
    await ns.pipelines.start(p, 'k');
    await waitFor('both items to run', () => started === 2);
    const cancelled = await ns.pipelines.cancel(p, 'k', { reason: 'wrong day' });
    expect(cancelled.state).toBe('cancelled');
    await waitFor('both handlers to be aborted', () => reasons.length === 2);
    expect(reasons).toEqual(['NS_JOB_CANCELLED', 'NS_JOB_CANCELLED']);
    const run = await ns.pipelines.getRun('cancel', 'k');
    expect(run.reason).toMatch(/cancelled by .*: wrong day/);
    expect(run.stepList.map((s) => s.state)).toEqual(['succeeded', 'cancelled', 'cancelled']);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'pipeline:cancel:after'`)).rows[0].n).toBe(0);
    // The fan-out's own job (it created the items) had completed; the items' jobs were cancelled.
    const jobs = await t.sql.query(`SELECT state::text FROM ${q()}.jobs_all WHERE kind = 'pipeline:cancel:slow' ORDER BY id`);
    expect(jobs.rows.map((r) => r.state)).toEqual(['completed', 'cancelled', 'cancelled']);
    hang = false;
    await ns.pipelines.rerun(p, 'k');
    await waitFor('the resumed run to succeed', async () => (await ns.pipelines.getRun('cancel', 'k')).state === 'succeeded');
  });
});
