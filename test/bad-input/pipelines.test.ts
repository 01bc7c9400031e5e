import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createNightshift, defineConfig, definePipeline, directoryStore, type Issue } from '../../src/index.js';
import { drain } from '../../src/testing/index.js';
import { tempStore } from '../pipelines/support.js';
import { useTestDatabase } from '../support/db.js';

const t = useTestDatabase('bip');
t.migrateBeforeAll();

function issuesOf(fn: () => unknown): { code: string; paths: string[] } {
  try {
    fn();
  } catch (err) {
    const e = err as { code: string; issues: Issue[] };
    return { code: e.code, paths: e.issues.map((i) => i.path) };
  }
  throw new Error('did not throw');
}

describe('definePipeline refuses bad definitions, naming every problem at once', () => {
  it.each([
    [
      'a bad name, an unknown option, a bad queue, retention and deadline',
      () => definePipeline({ name: 'has space', queu: 'x', queue: 'a b', retention: '3 days', deadline: 10 } as never),
      ['queu', 'name', 'queue', 'deadline', 'retention'],
    ],
    ['a key that is not a schema and a bad store', () => definePipeline({ name: 'p', key: 'string' as never, store: {} as never }), ['key', 'store']],
    ['kind settings the job core refuses', () => definePipeline({ name: 'p', maxAttempts: 0, backoff: { factor: 0.5 }, timeoutMs: -1 }), ['timeoutMs', 'maxAttempts', 'backoff.factor']],
    ['maxOutputBytes and maxItems out of range', () => definePipeline({ name: 'p', maxOutputBytes: 0, maxItems: 1.5 }), ['maxOutputBytes', 'maxItems']],
  ])('%s', (_what, fn, paths) => {
    expect(issuesOf(fn)).toEqual({ code: 'NS_CONFIG_INVALID', paths });
  });

  it('refuses steps that are unnamed, repeated, need what is not before them, or have bad options', () => {
    const p = definePipeline({ name: 'p' }).step('a', async () => 1);
    expect(issuesOf(() => p.step('a', async () => 2)).paths).toEqual(['steps.a']);
    expect(issuesOf(() => p.step('bad name!', async () => 2)).paths).toEqual(['steps']);
    expect(issuesOf(() => p.step('b', { needs: ['a', 'zz', 'a'] } as never, async () => 2)).paths).toEqual(['steps.b.needs.1', 'steps.b.needs']);
    expect(issuesOf(() => p.step('c', { optional: 'sometimes', effect: 1, neds: [] } as never, async () => 2)).paths).toEqual(['steps.c.neds', 'steps.c.optional', 'steps.c.effect']);
    expect(issuesOf(() => p.map('m', { itemKey: 'k' } as never, async () => 2)).paths).toEqual(['steps.m.items', 'steps.m.itemKey']);
    expect(issuesOf(() => p.step('d', {}, 'not a function' as never)).paths).toEqual(['steps.d.run']);
    expect(issuesOf(() => definePipeline({ name: 'x'.repeat(60) }).step('y'.repeat(60), async () => 1)).paths).toEqual([`steps.${'y'.repeat(60)}`]);
  });

  it('refuses bad follow-ups, cleanup hooks, stores and schedules', () => {
    const p = definePipeline({ name: 'p' }).step('a', async () => 1);
    expect(issuesOf(() => p.onSuccess('not a kind!')).paths).toEqual(['onSuccess.job']);
    expect(issuesOf(() => p.onSuccess('k').onSuccess('k')).paths).toEqual(['onSuccess.job']);
    expect(issuesOf(() => p.cleanup('x' as never)).paths).toEqual(['cleanup']);
    expect(issuesOf(() => directoryStore({ root: '', path: 'x' as never })).paths).toEqual(['root', 'path']);
    expect(issuesOf(() => p.schedule({ name: 's', cron: '0 0 * * *', key: 'k' as never, catchup: 'all' } as never)).paths).toEqual(['catchup', 'key']);
    expect(issuesOf(() => p.schedule({ name: 's', cron: '61 * * * *', key: () => 'k' })).paths).toEqual(['cron']);
  });

  it('refuses a client or config whose pipelines are not pipelines, or share a name', () => {
    expect(issuesOf(() => createNightshift({ databaseUrl: t.url, pipelines: [{} as never] })).paths).toEqual(['pipelines.0']);
    const p = definePipeline({ name: 'same' }).step('a', async () => 1);
    expect(issuesOf(() => defineConfig({ pipelines: [p, definePipeline({ name: 'same' })] })).paths).toEqual(['pipelines.1']);
    expect(issuesOf(() => defineConfig({ pipelines: [p], roles: { r: { jobs: ['pipeline:same:b'] } } })).paths).toEqual(['roles.r.jobs.0']);
    // A role may name a pipeline's step kinds.
    expect(() => defineConfig({ pipelines: [p], roles: { r: { jobs: ['pipeline:same:a', 'pipeline:same'] } } })).not.toThrow();
  });
});

describe('the admin API refuses bad input and writes nothing', () => {
  const p = definePipeline({ name: 'adm', key: z.string().regex(/^\d+$/), input: z.object({ n: z.number() }), store: tempStore().store }).step('a', async (ctx) => ctx.input.n);

  it.each([
    ['a key the schema refuses', 'abc', { n: 1 }, ['key']],
    ['a key that could not name a directory', '../x', { n: 1 }, ['key']],
    ['a key with a NUL', 'a\u0000', { n: 1 }, ['key']],
    ['an input the schema refuses', '1', { n: 'one' }, ['input.n']],
    ['no input', '2', undefined, ['input']],
  ])('start with %s', async (_what, key, input, paths) => {
    const ns = t.client({ pipelines: [p] });
    const err = (await ns.pipelines.start(p, key, input as never).catch((e: unknown) => e)) as { code: string; issues: Issue[] };
    expect(err.code).toBe('NS_OPTIONS_INVALID');
    expect(err.issues.map((i) => i.path)).toEqual(paths);
    expect((await ns.pipelines.listRuns({ pipeline: 'adm' })).length).toBe(0);
  });

  it('refuses bad listings, selectors and restart steps', async () => {
    const ns = t.client({ pipelines: [p] });
    await expect(ns.pipelines.listRuns({ state: 'done' as never, limit: 0, beforeId: 'x' })).rejects.toMatchObject({
      code: 'NS_OPTIONS_INVALID',
      issues: [{ path: 'limit' }, { path: 'state' }, { path: 'beforeId' }],
    });
    await expect(ns.pipelines.getRun('adm', '1', { runId: 'abc' })).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID' });
    await expect(ns.pipelines.getRunById('0')).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID' });
    await ns.pipelines.start(p, '5', { n: 5 });
    await drain(ns);
    await expect(ns.pipelines.restart(p, '5', { from: 'b' })).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID', issues: [{ path: 'from' }] });
    await expect(ns.pipelines.verify('unknown', '5')).rejects.toMatchObject({ code: 'NS_UNKNOWN_PIPELINE' });
  });

  it('refuses artifact names that are not file names, and content JSON cannot hold, failing the step for good', async () => {
    const bad = definePipeline({ name: 'badart', store: tempStore().store, maxAttempts: 3 })
      // Optional, so that one failing does not cancel the others.
      .step('a', { optional: true }, async (ctx) => void (await ctx.artifact('../escape.json', {})))
      .step('b', { optional: true }, async (ctx) => void (await ctx.artifact('checksums.json', {})))
      .step('c', { optional: true }, async (ctx) => void (await ctx.artifact('nan.json', { n: Number.NaN })));
    const ns = t.client({ pipelines: [bad] });
    await ns.pipelines.start(bad, 'k');
    const r = await drain(ns);
    // Each fails on its first attempt (a name or a value does not get better by retrying).
    expect(r.jobs.filter((j) => j.status === 'discarded').map((j) => j.attempt)).toEqual([1, 1, 1]);
    const run = await ns.pipelines.getRun('badart', 'k');
    expect(run.stepList.map((s) => [s.name, s.state, s.error?.code])).toEqual([
      ['a', 'failed', 'NS_OPTIONS_INVALID'],
      ['b', 'failed', 'NS_OPTIONS_INVALID'],
      ['c', 'failed', 'NS_PAYLOAD_INVALID'],
    ]);
  });
});
