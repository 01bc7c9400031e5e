import { SpanKind, trace } from '@opentelemetry/api';
import type { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { installTracing, uninstallTracing } from '../support/otel.js';
import { startScript } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();
let exporter: InMemorySpanExporter;

beforeEach(() => {
  exporter = installTracing() as InMemorySpanExporter;
});
afterEach(() => uninstallTracing());

const spans = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('OpenTelemetry spans', () => {
  it('an enqueue is a PRODUCER span under the caller, each attempt a CONSUMER span in the same trace, linked to it', async () => {
    let attempts = 0;
    const job = defineJob({
      kind: 'traced-local',
      payload: z.object({ n: z.number() }),
      queue: 'tq',
      backoff: () => 0,
      run: async () => {
        trace.getTracer('app').startSpan('handler work').end();
        if (++attempts === 1) throw new Error('first attempt fails');
      },
    });
    const ns = t.client({ jobs: [job], pollIntervalMs: 50 });
    const app = trace.getTracer('app');
    const { id } = await app.startActiveSpan('http POST /orders', async (span) => {
      try {
        return await ns.enqueue(job, { n: 1 });
      } finally {
        span.end();
      }
    });
    await ns.start();
    await waitFor('two consumer spans', () => spans('process tq').length === 2);
    const [request] = spans('http POST /orders');
    const [producer] = spans('send tq');
    expect(producer!.kind).toBe(SpanKind.PRODUCER);
    expect(producer!.spanContext().traceId).toBe(request!.spanContext().traceId);
    expect(parentOf(producer!)).toBe(request!.spanContext().spanId);
    expect(producer!.attributes).toMatchObject({ 'messaging.system': 'nightshift', 'messaging.destination.name': 'tq', 'messaging.message.id': id, 'nightshift.job.kind': 'traced-local' });
    const consumers = spans('process tq').sort((a, b) => Number(a.attributes['nightshift.job.attempt']) - Number(b.attributes['nightshift.job.attempt']));
    for (const c of consumers) {
      expect(c.kind).toBe(SpanKind.CONSUMER);
      expect(c.spanContext().traceId).toBe(producer!.spanContext().traceId);
      expect(parentOf(c)).toBe(producer!.spanContext().spanId);
      expect(c.links.map((l) => l.context.spanId)).toEqual([producer!.spanContext().spanId]);
      expect(c.attributes['messaging.message.id']).toBe(id);
    }
    expect(consumers.map((c) => [c.attributes['nightshift.job.attempt'], c.attributes['nightshift.job.outcome']])).toEqual([
      [1, 'retry'],
      [2, 'completed'],
    ]);
    // The handler's own spans are children of its attempt's consumer span.
    const work = spans('handler work');
    expect(work.map(parentOf).sort()).toEqual(consumers.map((c) => c.spanContext().spanId).sort());
  });

  it('links an enqueue in this process to the run in another process', async () => {
    const job = defineJob({ kind: 'traced', payload: z.object({ n: z.number() }), queue: 'traced', run: async () => undefined });
    const producerClient = t.client({ jobs: [job] });
    await producerClient.migrate();
    const proc = startScript('test/fixtures/traced-worker.ts', { DATABASE_URL: t.url, NS_SCHEMA: t.schema });
    try {
      await proc.waitForLine('ready');
      const { id } = await producerClient.enqueue(job, { n: 7 });
      await proc.waitForLine('"name":"process traced"');
      const remote = proc
        .output()
        .split('\n')
        .filter((l) => l.startsWith('span '))
        .map((l) => JSON.parse(l.slice(5)) as { name: string; traceId: string; parent: string; links: string[]; attributes: Record<string, unknown> })
        .find((s) => s.name === 'process traced')!;
      const [producer] = spans('send traced');
      expect(remote.traceId).toBe(producer!.spanContext().traceId);
      expect(remote.parent).toBe(producer!.spanContext().spanId);
      expect(remote.links).toEqual([producer!.spanContext().spanId]);
      expect(remote.attributes['messaging.message.id']).toBe(id);
    } finally {
      proc.kill('SIGTERM');
      await proc.exited;
    }
  });

  it('continues a trace passed to the SQL enqueue function', async () => {
    const job = defineJob({ kind: 'traced-sql', payload: z.object({}), queue: 'tsql', run: async () => undefined });
    const ns = t.client({ jobs: [job] });
    await ns.migrate();
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await t.sql.query(`SELECT "${t.schema}".enqueue('traced-sql', '{}', trace_context => $1::jsonb)`, [JSON.stringify({ traceparent })]);
    await ns.start();
    await waitFor('the consumer span', () => spans('process tsql').length === 1);
    const [c] = spans('process tsql');
    expect(c!.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(parentOf(c!)).toBe('b7ad6b7169203331');
  });
});
