import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';
import { tracingOff, UNTRACED_SPAN } from '../telemetry/tracing.js';
import type { StreamEntry } from './stream-entry.js';
import { PAYLOAD_FIELD } from './stream-entry.js';

/**
 * OpenTelemetry spans for streams, with the messaging conventions the jobs use: a PRODUCER span
 * `send <stream>` around a publish, whose W3C context travels in the entry's own fields, and a
 * CONSUMER span `process <stream>` per delivery, child of (and linked to) that context. Only
 * `@opentelemetry/api` is used: without an SDK every call is a no-op, and without a propagator no
 * trace field is written.
 */
const tracer = () => trace.getTracer('nightshift');

/** Starts the producer span of a publish; returns it and the trace fields to add to the entry. */
export function startPublishSpan(stream: string): { span: Span; fields: string[] } {
  if (tracingOff()) return { span: UNTRACED_SPAN, fields: [] };
  const span = tracer().startSpan(`send ${stream}`, {
    kind: SpanKind.PRODUCER,
    attributes: { 'messaging.system': 'redis', 'messaging.destination.name': stream, 'messaging.operation.type': 'send', 'messaging.operation.name': 'send' },
  });
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  const fields: string[] = [];
  // The payload field is the contract's; a propagator never legitimately names a field that way.
  for (const [k, v] of Object.entries(carrier)) if (k !== PAYLOAD_FIELD && typeof v === 'string') fields.push(k, v);
  return { span, fields };
}

/** Ends a producer span with the entry id (or the error's name and code — never its message, which may quote secrets). */
export function endPublishSpan(span: Span, id: string | undefined, err?: unknown): void {
  if (id !== undefined) span.setAttribute('messaging.message.id', id);
  if (err !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: errorName(err) });
  span.end();
}

/** Starts the consumer span of one delivery, in the trace the entry carries; returns it and the context to run the handler in. */
export function startProcessSpan(entry: StreamEntry, stream: string, group: string, deliveries: number): { span: Span; context: Context } {
  if (tracingOff()) return { span: UNTRACED_SPAN, context: ROOT_CONTEXT };
  const parent = entryContext(entry);
  const producer = trace.getSpanContext(parent);
  const span = tracer().startSpan(
    `process ${stream}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        'messaging.system': 'redis',
        'messaging.destination.name': stream,
        'messaging.consumer.group.name': group,
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.message.id': entry.id,
        'nightshift.stream.deliveries': deliveries,
      },
      ...(producer ? { links: [{ context: producer }] } : {}),
    },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/** Ends a consumer span with the delivery's outcome. */
export function endProcessSpan(span: Span, outcome: string, err?: unknown): void {
  span.setAttribute('nightshift.stream.outcome', outcome);
  if (err !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: errorName(err) });
  span.end();
}

/** The trace context an entry carries in its own fields (W3C `traceparent`/`tracestate` by default). */
export function entryContext(entry: StreamEntry): Context {
  if (!entry.fields || entry.fields.size <= 1) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, entry.fields, {
    get: (carrier, key) => carrier.get(key),
    keys: (carrier) => [...carrier.keys()].filter((k) => k !== PAYLOAD_FIELD),
  });
}

function errorName(err: unknown): string {
  const e = err as { name?: unknown; code?: unknown } | null;
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  return typeof e?.code === 'string' ? `${name} ${e.code}` : name;
}
