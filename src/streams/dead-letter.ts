import { cleanText } from '../jobs/error-text.js';
import type { ConsumerScope } from './consumer-scope.js';
import { DEAD_LETTER } from './redis-scripts.js';
import { PAYLOAD_FIELD, type StreamEntry } from './stream-entry.js';

/**
 * Why an entry was dead-lettered:
 * - `failed`: the handler threw on its last allowed delivery (at-most-once: on its only one);
 * - `undeliverable`: delivered `maxDeliveries` times without an ack or a recorded failure (the
 *   consumers died or lost their connection while handling it — a poison message that crashes);
 * - `invalid-payload`: no `payload` field, not JSON, or not matching the stream's schema;
 * - `expired`: older than `maxAgeMs` and the consumer has no `onExpired`;
 * - `abandoned`: at-most-once, read by a consumer that died before its handler started (never
 *   handled), or inside its handler (then `onAbandoned` ran first, when the consumer has one);
 * - `interrupted`: at-most-once, its handler was aborted by shutdown or loss of leadership.
 */
export type DeadLetterReason = 'failed' | 'undeliverable' | 'invalid-payload' | 'expired' | 'abandoned' | 'interrupted';

/**
 * The Redis hash of an at-most-once group's entries whose handler has started and not finished
 * (entry id → consumer): how a sweep tells "died before handling" from "died inside the handler".
 */
export function startedSetKey(def: { stream: { name: string }; group: string }): string {
  return `${def.stream.name}:started:${def.group}`;
}

/** Field names of a dead-letter record (the original payload stays in `payload`). */
export const DEAD_LETTER_FIELDS = ['payload', 'source-stream', 'source-id', 'group', 'consumer', 'deliveries', 'reason', 'error'] as const;

/**
 * Moves an entry to the consumer's dead-letter stream with its error, and acks it, atomically. With
 * `requireAck`, the record is written only if this ack took the entry out of the pending list, so an
 * entry is dead-lettered once even when two consumers race. Returns whether it was written.
 */
export async function deadLetter(scope: ConsumerScope, entry: StreamEntry, deliveries: number, reason: DeadLetterReason, error: string, requireAck: boolean): Promise<boolean> {
  const { def } = scope;
  const text = cleanText(error, 4_000);
  const fields: string[] = [
    PAYLOAD_FIELD,
    entry.fields?.get(PAYLOAD_FIELD) ?? '',
    'source-stream',
    def.stream.name,
    'source-id',
    entry.id,
    'group',
    def.group,
    'consumer',
    scope.consumer,
    'deliveries',
    String(deliveries),
    'reason',
    reason,
    'error',
    text,
  ];
  const written = await DEAD_LETTER.run(scope.conn.redis, [def.stream.name, def.deadLetterStream, startedSetKey(def)], [def.group, entry.id, requireAck ? '1' : '0', ...fields]);
  if (Number(written) !== 1) return false;
  scope.events.emit({
    type: 'stream.dead-lettered',
    stream: def.stream.name,
    group: def.group,
    consumer: scope.consumer,
    id: entry.id,
    deliveries,
    reason,
    error: text,
    deadLetterStream: def.deadLetterStream,
  });
  return true;
}
