import { context, type Context } from '@opentelemetry/api';
import { ConsumerStoppedError, PayloadInvalidError, StreamHandlerTimeoutError } from '../errors.js';
import { describeError } from '../jobs/error-text.js';
import type { ConsumerScope, InFlightEntry } from './consumer-scope.js';
import { deadLetter, startedSetKey } from './dead-letter.js';
import type { ConsumerContext, ConsumerHandler } from './define-consumer.js';
import { errorText } from './redis-connection.js';
import { FINISH_HANDLER, START_HANDLER } from './redis-scripts.js';
import { entryTimeMs, PAYLOAD_FIELD, type StreamEntry } from './stream-entry.js';
import { parseStreamPayload } from './stream-payload.js';
import { endProcessSpan, startProcessSpan } from './stream-tracing.js';

/**
 * Handles one delivered entry by the consumer's delivery rule:
 *
 * - at-most-once: the handler's start is recorded first (START_HANDLER), only while this consumer
 *   still owns the pending entry, so no path hands the same entry to a handler twice; the entry
 *   stays pending (kept fresh) until the handler returns, then XACK. A failure is dead-lettered;
 *   a process that dies inside the handler leaves the entry to be recorded as abandoned.
 * - at-least-once: the handler runs, then XACK. A failure leaves the entry pending, to be taken
 *   over after `claimIdleMs`; on the last allowed delivery it is dead-lettered instead.
 *
 * Entries older than `maxAgeMs` (by their id's time on Redis's clock) go to `onExpired`, or to the
 * dead-letter stream when there is none. Entries whose payload cannot be parsed are dead-lettered
 * at once: no retry would fix them. Never throws; problems become events.
 */
export async function handleEntry(scope: ConsumerScope, rec: InFlightEntry): Promise<void> {
  const { def, events } = scope;
  const { entry, deliveries } = rec;
  const base = { stream: def.stream.name, group: def.group, consumer: scope.consumer, id: entry.id, deliveries };
  const atMostOnce = def.delivery === 'at-most-once';
  try {
    if (entry.fields === null) {
      // Deleted (trimmed) while pending: nothing to handle, only the pending record to clear.
      await ack(scope, entry.id);
      return;
    }
    if (atMostOnce) {
      let started: boolean;
      try {
        started = await startHandler(scope, entry.id);
      } catch (err) {
        // Not started, so not handled: the entry stays pending and is dead-lettered as abandoned later.
        events.emit({ type: 'stream.error', ...streamFields(scope), where: 'start before handling', error: errorText(err) });
        return;
      }
      if (!started) return; // No longer ours (dead-lettered as abandoned meanwhile): not ours to handle.
    }

    let payload: unknown;
    try {
      payload = await decode(scope, entry.fields);
    } catch (err) {
      await deadLetter(scope, entry, deliveries, 'invalid-payload', describeError(err).message, true);
      return;
    }

    const publishedAtMs = entryTimeMs(entry.id);
    const ageMs = Math.max(0, scope.conn.redisNow() - publishedAtMs);
    const expired = def.maxAgeMs !== undefined && ageMs > def.maxAgeMs;
    if (expired) {
      events.emit({ type: 'stream.expired', ...base, ageMs });
      if (!def.onExpired) {
        await deadLetter(scope, entry, deliveries, 'expired', `older than maxAgeMs (${def.maxAgeMs} ms): ${ageMs} ms`, true);
        return;
      }
    }

    const started = Date.now();
    const handler = (expired ? def.onExpired : def.handler) as ConsumerHandler<typeof def.stream.schema>;
    const trace = startProcessSpan(entry, def.stream.name, def.group, deliveries);
    const outcome = await run(scope, rec, handler, payload, publishedAtMs, ageMs, trace.context);
    const durationMs = Date.now() - started;
    endProcessSpan(trace.span, outcome.ok ? (expired ? 'expired' : 'handled') : outcome.interrupted ? 'interrupted' : 'failed', outcome.ok ? undefined : outcome.error);

    if (outcome.ok) {
      await (atMostOnce ? finishHandler(scope, entry.id) : ack(scope, entry.id));
      events.emit({ type: 'stream.handled', ...base, durationMs, expired });
      return;
    }
    const error = describeError(outcome.error).message;
    if (outcome.interrupted) {
      rec.interrupted = true;
      if (atMostOnce) {
        events.emit({ type: 'stream.failed', ...base, durationMs, error, willRetry: false });
        await deadLetter(scope, entry, deliveries, 'interrupted', error, true);
      }
      // At-least-once: handed back by the consumer's stop.
      return;
    }
    const last = atMostOnce || deliveries >= def.maxDeliveries;
    events.emit({ type: 'stream.failed', ...base, durationMs, error, willRetry: !last });
    if (last) await deadLetter(scope, entry, deliveries, 'failed', error, true);
  } catch (err) {
    // Redis failed under us (ack, dead letter). At-least-once: the entry stays pending and is taken over.
    events.emit({ type: 'stream.error', ...streamFields(scope), where: `entry ${entry.id}`, error: errorText(err) });
  } finally {
    rec.finished = true;
  }
}

/**
 * At-most-once: runs `onAbandoned` for an entry whose handler started on a consumer that died,
 * inside this consumer's scope (the sweep owns the pending entry now). True when it returned; a
 * failure is an event, and the entry stays pending for the next sweep to try again.
 */
export async function recoverAbandoned(scope: ConsumerScope, entry: StreamEntry): Promise<boolean> {
  const { def, events } = scope;
  const rec: InFlightEntry = { entry, deliveries: 1, controller: new AbortController(), finished: false, interrupted: false };
  const base = { stream: def.stream.name, group: def.group, consumer: scope.consumer, id: entry.id, deliveries: 1 };
  const started = Date.now();
  try {
    const payload = await decode(scope, entry.fields!);
    const publishedAtMs = entryTimeMs(entry.id);
    const trace = startProcessSpan(entry, def.stream.name, def.group, 1);
    const outcome = await run(scope, rec, def.onAbandoned as ConsumerHandler<typeof def.stream.schema>, payload, publishedAtMs, Math.max(0, scope.conn.redisNow() - publishedAtMs), trace.context);
    endProcessSpan(trace.span, outcome.ok ? 'recovered' : 'failed', outcome.ok ? undefined : outcome.error);
    if (outcome.ok) return true;
    events.emit({ type: 'stream.failed', ...base, durationMs: Date.now() - started, error: `onAbandoned: ${describeError(outcome.error).message}`, willRetry: true });
  } catch (err) {
    events.emit({ type: 'stream.failed', ...base, durationMs: Date.now() - started, error: `onAbandoned: ${describeError(err).message}`, willRetry: true });
  }
  return false;
}

/** Stream, group and consumer, for events. */
export function streamFields(scope: ConsumerScope) {
  return { stream: scope.def.stream.name, group: scope.def.group, consumer: scope.consumer };
}

async function startHandler(scope: ConsumerScope, id: string): Promise<boolean> {
  return Number(await START_HANDLER.run(scope.conn.redis, [scope.def.stream.name, startedSetKey(scope.def)], [scope.def.group, scope.consumer, id])) === 1;
}

async function finishHandler(scope: ConsumerScope, id: string): Promise<number> {
  return Number(await FINISH_HANDLER.run(scope.conn.redis, [scope.def.stream.name, startedSetKey(scope.def)], [scope.def.group, id]));
}

async function ack(scope: ConsumerScope, id: string): Promise<number> {
  return Number(await scope.conn.redis.call('XACK', scope.def.stream.name, scope.def.group, id));
}

async function decode(scope: ConsumerScope, fields: ReadonlyMap<string, string>): Promise<unknown> {
  const name = scope.def.stream.name;
  const raw = fields.get(PAYLOAD_FIELD);
  if (raw === undefined) {
    throw new PayloadInvalidError(name, [{ path: 'payload', message: `the entry has no "payload" field (it has: ${[...fields.keys()].join(', ') || 'none'})` }], 'stream');
  }
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw new PayloadInvalidError(name, [{ path: 'payload', message: `is not JSON: ${errorText(err)}` }], 'stream');
  }
  return parseStreamPayload(scope.def.stream, value);
}

type Outcome = { ok: true } | { ok: false; error: unknown; interrupted: boolean };

/** Runs the handler in the entry's trace context, bounded by its timeout, shutdown and the singleton's term. */
async function run(
  scope: ConsumerScope,
  rec: InFlightEntry,
  handler: ConsumerHandler<typeof scope.def.stream.schema>,
  payload: unknown,
  publishedAtMs: number,
  ageMs: number,
  traceContext: Context,
): Promise<Outcome> {
  const { def } = scope;
  const signals = [rec.controller.signal];
  if (scope.term) signals.push(scope.term.signal);
  const signal = signals.length === 1 ? rec.controller.signal : AbortSignal.any(signals);
  const ctx: ConsumerContext = {
    id: rec.entry.id,
    stream: def.stream.name,
    group: def.group,
    consumer: scope.consumer,
    deliveries: rec.deliveries,
    publishedAtMs,
    ageMs,
    signal,
    fencingToken: scope.term?.token,
    leaseName: scope.leaseName,
    log: scope.logger.child({ stream: def.stream.name, group: def.group, entryId: rec.entry.id }),
    publish: (stream, p) => scope.publish(stream, p),
  };
  let timer: NodeJS.Timeout | undefined;
  if (def.timeoutMs !== undefined) {
    timer = setTimeout(() => rec.controller.abort(new StreamHandlerTimeoutError(def.name, def.timeoutMs!)), def.timeoutMs);
  }
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<Outcome>((resolve) => {
    onAbort = () => {
      const reason: unknown = signal.reason ?? new ConsumerStoppedError(def.name, 'aborted');
      resolve({ ok: false, error: reason, interrupted: !(reason instanceof StreamHandlerTimeoutError) });
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    // The handler is raced against its signal: a handler that ignores the signal cannot hold a slot
    // (or a shutdown) past its timeout or grace period.
    const work = (async (): Promise<Outcome> => {
      try {
        await context.with(traceContext, () => handler(payload, ctx));
        return { ok: true };
      } catch (error) {
        return { ok: false, error, interrupted: signal.aborted && !(signal.reason instanceof StreamHandlerTimeoutError) };
      }
    })();
    return await Promise.race([work, aborted]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
