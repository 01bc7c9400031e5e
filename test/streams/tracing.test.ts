import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConsumer } from '../../src/streams/define-consumer.js';
import { defineStream } from '../../src/streams/define-stream.js';
import { LocalContextManager } from '../support/otel.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { fieldsOf, useStreams } from './harness.js';

describeWithRedis('tracing through a stream', () => {
  const redis = useRedisServer();
  const t = useStreams(redis.server);
  const exporter = new InMemorySpanExporter();

  beforeEach(() => {
    exporter.reset();
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    context.setGlobalContextManager(new LocalContextManager());
  });
  afterEach(() => {
    trace.disable();
    propagation.disable();
    context.disable();
  });

  it('a publish is a PRODUCER span whose context travels in traceparent; each delivery is a CONSUMER span in the same trace', async () => {
    const stream = defineStream({ name: t.name('traced'), payload: z.object({ n: z.number() }) });
    const runner = t.runner({
      consumers: [
        defineConsumer({
          stream,
          group: 'g',
          handler: () => {
            trace.getTracer('app').startSpan('apply update').end();
          },
        }),
      ],
    });
    await runner.start();
    const request = trace.getTracer('app').startSpan('POST /bets/orders');
    const { id } = await context.with(trace.setSpan(context.active(), request), () => t.client().publish(stream, { n: 1 }));
    request.end();
    await waitFor('the handler span', () => exporter.getFinishedSpans().some((s) => s.name === 'apply update'));
    await waitFor('the consumer span', () => exporter.getFinishedSpans().some((s) => s.name === `process ${stream.name}`));

    const spans = exporter.getFinishedSpans();
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const send = byName(`send ${stream.name}`);
    const process = byName(`process ${stream.name}`);
    const handler = byName('apply update');
    const traceId = request.spanContext().traceId;
    expect([send, process, handler].map((s) => s.spanContext().traceId)).toEqual([traceId, traceId, traceId]);
    expect(send.kind).toBe(SpanKind.PRODUCER);
    expect(send.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
    expect(send.attributes).toMatchObject({ 'messaging.system': 'redis', 'messaging.destination.name': stream.name, 'messaging.message.id': id });
    expect(process.kind).toBe(SpanKind.CONSUMER);
    expect(process.parentSpanContext?.spanId).toBe(send.spanContext().spanId);
    expect(process.links.map((l) => l.context.spanId)).toEqual([send.spanContext().spanId]);
    expect(process.attributes).toMatchObject({ 'messaging.consumer.group.name': 'g', 'messaging.message.id': id, 'nightshift.stream.outcome': 'handled' });
    expect(handler.parentSpanContext?.spanId).toBe(process.spanContext().spanId);

    const entries = (await t.redis().xrange(stream.name, '-', '+')) as [string, string[]][];
    expect(fieldsOf(entries[0]![1]).traceparent).toBe(`00-${traceId}-${send.spanContext().spanId}-01`);
  });
});
