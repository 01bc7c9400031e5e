import { RedisCommandError, RedisUnavailableError } from '../errors.js';
import { serialisePayload } from '../jobs/payload.js';
import type { EventBus } from '../telemetry/events.js';
import type { StreamDefinition } from './define-stream.js';
import { entryFields } from './stream-entry.js';
import { isConnectionError, type RedisConnection } from './redis-connection.js';

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
export async function publishEntry(
  connection: () => RedisConnection | Promise<RedisConnection>,
  stream: StreamDefinition, payload: unknown,
  events: EventBus | undefined,
): Promise<PublishResult> {
  const json = await serialisePayload(stream.name, stream.schema, payload, stream.maxPayloadBytes);
  const args: (string | number)[] = [stream.name];
  if (stream.maxLength !== undefined) args.push('MAXLEN', '~', stream.maxLength);
  args.push('*', ...entryFields(json));
  const conn = await connection();
  let id: string;
  try {
    id = String(await conn.redis.call('XADD', ...args));
  } catch (err) {
    if (isConnectionError(err)) {
      throw new RedisUnavailableError(
        `publishing to stream "${stream.name}"`,
        err,
        'if the connection dropped after the command was sent, the entry may have been added; retry only if a duplicate is acceptable to the consumers',
      );
    }
    throw new RedisCommandError(`publishing to stream "${stream.name}"`, err);
  }
  events?.emit({ type: 'stream.published', stream: stream.name, id });
  return { id };
}
