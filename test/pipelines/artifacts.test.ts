import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, definePipeline } from '../../src/index.js';
import { drain } from '../../src/testing/index.js';
import { useTestDatabase } from '../support/db.js';
import { tempStore } from './support.js';

const t = useTestDatabase('pla');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');

describe('artifacts in a directory store', () => {
  it("are published at the run's end under <root>/<path>/<name> with checksums.json, and an attempt that failed is never what the run shows", async () => {
    const { store, root } = tempStore({ path: ({ key }) => `dayId=${key}` });
    const p = definePipeline({ name: 'settle', store, maxAttempts: 2, backoff: () => 0 })
      .step('inputs', async (ctx) => {
        await ctx.artifact('inputs.json', { attempt: ctx.attempt });
        if (ctx.attempt === 1) throw new Error('rpc blip after writing');
        return 'ok';
      })
      .step('csv', { needs: ['inputs'] }, async (ctx) => {
        await ctx.artifact('ledger.csv', 'pool,total\n1,10\n', { contentType: 'text/csv' });
        await ctx.artifact('raw.bin', new Uint8Array([0, 1, 2, 255]));
      });
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, '20444');
    await drain(ns);
    const run = await ns.pipelines.getRun('settle', '20444');
    expect(run.state).toBe('succeeded');
    expect(run.artifactsPublishedAt).not.toBeNull();
    const dir = join(root, 'dayId=20444');
    expect(readdirSync(dir).sort()).toEqual(['checksums.json', 'inputs.json', 'ledger.csv', 'raw.bin']);
    // The recorded inputs.json is attempt 2's, on disk too.
    expect(JSON.parse(readFileSync(join(dir, 'inputs.json'), 'utf8'))).toEqual({ attempt: 2 });
    const manifest = JSON.parse(readFileSync(join(dir, 'checksums.json'), 'utf8'));
    expect(manifest).toEqual({
      'inputs.json': sha(readFileSync(join(dir, 'inputs.json'))),
      'ledger.csv': sha('pool,total\n1,10\n'),
      'raw.bin': sha(Buffer.from([0, 1, 2, 255])),
    });
    expect(run.artifacts.map((a) => [a.name, a.step, a.attempt, a.size, a.contentType, a.location])).toEqual([
      ['inputs.json', 'inputs', 2, readFileSync(join(dir, 'inputs.json')).length, 'application/json', 'dayId=20444/inputs.json'],
      ['ledger.csv', 'csv', 1, Buffer.byteLength('pool,total\n1,10\n'), 'text/csv', 'dayId=20444/ledger.csv'],
      ['raw.bin', 'csv', 1, 4, 'application/octet-stream', 'dayId=20444/raw.bin'],
    ]);
    const rows = await t.sql.query(`SELECT sha256, job_id::text, lease_token::text FROM ${q()}.pipeline_artifacts WHERE name = 'inputs.json'`);
    expect(rows.rows[0].sha256).toBe(manifest['inputs.json']);
    // The attempts' staging is gone.
    expect(existsSync(join(dir, '.attempts'))).toBe(false);
  });

  it('verify names each changed and each deleted file', async () => {
    const { store, root } = tempStore();
    const p = definePipeline({ name: 'verify', store }).step('write', async (ctx) => {
      await ctx.artifact('a.json', { a: 1 });
      await ctx.artifact('b.json', { b: 2 });
      await ctx.artifact('c.json', { c: 3 });
    });
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'k');
    await drain(ns);
    expect((await ns.pipelines.verify(p, 'k')).ok).toBe(true);
    writeFileSync(join(root, 'verify', 'k', 'a.json'), '{"a": 2}\n');
    rmSync(join(root, 'verify', 'k', 'c.json'));
    const r = await ns.pipelines.verify(p, 'k');
    expect(r.ok).toBe(false);
    expect(r.artifacts.map((a) => [a.name, a.status])).toEqual([
      ['a.json', 'changed'],
      ['b.json', 'ok'],
      ['c.json', 'missing'],
    ]);
    expect(r.artifacts[0]!.actualSha256).toBe(sha('{"a": 2}\n'));
  });

  it('refuses a second artifact of the same name in a run, failing the step for good', async () => {
    const p = definePipeline({ name: 'dupname', store: tempStore().store })
      .step('one', async (ctx) => void (await ctx.artifact('result.json', { n: 1 })))
      .step('two', { needs: ['one'] }, async (ctx) => void (await ctx.artifact('result.json', { n: 2 })));
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'k');
    await drain(ns);
    const run = await ns.pipelines.getRun('dupname', 'k');
    expect(run.state).toBe('failed');
    expect(run.error).toMatchObject({ step: 'two', code: 'NS_PIPELINE_ARTIFACT_EXISTS' });
    expect(run.artifacts.map((a) => a.step)).toEqual(['one']);
  });
});

describe('artifacts in the database store', () => {
  it('keeps the bytes with the run, and verify reads them back', async () => {
    const p = definePipeline({ name: 'dbstore', store: 'database', maxAttempts: 2, backoff: () => 0 }).step('w', async (ctx) => {
      await ctx.artifact('bundle.json', { attempt: ctx.attempt });
      if (ctx.attempt === 1) throw new Error('once');
    });
    const ns = t.client({ pipelines: [p] });
    const { run } = await ns.pipelines.start(p, 'k');
    await drain(ns);
    const d = await ns.pipelines.getRun('dbstore', 'k');
    expect(d.artifacts).toHaveLength(1);
    expect(d.artifacts[0]).toMatchObject({ store: 'database', attempt: 2, location: expect.stringMatching(/^blob:\d+$/) });
    // The failed attempt's blob was deleted when the run was published.
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pipeline_artifact_blobs WHERE run_id = $1`, [run.id])).rows[0].n).toBe(1);
    expect((await ns.pipelines.verify(p, 'k')).ok).toBe(true);
    await t.sql.query(`UPDATE ${q()}.pipeline_artifact_blobs SET content = 'tampered'::bytea WHERE run_id = $1`, [run.id]);
    expect((await ns.pipelines.verify(p, 'k')).artifacts.map((a) => a.status)).toEqual(['changed']);
  });
});

const settled = defineJob({ kind: 'settled', payload: z.object({}), run: async () => undefined });

describe('dry runs and cleanup', () => {
  it('skip effect steps (and what needs them), enqueue no follow-up, keep artifacts apart; cleanup removes them and calls the hook', async () => {
    const { store, root } = tempStore();
    const effects: string[] = [];
    const cleaned: string[] = [];
    const p = definePipeline({ name: 'dry', store })
      .step('settle', async (ctx) => {
        await ctx.artifact('result.json', { dry: ctx.dryRun });
        return ctx.dryRun;
      })
      .step('payout', { needs: ['settle'], effect: true }, async () => void effects.push('paid'))
      .step('receipt', { needs: ['payout'] }, async () => void effects.push('receipt'))
      .step('stats', { needs: ['settle'] }, async (ctx) => ctx.needs.settle)
      .onSuccess(settled)
      .cleanup(async (run, tx) => {
        cleaned.push(`${run.key}:${run.runId}`);
        await tx.query({ text: 'SELECT 1' });
      });
    const ns = t.client({ pipelines: [p], jobs: [settled] });
    const live = await ns.pipelines.start(p, 'k');
    const dry = await ns.pipelines.start(p, 'k', undefined, { dryRun: true });
    await drain(ns, { kinds: p.spec.steps.map((s) => s.kind) });
    const d = await ns.pipelines.getRun('dry', 'k', { dryRun: true });
    expect(d.state).toBe('succeeded');
    expect(Object.fromEntries(d.stepList.map((s) => [s.name, s.state]))).toEqual({ settle: 'succeeded', payout: 'skipped', receipt: 'skipped', stats: 'succeeded' });
    expect(d.stepList.find((s) => s.name === 'stats')!.output).toBe(true);
    expect(d.followUps).toEqual([]);
    expect((await ns.pipelines.getRun('dry', 'k')).followUps).toMatchObject([{ name: 'success:settled', error: null }]);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'settled'`)).rows[0].n).toBe(1);
    expect(d.artifacts[0]!.location).toBe(`dry/k/dry-run-${dry.run.id}/result.json`);
    // The live run of the key ran its effects, and its artifact is not the dry run's.
    expect(effects).toEqual(['paid', 'receipt']);
    expect(JSON.parse(readFileSync(join(root, 'dry', 'k', 'result.json'), 'utf8'))).toEqual({ dry: false });
    const r = await ns.pipelines.cleanup(p, 'k', { reason: 'dry run checked' });
    expect(r.removed).toEqual([dry.run.id]);
    expect(cleaned).toEqual([`k:${dry.run.id}`]);
    expect(existsSync(join(root, 'dry', 'k', `dry-run-${dry.run.id}`))).toBe(false);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pipeline_runs WHERE id = $1`, [dry.run.id])).rows[0].n).toBe(0);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pipeline_steps WHERE run_id = $1`, [dry.run.id])).rows[0].n).toBe(0);
    // The live run is untouched.
    expect((await ns.pipelines.getRun('dry', 'k')).id).toBe(live.run.id);
    expect(existsSync(join(root, 'dry', 'k', 'result.json'))).toBe(true);
    const audit = await t.sql.query(`SELECT action, reason FROM ${q()}.audit_log WHERE target = 'pipeline:dry:k' AND action = 'pipeline-cleanup'`);
    expect(audit.rows).toEqual([{ action: 'pipeline-cleanup', reason: 'dry run checked' }]);
  });

  it('refuses a live run, and a dry run still running, removing nothing', async () => {
    const p = definePipeline({ name: 'dry2', store: tempStore().store }).step('a', async () => 1);
    const ns = t.client({ pipelines: [p], jobs: [settled] });
    const live = await ns.pipelines.start(p, 'k');
    await drain(ns);
    const refused = await ns.pipelines.cleanup(p, 'k').catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'NS_PIPELINE_CLEANUP_REFUSED', message: expect.stringMatching(/has a live run .* and no dry run/) });
    await expect(ns.pipelines.cleanup(p, 'k', { runId: live.run.id })).rejects.toMatchObject({ code: 'NS_PIPELINE_CLEANUP_REFUSED' });
    await ns.pipelines.start(p, 'k', undefined, { dryRun: true });
    await expect(ns.pipelines.cleanup(p, 'k')).rejects.toMatchObject({ code: 'NS_PIPELINE_CLEANUP_REFUSED', message: expect.stringMatching(/is running: cancel it first/) });
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pipeline_runs WHERE pipeline = 'dry2'`)).rows[0].n).toBe(2);
  });
});

describe('retention', () => {
  it("deletes finished runs past their pipeline's retention, files first, and never a running one", async () => {
    const { store, root } = tempStore();
    const p = definePipeline({ name: 'keep', store, retention: 0 }).step('a', async (ctx) => void (await ctx.artifact('a.json', { a: 1 })));
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'old');
    await drain(ns);
    const running = await ns.pipelines.start(p, 'new');
    expect(existsSync(join(root, 'keep', 'old', 'a.json'))).toBe(true);
    expect(await ns.pipelines.sweep()).toMatchObject({ pruned: 1 });
    expect(existsSync(join(root, 'keep', 'old'))).toBe(false);
    expect((await ns.pipelines.listRuns({ pipeline: 'keep' })).map((r) => r.id)).toEqual([running.run.id]);
  });
});
