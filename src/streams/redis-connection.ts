import { createRequire } from 'node:module';
import type { Redis } from 'ioredis';

// ioredis is loaded on first use (about 11 MB): a process that never touches streams does not pay for it.
let RedisClass: typeof Redis | undefined;
function redisClass(): typeof Redis {
  RedisClass ??= (createRequire(import.meta.url)('ioredis') as { Redis: typeof Redis }).Redis;
  return RedisClass;
}
import { RedisUnavailableError, RedisVersionError } from '../errors.js';
import { trackResource } from '../lifecycle/resources.js';
import type { EventBus } from '../telemetry/events.js';

/** The oldest Redis the streams run on: XAUTOCLAIM and XGROUP CREATECONSUMER came with 6.2. */
export const MIN_REDIS_VERSION = '6.2.0';

/** The `redis_version` of an `INFO server` reply, or undefined when the reply has none. */
export function redisVersionOf(info: string): string | undefined {
  return /^redis_version:([^\r\n]+)/m.exec(info)?.[1]?.trim();
}

/**
 * Whether a `redis_version` is older than {@link MIN_REDIS_VERSION}. A version that is not
 * `major.minor[.patch]` is not judged (a compatible server that reports something else is let
 * through; a missing command then fails where it is used).
 */
export function redisTooOld(version: string): boolean {
  const m = /^(\d+)\.(\d+)(?:\.(\d+))?/.exec(version);
  if (!m) return false;
  const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
  const [minMajor, minMinor, minPatch] = MIN_REDIS_VERSION.split('.').map(Number) as [number, number, number];
  if (major !== minMajor) return major < minMajor;
  if (minor !== minMinor) return minor < minMinor;
  return patch < minPatch;
}

/** Whether a string is a Redis URL nightshift can connect to. */
export function redisUrlProblem(url: unknown): string | undefined {
  if (typeof url !== 'string' || url === '') return 'must be a Redis URL such as redis://127.0.0.1:6379';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a valid URL; use redis://[user:password@]host:port[/db] or rediss:// for TLS';
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') return `protocol "${parsed.protocol}" is not supported; use redis:// or rediss://`;
  // The client would read /x as database 0 without a word.
  if (parsed.pathname !== '' && parsed.pathname !== '/' && !/^\/\d{1,5}$/.test(parsed.pathname)) {
    return `database "${parsed.pathname.slice(1)}" is not a database number; use redis://host:port/<number>`;
  }
  return undefined;
}

/**
 * One connection to Redis with nightshift's policy, tracked as a resource:
 *
 * - A command in flight when the connection drops is rejected, never re-sent: re-sending an
 *   `XADD` whose reply was lost would add the entry twice (`autoResendUnfulfilledCommands: false`,
 *   and `maxRetriesPerRequest: 0`, which is what makes ioredis reject rather than forget it).
 * - Reconnects forever with a capped backoff; callers wait for `ready` instead of failing.
 * - Learns Redis's clock at every connect, so entry ages are measured on the clock that stamped
 *   the entry ids, whatever this host's clock says.
 */
export class RedisConnection {
  readonly redis: Redis;
  private offsetMs = 0;
  private lost = false;
  private closed = false;
  private release: (() => void) | undefined;
  private lastError: Error | undefined;

  constructor(
    url: string,
    readonly label: string,
    private readonly events: EventBus | undefined,
    options: { connectTimeoutMs?: number; autoPipelining?: boolean } = {},
  ) {
    const RedisCtor = redisClass();
    this.redis = new RedisCtor(url, {
      lazyConnect: true,
      connectionName: label.replace(/[^\x21-\x7e]/g, '_').slice(0, 100),
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      enableOfflineQueue: true,
      enableReadyCheck: true,
      connectTimeout: options.connectTimeoutMs ?? 10_000,
      // Commands issued in one turn of the event loop (the acks of handlers that finished
      // together, concurrent publishes) go to Redis in one write. Each is still sent in the turn
      // it is issued and answered on its own: no loss window widens. Never on a connection that
      // blocks (XREADGROUP BLOCK), where a batch would wait behind the blocking read.
      enableAutoPipelining: options.autoPipelining ?? false,
      // 50 ms doubling to 2 s, with jitter so a fleet does not reconnect in lockstep.
      retryStrategy: (times) => Math.round(Math.min(2_000, 50 * 2 ** Math.min(times, 6)) * (0.8 + Math.random() * 0.4)),
    });
    this.redis.on('error', (err: Error) => {
      this.lastError = err;
    });
    this.redis.on('close', () => {
      if (this.closed || this.lost) return;
      this.lost = true;
      this.events?.emit({ type: 'stream.connection-lost', connection: this.label, error: this.lastError?.message ?? 'connection closed' });
    });
    this.redis.on('ready', () => {
      void this.syncClock();
      if (this.lost) {
        this.lost = false;
        this.events?.emit({ type: 'stream.connected', connection: this.label });
      }
    });
  }

  /** True when commands can be sent now. */
  get ready(): boolean {
    return this.redis.status === 'ready';
  }

  /** Now, in Unix ms, by Redis's clock (as last measured). */
  redisNow(): number {
    return Date.now() + this.offsetMs;
  }

  /**
   * Connects and waits until Redis is ready (its data loaded), or throws NS_REDIS_UNAVAILABLE after
   * `timeoutMs`. Used at start, so a wrong URL or a missing server fails the start, loudly; a
   * server older than Redis 6.2 fails it with NS_REDIS_VERSION before any stream command is sent.
   */
  async open(timeoutMs: number): Promise<void> {
    if (!this.release) this.release = trackResource('redis', this.label);
    if (this.redis.status === 'wait') this.redis.connect().catch(() => undefined);
    try {
      await this.whenReady(AbortSignal.timeout(timeoutMs));
    } catch {
      await this.close();
      throw new RedisUnavailableError(`connecting ${this.label}`, this.lastError ?? new Error(`not ready within ${timeoutMs} ms`));
    }
    const version = await this.serverVersion();
    if (version !== undefined && redisTooOld(version)) {
      await this.close();
      throw new RedisVersionError(`connecting ${this.label}`, version, MIN_REDIS_VERSION);
    }
    await this.syncClock();
  }

  /** The server's `redis_version`, or undefined when INFO is refused (ACLs, a renamed command) or silent. */
  private async serverVersion(): Promise<string | undefined> {
    try {
      return redisVersionOf(String(await this.redis.call('INFO', 'server')));
    } catch {
      return undefined;
    }
  }

  /** Starts connecting without waiting (callers wait with {@link whenReady}); reconnects on its own after that. */
  connectInBackground(): void {
    if (this.closed) return;
    if (!this.release) this.release = trackResource('redis', this.label);
    if (this.redis.status === 'wait') this.redis.connect().catch(() => undefined);
  }

  /** Resolves when the connection is ready; rejects when `signal` aborts or the connection is closed. */
  whenReady(signal: AbortSignal): Promise<void> {
    if (this.ready) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (err?: unknown) => {
        this.redis.off('ready', onReady);
        this.redis.off('end', onEnd);
        signal.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve();
      };
      const onReady = () => done();
      const onEnd = () => done(new Error('connection closed'));
      const onAbort = () => done(signal.reason);
      if (signal.aborted) return done(signal.reason);
      this.redis.on('ready', onReady);
      this.redis.on('end', onEnd);
      signal.addEventListener('abort', onAbort);
    });
  }

  /**
   * Closes the connection. `QUIT` lets queued replies arrive first; a blocking connection is cut at
   * once instead (its pending read is rejected). Safe twice.
   */
  async close(options: { force?: boolean } = {}): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      if (options.force || !this.ready) this.redis.disconnect();
      else await Promise.race([this.redis.quit(), new Promise((r) => setTimeout(r, 1_000).unref())]);
    } catch {
      // Already gone.
    } finally {
      this.redis.disconnect();
      this.release?.();
      this.release = undefined;
    }
  }

  private async syncClock(): Promise<void> {
    try {
      const before = Date.now();
      const [sec, usec] = (await this.redis.call('TIME')) as [string, string];
      const after = Date.now();
      this.offsetMs = Math.round(Number(sec) * 1_000 + Number(usec) / 1_000 - (before + after) / 2);
    } catch {
      // Keep the last offset; the next connect measures again.
    }
  }
}

/** The text of a Redis error reply or connection error. */
export function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Whether an error is a connection problem (as opposed to a reply from Redis refusing a command). */
export function isConnectionError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === 'ReplyError') return false;
  return true;
}
