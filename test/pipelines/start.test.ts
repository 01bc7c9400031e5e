import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePipeline } from '../../src/index.js';
import { drain } from '../../src/testing/index.js';
import { useTestDatabase } from '../support/db.js';
import { tempStore } from './support.js';

const t = useTestDatabase('pls');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

const day = definePipeline({ name: 'keyed', key: z.string().regex(/^\d+$/), input: z.object({ currency: z.string() }), store: tempStore().store }).step('a', async (ctx) => ({
  key: ctx.key,
  currency: ctx.input.currency,
}));

describe('keyed start', () => {
  it('gives one run for a key under concurrent starts from many connections, and every caller gets it', async () => {
    const clients = Array.from({ length: 8 }, () => t.client({ pipelines: [day], maxConnections: 3 }));
    const results = await Promise.all(clients.flatMap((ns) => [1, 2, 3].map(() => ns.pipelines.start(day, '20444', { currency: 'EUR' }))));
    expect(new Set(results.map((r) => r.run.id)).size).toBe(1);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const rows = await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pipeline_runs WHERE pipeline = 'keyed' AND key = '20444'`);
    expect(rows.rows[0].n).toBe(1);
    // One first step's job: the start that created the run enqueued it, no other start did.
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'pipeline:keyed:a'`)).rows[0].n).toBe(1);
  });

  it('returns the existing run whatever its state, and a dry run of the key is a run of its own', async () => {
    const ns = t.client({ pipelines: [day] });
    const first = await ns.pipelines.start(day, '20445', { currency: 'EUR' });
    await drain(ns);
    const again = await ns.pipelines.start(day, '20445', { currency: 'USD' });
    expect(again).toMatchObject({ created: false, run: { id: first.run.id, state: 'succeeded' } });
    const dry = await ns.pipelines.start(day, '20445', { currency: 'EUR' }, { dryRun: true });
    expect(dry.created).toBe(true);
    expect(dry.run.dryRun).toBe(true);
    expect(dry.run.id).not.toBe(first.run.id);
    // One dry run runs at a time per key; once it ended, another may start.
    expect((await ns.pipelines.start(day, '20445', { currency: 'EUR' }, { dryRun: true })).run.id).toBe(dry.run.id);
    await drain(ns);
    const second = await ns.pipelines.start(day, '20445', { currency: 'EUR' }, { dryRun: true });
    expect(second.created).toBe(true);
    expect(second.run.id).not.toBe(dry.run.id);
  });

  it("starts inside the caller's transaction: a rollback leaves no run and no job", async () => {
    const ns = t.client({ pipelines: [day] });
    await expect(
      ns.transaction(async (tx) => {
        await ns.pipelines.start(day, '30000', { currency: 'EUR' }, { db: tx });
        throw new Error('the caller changed its mind');
      }),
    ).rejects.toThrow('changed its mind');
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pipeline_runs WHERE key = '30000'`)).rows[0].n).toBe(0);
  });

  it('refuses a key or input the pipeline does not accept, naming each problem, and writes nothing', async () => {
    const ns = t.client({ pipelines: [day] });
    const err = await ns.pipelines.start(day, 'not-a-day', { currency: 3 as unknown as string }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'NS_OPTIONS_INVALID' });
    const paths = (err as { issues: { path: string }[] }).issues.map((i) => i.path);
    expect(paths).toEqual(['key', 'input.currency']);
    await expect(ns.pipelines.start(day, '../etc', { currency: 'EUR' })).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID' });
    await expect(ns.pipelines.start('nope', 'k')).rejects.toMatchObject({ code: 'NS_UNKNOWN_PIPELINE' });
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pipeline_runs WHERE key IN ('not-a-day', '../etc')`)).rows[0].n).toBe(0);
  });

  it('freezes the graph into the run: the steps, their needs and modes', async () => {
    const ns = t.client({ pipelines: [day] });
    const { run } = await ns.pipelines.start(day, '20500', { currency: 'EUR' });
    const g = await t.sql.query(`SELECT graph FROM ${q()}.pipeline_runs WHERE id = $1`, [run.id]);
    expect(g.rows[0].graph).toEqual({ version: 1, steps: [{ name: 'a', needs: [], map: false, optional: false, effect: false }] });
  });
});
