import { randomBytes } from 'node:crypto';
import type { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger, definePipeline, type NightshiftEvent } from '../../src/index.js';
import { drain } from '../../src/testing/index.js';
import { useTestDatabase } from '../support/db.js';
import { installTracing, uninstallTracing } from '../support/otel.js';
import { tempStore } from './support.js';

const t = useTestDatabase('plo');
t.migrateBeforeAll();
afterEach(() => uninstallTracing());

describe('pipelines: events, metrics, logs and traces', () => {
  it("emits the run and step events, counts them per pipeline, step and state, and keeps each step's log lines with the run", async () => {
    const p = definePipeline({ name: 'obs', store: tempStore().store, maxAttempts: 1 })
      .step('a', async (ctx) => {
        ctx.log.info({ rows: 3 }, 'loaded');
        return 1;
      })
      .step('b', { needs: ['a'], optional: true }, async () => {
        throw new Error('soft');
      });
    const ns = t.client({ pipelines: [p] });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    const metrics = ns.metrics();
    const { run } = await ns.pipelines.start(p, 'k');
    await drain(ns);
    const mine = events.filter((e) => e.type.startsWith('pipeline.')).map((e) => [e.type, 'step' in e ? e.step : '', 'state' in e ? e.state : '']);
    expect(mine).toEqual([
      ['pipeline.started', '', ''],
      ['pipeline.action', '', ''],
      ['pipeline.step-finished', 'a', 'succeeded'],
      ['pipeline.step-finished', 'b', 'failed'],
      ['pipeline.finished', '', 'succeeded'],
    ]);
    const text = await metrics.text();
    expect(text).toContain('nightshift_pipeline_runs_started_total{pipeline="obs"} 1');
    expect(text).toContain('nightshift_pipeline_runs_finished_total{pipeline="obs",state="succeeded"} 1');
    expect(text).toContain('nightshift_pipeline_steps_finished_total{pipeline="obs",step="b",state="failed"} 1');
    expect(text).toContain('nightshift_jobs_completed_total{kind="pipeline:obs:a",queue="default"} 1');
    const logs = await ns.pipelines.logs(run.id);
    expect(logs).toMatchObject([{ step: 'a', item: '', level: 'info', msg: 'loaded', fields: { pipeline: 'obs', runId: run.id, step: 'a', rows: 3 } }]);
  });

  it('puts every step attempt of a run in one trace', async () => {
    const exporter = installTracing() as InMemorySpanExporter;
    const p = definePipeline({ name: 'traced', store: tempStore().store })
      .step('a', async () => 1)
      .map('b', { needs: ['a'], items: () => [1, 2] }, async () => 2)
      .step('c', { needs: ['b'] }, async () => 3);
    const ns = t.client({ pipelines: [p] });
    await ns.pipelines.start(p, 'k');
    await drain(ns);
    const spans = exporter.getFinishedSpans();
    const root = spans.find((s) => s.name === 'pipeline traced')!;
    const attempts = spans.filter((s) => s.name === 'process default');
    expect(attempts).toHaveLength(5); // a, b's own job, two items, c
    expect(new Set(attempts.map((s) => s.spanContext().traceId))).toEqual(new Set([root.spanContext().traceId]));
  });

  it('never puts the key, the input or an output in logs, events or metrics', async () => {
    const tag = randomBytes(4).toString('hex');
    const canary = { key: `K${tag}`, input: `CANARY-INPUT-${tag}`, output: `CANARY-OUTPUT-${tag}`, error: `CANARY-ERROR-${tag}` };
    const lines: string[] = [];
    const logger = createLogger({ level: 'trace', destination: { write: (l: string) => lines.push(l) } });
    const p = definePipeline({ name: 'canary', input: z.object({ secret: z.string() }), store: tempStore().store, maxAttempts: 1 })
      .step('a', async (ctx) => ({ echoed: ctx.input.secret, out: canary.output }))
      .step('b', { needs: ['a'], optional: true }, async () => {
        throw new Error(`provider said ${canary.error}`);
      });
    const ns = t.client({ pipelines: [p], logger });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    const metrics = ns.metrics();
    await ns.pipelines.start(p, canary.key, { secret: canary.input });
    await drain(ns);
    expect((await ns.pipelines.getRun('canary', canary.key)).state).toBe('succeeded');
    const surfaces = { logs: lines.join('\n'), events: JSON.stringify(events), metrics: await metrics.text() };
    expect(surfaces.logs).toContain('pipeline.finished');
    for (const [where, text] of Object.entries(surfaces)) {
      for (const [what, value] of Object.entries(canary)) {
        // Step errors travel in events (like job.failed's) but never into log lines.
        if (what === 'error' && where === 'events') continue;
        expect(text.includes(value), `${what} canary in ${where}`).toBe(false);
      }
    }
  });
});
