import { RedisCommandError, RedisUnavailableError } from '../errors.js';
import type { EventBus } from '../telemetry/events.js';
import type { StreamDefinition } from './define-stream.js';
import { isConnectionError, type RedisConnection } from './redis-connection.js';
import { PAYLOAD_FIELD } from './stream-entry.js';
import { serialiseStreamPayload } from './stream-payload.js';
import { endPublishSpan, startPublishSpan } from './stream-tracing.js';

/** What a publish returns. */
export interface PublishResult {
  /** The entry's id, `<unix-ms>-<seq>`, assigned by Redis. */
  readonly id: string;
}

/**
 * Validates a payload against the stream's schema and adds it: `XADD <stream> [MAXLEN ~ n] *
 * payload <json> [traceparent …]`. Nothing is written on invalid input (NS_PAYLOAD_INVALID,
 * NS_PAYLOAD_TOO_LARGE). A connection lost while the command was in flight rejects with
 * NS_REDIS_UNAVAILABLE and is not re-sent, because the entry may already have been added.
 */
export async function publishEntry(connection: () => RedisConnection | Promise<RedisConnection>, stream: StreamDefinition, payload: unknown, events: EventBus | undefined): Promise<PublishResult> {
  const json = await serialiseStreamPayload(stream, payload);
  const args: (string | number)[] = [stream.name];
  if (stream.maxLength !== undefined) args.push('MAXLEN', '~', stream.maxLength);
  const conn = await connection();
  const { span, fields } = startPublishSpan(stream.name);
  args.push('*', PAYLOAD_FIELD, json, ...fields);
  let id: string;
  try {
    id = String(await conn.redis.call('XADD', ...args));
  } catch (err) {
    endPublishSpan(span, undefined, err);
    if (isConnectionError(err)) {
      throw new RedisUnavailableError(
        `publishing to stream "${stream.name}"`,
        err,
        'if the connection dropped after the command was sent, the entry may have been added; retry only if a duplicate is acceptable to the consumers',
      );
    }
    throw new RedisCommandError(`publishing to stream "${stream.name}"`, err);
  }
  endPublishSpan(span, id);
  events?.emit({ type: 'stream.published', stream: stream.name, id });
  return { id };
}
