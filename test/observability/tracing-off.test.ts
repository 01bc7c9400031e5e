import { trace } from '@opentelemetry/api';
import type { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { tracingOff } from '../../src/telemetry/tracing.js';
import { useTestDatabase } from '../support/db.js';
import { installTracing, uninstallTracing } from '../support/otel.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();
afterEach(() => uninstallTracing());

describe('tracing with no OpenTelemetry SDK registered', () => {
  it('is off while nothing is registered, on while an SDK is, and off again once it is removed', () => {
    expect(tracingOff()).toBe(true);
    installTracing();
    expect(tracingOff()).toBe(false);
    uninstallTracing();
    expect(tracingOff()).toBe(true);
  });

  it('a job enqueued and run while off stores no trace context; one enqueued after registering an SDK is traced', async () => {
    const seen: Array<string | undefined> = [];
    const job = defineJob({
      kind: 'maybe-traced',
      payload: z.object({ n: z.number() }),
      run: async () => {
        seen.push(trace.getActiveSpan()?.spanContext().traceId);
      },
    });
    const ns = t.client({ jobs: [job], pollIntervalMs: 50 });
    const untraced = await ns.enqueue(job, { n: 1 });
    await ns.start();
    await waitFor('the untraced job ran', () => seen.length === 1);
    const row = await t.sql.query(`SELECT trace_context FROM "${t.schema}".jobs_all WHERE id = $1`, [untraced.id]);
    expect(row.rows[0].trace_context).toBeNull();

    const exporter = installTracing() as InMemorySpanExporter;
    const traced = await ns.enqueue(job, { n: 2 });
    await waitFor('the traced job ran', () => seen.length === 2);
    const stored = await t.sql.query(`SELECT trace_context FROM "${t.schema}".jobs_all WHERE id = $1`, [traced.id]);
    expect(stored.rows[0].trace_context).toHaveProperty('traceparent');
    const producer = exporter.getFinishedSpans().find((s) => s.name === 'send default');
    expect(producer).toBeDefined();
    await waitFor('the consumer span ended', () => exporter.getFinishedSpans().some((s) => s.name === 'process default'));
    expect(seen[1]).toBe(producer!.spanContext().traceId);
  });
});
