import { context, INVALID_SPAN_CONTEXT, propagation, ProxyTracerProvider, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span } from '@opentelemetry/api';

/**
 * OpenTelemetry spans for jobs, following the messaging conventions: a PRODUCER span `send <queue>`
 * around an enqueue, whose W3C trace context is stored with the job, and a CONSUMER span
 * `process <queue>` per attempt, child of (and linked to) that context — across processes and
 * retries. Only `@opentelemetry/api` is used: without an SDK registered every call is a no-op.
 */
const TRACER = 'nightshift';

function tracer() {
  return trace.getTracer(TRACER);
}

/** The provider a ProxyTracerProvider delegates to while no SDK is registered (this copy of the API's no-op). */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate();

/** A span that records nothing, shared by every untraced job (all its methods are no-ops). */
export const UNTRACED_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/**
 * Whether tracing is off: no tracer provider and no propagator registered, so every span would be
 * a no-op and no context could be injected or extracted. Then the per-job span calls are skipped:
 * the profile of a drain showed them at ~7 % of the worker's CPU with no SDK at all. Asked per
 * call, so an SDK registered later is picked up. A provider registered through another copy of
 * the API counts as on.
 */
export function tracingOff(): boolean {
  const provider = trace.getTracerProvider();
  return provider instanceof ProxyTracerProvider && provider.getDelegate() === NOOP_PROVIDER && propagation.fields().length === 0;
}

/** Attributes common to both sides; never the payload. */
function attributes(kind: string, queue: string): Record<string, string> {
  return {
    'messaging.system': 'nightshift',
    'messaging.destination.name': queue,
    'nightshift.job.kind': kind,
  };
}

/** A producer span and the trace context to store with the job (null when nothing is traced). */
export interface ProducerTrace {
  span: Span;
  carrier: Record<string, string> | null;
}

/**
 * Starts the producer span of an enqueue, as a child of the active context, and returns the
 * context to store with the job. `explicit` (a caller-given trace context) is kept as is.
 */
export function startProducerSpan(kind: string, queue: string, explicit: string | null, batch?: number): ProducerTrace {
  if (tracingOff()) return { span: UNTRACED_SPAN, carrier: null };
  const span = tracer().startSpan(`send ${queue}`, {
    kind: SpanKind.PRODUCER,
    attributes: {
      ...attributes(kind, queue),
      'messaging.operation.type': 'send',
      'messaging.operation.name': 'send',
      ...(batch !== undefined ? { 'messaging.batch.message_count': batch } : {}),
    },
  });
  if (explicit !== null) return { span, carrier: null };
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  return { span, carrier: Object.keys(carrier).length > 0 ? carrier : null };
}

/** Ends a producer span with the job's id (or the error). */
export function endProducerSpan(span: Span, jobId: string | undefined, err?: unknown, errorMessages = false): void {
  if (jobId !== undefined) span.setAttribute('messaging.message.id', jobId);
  if (err !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: errorText(err, errorMessages) });
  span.end();
}

/** The consumer span of one attempt and the context to run the handler in. */
export interface ConsumerTrace {
  span: Span;
  context: Context;
}

/**
 * Starts the consumer span of an attempt: child of the stored producer context (same trace) and
 * linked to it, so an enqueue in one process and its runs in others show as one trace.
 */
export function startConsumerSpan(job: { id: string; kind: string; queue: string; attempt: number; traceContext: Record<string, string> | null }): ConsumerTrace {
  if (tracingOff()) return { span: UNTRACED_SPAN, context: ROOT_CONTEXT };
  const parent = job.traceContext ? propagation.extract(ROOT_CONTEXT, job.traceContext) : ROOT_CONTEXT;
  const producer = trace.getSpanContext(parent);
  const span = tracer().startSpan(
    `process ${job.queue}`,
    {
      kind: SpanKind.CONSUMER,
      attributes: {
        ...attributes(job.kind, job.queue),
        'messaging.operation.type': 'process',
        'messaging.operation.name': 'process',
        'messaging.message.id': job.id,
        'nightshift.job.attempt': job.attempt,
      },
      ...(producer ? { links: [{ context: producer }] } : {}),
    },
    parent,
  );
  return { span, context: trace.setSpan(parent, span) };
}

/** Ends a consumer span with the attempt's outcome. */
export function endConsumerSpan(span: Span, outcome: string, err?: unknown, errorMessages = false): void {
  span.setAttribute('nightshift.job.outcome', outcome);
  if (err !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: errorText(err, errorMessages) });
  span.end();
}

/** Runs `fn` with `ctx` active (so the handler's own spans are children of the consumer span). */
export function withContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

// An error's message may quote secrets; by default spans carry only its name and code.
function errorText(err: unknown, messages: boolean): string {
  const e = err as { name?: unknown; code?: unknown; message?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const name = typeof e?.name === 'string' ? e.name : 'Error';
  if (messages && typeof e?.message === 'string') return `${name}${code ? ` ${code}` : ''}: ${e.message}`;
  return code ? `${name} ${code}` : name;
}

/**
 * Starts (and ends) the span of a pipeline run's start, `pipeline <name>`, and returns its W3C
 * context to store with the run: every step job is enqueued with it, so each attempt's span is in
 * the run's trace. Null when nothing is traced.
 */
export function startPipelineSpan(pipeline: string): Record<string, string> | null {
  if (tracingOff()) return null;
  const span = tracer().startSpan(`pipeline ${pipeline}`, { kind: SpanKind.INTERNAL, attributes: { 'nightshift.pipeline.name': pipeline } });
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), carrier);
  span.end();
  return Object.keys(carrier).length > 0 ? carrier : null;
}
