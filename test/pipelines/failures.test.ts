import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, definePipeline, discard } from '../../src/index.js';
import { drain } from '../../src/testing/index.js';
import { useTestDatabase } from '../support/db.js';
import { tempStore } from './support.js';

const t = useTestDatabase('plf');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

describe('a fatal failure', () => {
  it('fails the run in the transaction that records the step, cancels what had not started, and starts nothing after it', async () => {
    const ran: string[] = [];
    const alert = defineJob({ kind: 'fatal-alert', payload: z.object({ key: z.string(), reason: z.string() }), run: async () => undefined });
    const p = definePipeline({ name: 'fatal', store: tempStore().store, maxAttempts: 1 })
      .step('a', async () => void ran.push('a'))
      .step('b', { needs: ['a'] }, async () => {
        ran.push('b');
        throw new Error('the ledger does not balance');
      })
      .step('side', { needs: ['a'] }, async () => void ran.push('side'))
      .step('c', { needs: ['b'] }, async () => void ran.push('c'))
      .step('d', { needs: ['c', 'side'] }, async () => void ran.push('d'))
      .onFailure(alert, (run) => ({ key: run.key, reason: run.reason ?? '' }));
    const ns = t.client({ pipelines: [p], jobs: [alert] });
    await ns.pipelines.start(p, 'day-1');
    await drain(ns, { kinds: p.spec.steps.map((s) => s.kind) });
    const run = await ns.pipelines.getRun('fatal', 'day-1');
    expect(run.state).toBe('failed');
    expect(run.reason).toBe('step "b" failed: the ledger does not balance');
    expect(run.error).toMatchObject({ step: 'b', message: 'the ledger does not balance', attempt: 1 });
    const state = Object.fromEntries(run.stepList.map((s) => [s.name, s.state]));
    expect(state).toEqual({ a: 'succeeded', b: 'failed', side: expect.stringMatching(/^(succeeded|cancelled)$/), c: 'cancelled', d: 'cancelled' });
    expect(ran).not.toContain('c');
    expect(ran).not.toContain('d');
    // One transaction: the step's end and the run's end carry the same transaction timestamp (now()).
    const times = await t.sql.query(
      `SELECT (SELECT finished_at FROM ${q()}.pipeline_steps WHERE run_id = r.id AND step = 'b') AS step_end, r.finished_at AS run_end
       FROM ${q()}.pipeline_runs r WHERE r.id = $1`,
      [run.id],
    );
    expect(times.rows[0].step_end.getTime()).toBe(times.rows[0].run_end.getTime());
    // No job of a later step was ever enqueued.
    const later = await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = ANY($1)`, [['pipeline:fatal:c', 'pipeline:fatal:d']]);
    expect(later.rows[0].n).toBe(0);
    // The failure follow-up, once, with the reason.
    const follow = await t.sql.query(`SELECT payload FROM ${q()}.jobs_all WHERE kind = 'fatal-alert'`);
    expect(follow.rows).toEqual([{ payload: { key: 'day-1', reason: 'step "b" failed: the ledger does not balance' } }]);
  });

  it('leaves a step that was already running to drain: it finishes and keeps its output, and nothing follows it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const p = definePipeline({ name: 'drain', store: tempStore().store, maxAttempts: 1 })
      .step('root', async () => 1)
      .step('slow', { needs: ['root'] }, async () => {
        await gate;
        return { kept: true };
      })
      .step('bad', { needs: ['root'] }, async () => discard('no good'))
      .step('after', { needs: ['slow'] }, async () => 'never');
    const ns = t.client({ pipelines: [p], pollIntervalMs: 20 });
    await ns.pipelines.start(p, 'k');
    await drain(ns, { kinds: ['pipeline:drain:root'] });
    const slow = drain(ns, { kinds: ['pipeline:drain:slow'] });
    await drain(ns, { kinds: ['pipeline:drain:bad'] });
    expect((await ns.pipelines.getRun('drain', 'k')).state).toBe('failed');
    release();
    await slow;
    const run = await ns.pipelines.getRun('drain', 'k');
    const steps = Object.fromEntries(run.stepList.map((s) => [s.name, s]));
    expect(steps.slow!.state).toBe('succeeded');
    expect(steps.slow!.output).toEqual({ kept: true });
    expect(steps.after!.state).toBe('cancelled');
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'pipeline:drain:after'`)).rows[0].n).toBe(0);
  });
});

describe('an optional failure', () => {
  it('is a warning the run carries: dependents receive { ok: false, error } and the run succeeds', async () => {
    const seen: unknown[] = [];
    const p = definePipeline({ name: 'opt', store: tempStore().store, maxAttempts: 1 })
      .step('settle', async () => ({ total: 5 }))
      .step('notify', { needs: ['settle'], optional: true }, async () => {
        throw new Error('push provider down');
      })
      .step('stats', { needs: ['settle', 'notify'] }, async (ctx) => {
        seen.push(ctx.needs.notify);
        return ctx.needs.settle.total;
      });
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'd');
    await drain(ns);
    const run = await ns.pipelines.getRun('opt', 'd');
    expect(run.state).toBe('succeeded');
    expect(run.warnings).toBe(1);
    expect(run.stepList.map((s) => [s.name, s.state])).toEqual([
      ['settle', 'succeeded'],
      ['notify', 'failed'],
      ['stats', 'succeeded'],
    ]);
    expect(seen).toEqual([{ ok: false, error: { message: 'push provider down' } }]);
  });

  it("with 'skip-dependents' skips the steps that need it, transitively, and the run still succeeds", async () => {
    const p = definePipeline({ name: 'skip', store: tempStore().store, maxAttempts: 1 })
      .step('a', async () => 1)
      .step('b', { needs: ['a'], optional: 'skip-dependents' }, async () => {
        throw new Error('nope');
      })
      .step('c', { needs: ['b'] }, async () => 3)
      .step('d', { needs: ['c'] }, async () => 4)
      .step('e', { needs: ['a'] }, async () => 5);
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'x');
    await drain(ns);
    const run = await ns.pipelines.getRun('skip', 'x');
    expect(run.state).toBe('succeeded');
    expect(run.warnings).toBe(1);
    expect(Object.fromEntries(run.stepList.map((s) => [s.name, s.state]))).toEqual({ a: 'succeeded', b: 'failed', c: 'skipped', d: 'skipped', e: 'succeeded' });
  });
});

describe('fan-out and fan-in', () => {
  it('gives each item its own job, retries and outcome; the fan-in of an optional map receives every result, the failed one included', async () => {
    const tries = new Map<number, number>();
    const p = definePipeline({ name: 'fan', store: tempStore().store })
      .step('pools', async () => [0, 1, 2, 3, 4])
      .map('settle', { needs: ['pools'], items: ({ pools }) => pools, itemKey: (n) => `pool-${n}`, maxAttempts: 2, optional: true, backoff: () => 0 }, async (ctx, pool) => {
        tries.set(pool, (tries.get(pool) ?? 0) + 1);
        if (pool === 3) throw new Error(`pool ${pool} is short`);
        if (pool === 1 && ctx.attempt === 1) throw new Error('flaky once');
        return { pool, winners: pool * 2 };
      })
      .step('merkle', { needs: ['settle'] }, async (ctx) => ctx.needs.settle.map((r) => (r.ok ? `${r.key}:${r.value.winners}` : `${r.key}:failed:${r.error.message}`)));
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'day');
    await drain(ns);
    const run = await ns.pipelines.getRun('fan', 'day');
    expect(run.state).toBe('succeeded');
    expect(run.warnings).toBe(1);
    const settle = run.stepList.find((s) => s.name === 'settle')!;
    expect(settle.state).toBe('failed');
    expect(settle.items!.byState).toEqual({ succeeded: 4, failed: 1 });
    expect(settle.items!.list.map((i) => [i.key, i.state, i.attempts])).toEqual([
      ['pool-0', 'succeeded', 1],
      ['pool-1', 'succeeded', 2],
      ['pool-2', 'succeeded', 1],
      ['pool-3', 'failed', 2],
      ['pool-4', 'succeeded', 1],
    ]);
    expect(new Set(settle.items!.list.map((i) => i.jobId)).size).toBe(5);
    expect(run.stepList.find((s) => s.name === 'merkle')!.output).toEqual(['pool-0:0', 'pool-1:2', 'pool-2:4', 'pool-3:failed:pool 3 is short', 'pool-4:8']);
    expect(Object.fromEntries(tries)).toEqual({ 0: 1, 1: 2, 2: 1, 3: 2, 4: 1 });
  });

  it('fails the run when an item of a fatal map fails: items that ran keep their outputs, those not started are cancelled', async () => {
    const p = definePipeline({ name: 'fanfatal', store: tempStore().store, maxAttempts: 1 })
      .map('settle', { items: () => ['a', 'b', 'c'], itemKey: (s) => s }, async (_ctx, s) => {
        if (s === 'b') throw new Error('b broke');
        return s.toUpperCase();
      })
      .step('after', { needs: ['settle'] }, async (ctx) => ctx.needs.settle.map((r) => r.value).join(''));
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'k');
    await drain(ns);
    const run = await ns.pipelines.getRun('fanfatal', 'k');
    expect(run.state).toBe('failed');
    expect(run.reason).toBe('step "settle" item "b" failed: b broke');
    const settle = run.stepList.find((s) => s.name === 'settle')!;
    // drain runs one job at a time, in order: c had not started when b failed.
    expect(settle.items!.list.map((i) => [i.key, i.state, i.output])).toEqual([
      ['a', 'succeeded', 'A'],
      ['b', 'failed', null],
      ['c', 'cancelled', null],
    ]);
    expect(settle.state).toBe('failed');
    expect(run.stepList.find((s) => s.name === 'after')!.state).toBe('cancelled');
  });

  it('is not taken by the sweep for a step whose job ended: the fan-out runs on while its items do', async () => {
    const p = definePipeline({ name: 'fansweep', store: tempStore().store }).map('m', { items: () => [1, 2] }, async (_ctx, n) => n);
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'k');
    await drain(ns, { maxJobs: 1 }).catch(() => undefined); // the fan-out's own job only: it creates the items
    expect((await ns.pipelines.getRun('fansweep', 'k')).stepList[0]!.state).toBe('running');
    expect(await ns.pipelines.sweep()).toMatchObject({ reconciled: 0 });
    await drain(ns);
    expect((await ns.pipelines.getRun('fansweep', 'k')).state).toBe('succeeded');
  });

  it('settles a map with no items at once', async () => {
    const p = definePipeline({ name: 'empty', store: tempStore().store })
      .map('none', { items: () => [] as number[] }, async () => 1)
      .step('after', { needs: ['none'] }, async (ctx) => ctx.needs.none.length);
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'k');
    await drain(ns);
    const run = await ns.pipelines.getRun('empty', 'k');
    expect(run.state).toBe('succeeded');
    expect(run.stepList.map((s) => [s.name, s.state, s.output])).toEqual([
      ['none', 'succeeded', null],
      ['after', 'succeeded', 0],
    ]);
  });
});

describe('outputs and items that cannot be stored', () => {
  it('fails a step whose output is over maxOutputBytes for good, naming the limit, with no retry', async () => {
    let runs = 0;
    const p = definePipeline({ name: 'big', store: tempStore().store, maxOutputBytes: 1_000 }).step('huge', async () => {
      runs++;
      return 'x'.repeat(2_000);
    });
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'k');
    await drain(ns);
    const run = await ns.pipelines.getRun('big', 'k');
    expect(run.state).toBe('failed');
    expect(run.error).toMatchObject({ code: 'NS_PIPELINE_OUTPUT_TOO_LARGE' });
    expect(run.reason).toMatch(/2002 bytes, over the limit of 1000 bytes/);
    expect(runs).toBe(1);
  });

  it('fails a map whose items repeat a key, for good', async () => {
    const p = definePipeline({ name: 'dupitems', store: tempStore().store }).map('m', { items: () => [1, 2, 3], itemKey: (n) => (n === 3 ? '1' : String(n)) }, async () => 0);
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'k');
    await drain(ns);
    const run = await ns.pipelines.getRun('dupitems', 'k');
    expect(run.state).toBe('failed');
    expect(run.error).toMatchObject({ code: 'NS_PIPELINE_ITEMS_INVALID' });
    expect(run.reason).toMatch(/two items have the key "1"/);
  });
});

describe('follow-ups', () => {
  it('enqueues the success follow-up once per run, in the transaction that ends it, with the outputs', async () => {
    const sync = defineJob({ kind: 'pot-sync', payload: z.object({ day: z.string(), total: z.number() }), run: async () => undefined });
    const p = definePipeline({ name: 'follow', store: tempStore().store })
      .step('settle', async () => ({ total: 42 }))
      .onSuccess(sync, (run) => ({ day: run.key, total: (run.outputs.settle as { total: number }).total }));
    const ns = t.client({ pipelines: [p], jobs: [sync] });
    await ns.pipelines.start(p, 'd1');
    await drain(ns, { kinds: ['pipeline:follow:settle'] });
    const rows = await t.sql.query(`SELECT j.payload, j.created_at = r.finished_at AS same_tx FROM ${q()}.jobs_all j, ${q()}.pipeline_runs r WHERE j.kind = 'pot-sync' AND r.pipeline = 'follow'`);
    expect(rows.rows).toEqual([{ payload: { day: 'd1', total: 42 }, same_tx: true }]);
    const run = await ns.pipelines.getRun('follow', 'd1');
    expect(run.followUps).toMatchObject([{ generation: 1, name: 'success:pot-sync', error: null }]);
  });

  it('records a follow-up whose payload its job refuses, and the run still ends', async () => {
    const strict = defineJob({ kind: 'strict-follow', payload: z.object({ n: z.number() }), run: async () => undefined });
    const p = definePipeline({ name: 'badfollow', store: tempStore().store })
      .step('a', async () => 1)
      .onSuccess(strict, () => ({ n: 'one' as unknown as number }));
    const ns = t.client({ pipelines: [p], jobs: [strict] });
    const events: string[] = [];
    ns.on((e) => events.push(e.type));
    await ns.pipelines.start(p, 'k');
    await drain(ns);
    const run = await ns.pipelines.getRun('badfollow', 'k');
    expect(run.state).toBe('succeeded');
    expect(run.followUps).toMatchObject([{ name: 'success:strict-follow', jobId: null, error: expect.stringMatching(/invalid payload/) }]);
    expect(events).toContain('pipeline.follow-up-failed');
  });
});
