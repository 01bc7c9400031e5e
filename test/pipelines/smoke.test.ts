import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { definePipeline, directoryStore } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase('pl');
t.migrateBeforeAll();

describe('pipelines smoke', () => {
  it('runs three steps and a fan-out to one recorded output each', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ns-art-'));
    const p = definePipeline({ name: 'smoke', key: z.string(), store: directoryStore({ root }) })
      .step('a', async (ctx) => ({ n: 3, key: ctx.key }))
      .map('b', { needs: ['a'], items: ({ a }) => Array.from({ length: a.n }, (_, i) => i), itemKey: (i) => `i${i}` }, async (_ctx, i) => i * 10)
      .step('c', { needs: ['b'] }, async (ctx) => {
        const f = await ctx.artifact('sum.json', { sum: ctx.needs.b.reduce((s, r) => s + r.value, 0) });
        return { sum: ctx.needs.b.reduce((s, r) => s + r.value, 0), sha: f.sha256 };
      });
    const ns = t.client({ pipelines: [p], pollIntervalMs: 50, maintenanceIntervalMs: 200 });
    ns.on((e) => { if (e.type.startsWith('pipeline') || e.type.startsWith('job.') || e.type === 'worker.error') console.log(JSON.stringify(e)); });
    await ns.start();
    const { run, created } = await ns.pipelines.start(p, 'k1');
    expect(created).toBe(true);
    await waitFor('the run to end', async () => (await ns.pipelines.getRun('smoke', 'k1')).state !== 'running');
    const d = await ns.pipelines.getRun('smoke', 'k1');
    expect(d.state, JSON.stringify(d, null, 1)).toBe('succeeded');
    expect(d.stepList.find((s) => s.name === 'c')!.output).toMatchObject({ sum: 30 });
    expect(d.artifacts.map((a) => a.name)).toEqual(['sum.json']);
    expect(run.id).toBe(d.id);
    const v = await ns.pipelines.verify(p, 'k1');
    expect(v.ok).toBe(true);
  });
});
