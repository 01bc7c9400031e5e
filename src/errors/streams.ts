/** Errors of Redis Streams. */
import { NightshiftError } from './base.js';

/** Redis could not be reached, or the connection dropped while a command was in flight. */
export class RedisUnavailableError extends NightshiftError {
  constructor(what: string, cause: unknown, hint?: string) {
    super('NS_REDIS_UNAVAILABLE', `${what}: Redis is unavailable (${cause instanceof Error ? cause.message : String(cause)})`, {
      cause,
      hint: hint ?? 'check redisUrl and that redis-server is running; the operation may be retried once it is back',
    });
  }
}

/** The Redis server is older than the oldest version the streams need (6.2). */
export class RedisVersionError extends NightshiftError {
  constructor(what: string, version: string, minimum: string) {
    super('NS_REDIS_VERSION', `${what}: Redis ${version} is too old; nightshift's streams need Redis ${minimum} or newer (XAUTOCLAIM, XGROUP CREATECONSUMER)`, {
      hint: `upgrade the server to Redis ${minimum}+ (7.x recommended); nothing was read or written`,
    });
  }
}

/** A stream consumer stopped handling an entry: the process is shutting down or lost the singleton's leadership. */
export class ConsumerStoppedError extends NightshiftError {
  constructor(consumer: string, why: string) {
    super('NS_CONSUMER_STOPPED', `stream consumer "${consumer}" stopped: ${why}`);
  }
}

/** A stream handler ran past its consumer's `timeoutMs`. */
export class StreamHandlerTimeoutError extends NightshiftError {
  constructor(consumer: string, timeoutMs: number) {
    super('NS_STREAM_HANDLER_TIMEOUT', `stream consumer "${consumer}": the handler ran past its timeout of ${timeoutMs} ms and was aborted`);
  }
}

/** Redis refused a command (a wrong key type, a missing group, a script error, …). */
export class RedisCommandError extends NightshiftError {
  constructor(what: string, cause: unknown) {
    super('NS_REDIS_COMMAND', `${what}: Redis refused the command (${cause instanceof Error ? cause.message : String(cause)})`, {
      cause,
      hint: 'a WRONGTYPE reply means the key holds something other than a stream; check the stream name',
    });
  }
}
