import { randomBytes } from 'node:crypto';

/**
 * The seed's cross-service rule, trace_id = intent_id: an intent id is a UUID, whose 32 hex digits
 * are a W3C trace id. Every job of an intent (outbox, PSP, publishing) is enqueued with this trace
 * context, so its spans and log lines (`traceId`) join the API request's trace in any process.
 */
export function intentTrace(intentId: string): { traceparent: string } {
  return { traceparent: `00-${traceIdOf(intentId)}-${randomBytes(8).toString('hex')}-01` };
}

/** The trace id of an intent. */
export function traceIdOf(intentId: string): string {
  return intentId.replace(/-/g, '').toLowerCase();
}
