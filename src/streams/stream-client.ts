import { hostname } from 'node:os';
import { ConfigError, StoppedError, unknownKey, UnknownStreamError, type Issue } from '../errors.js';
import type { PayloadSchema, SchemaInput } from '../jobs/standard-schema.js';
import { EventBus } from '../telemetry/events.js';
import { isInt, isStreamDefinition, type StreamDefinition } from './define-stream.js';
import { diagnoseWith, type DiagnoseOptions, type StreamsDiagnosis } from './diagnose-streams.js';
import { RedisConnection, redisUrlProblem } from './redis-connection.js';
import { publishEntry, type PublishResult } from './stream-publisher.js';

/** Options of {@link StreamClient}. */
export interface StreamClientOptions {
  /** Redis to write to, `redis://[user:password@]host:port[/db]` or `rediss://`. */
  redisUrl: string;
  /** Streams that may be named by a string in `publish` (and are diagnosed by default). */
  streams?: StreamDefinition[];
  /** Where events go. Default: a bus of its own. */
  events?: EventBus;
  /** This process's name in Redis's client list. Default `host:pid`. */
  owner?: string;
  /** How long the first use waits for Redis before failing with NS_REDIS_UNAVAILABLE. Default 10 000 ms. */
  connectTimeoutMs?: number;
}

const KEYS = ['redisUrl', 'streams', 'events', 'owner', 'connectTimeoutMs'];

/**
 * The producer side of streams, and their diagnosis: one connection, opened on first use. Publish
 * validates the payload against the stream's schema and writes nothing when it does not match.
 */
export class StreamClient {
  readonly events: EventBus;
  private readonly streams: Map<string, StreamDefinition>;
  private conn: RedisConnection | undefined;
  private opening: Promise<RedisConnection> | undefined;
  private stopped = false;
  private readonly label: string;
  private readonly connectTimeoutMs: number;

  constructor(private readonly options: StreamClientOptions) {
    const issues = validate(options);
    if (issues.length) throw new ConfigError('stream client options', issues);
    this.events = options.events ?? new EventBus();
    this.streams = new Map((options.streams ?? []).map((s) => [s.name, s]));
    this.label = `nightshift:${options.owner ?? `${hostname()}:${process.pid}`}:publish`;
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  }

  /**
   * Adds an entry: `XADD <stream> * payload <json>` (with the active trace context in its own
   * fields). Rejects with NS_PAYLOAD_INVALID or NS_PAYLOAD_TOO_LARGE before writing anything, with
   * NS_UNKNOWN_STREAM for a name not given in `streams`, and with NS_REDIS_UNAVAILABLE when Redis
   * cannot be reached (see the docs for when the entry may still have been added).
   */
  async publish<S extends PayloadSchema>(stream: StreamDefinition<S> | string, payload: SchemaInput<S>): Promise<PublishResult> {
    const def = this.resolve(stream);
    if (this.stopped) throw new StoppedError(`publish to "${def.name}"`);
    return publishEntry(() => this.connection(), def, payload, this.events);
  }

  /** Diagnoses the given streams and consumer groups (default: this client's streams). See {@link diagnoseStreams}. */
  async diagnose(options: DiagnoseOptions = {}): Promise<StreamsDiagnosis> {
    if (this.stopped) throw new StoppedError('diagnose streams');
    return diagnoseWith(await this.connection(), { ...options, streams: options.streams ?? [...this.streams.values()] });
  }

  /** Closes the connection. Safe before first use and twice. */
  async stop(): Promise<void> {
    this.stopped = true;
    const conn = this.conn ?? (await this.opening?.catch(() => undefined));
    this.conn = undefined;
    await conn?.close();
  }

  private resolve(stream: StreamDefinition | string): StreamDefinition {
    if (typeof stream === 'string') {
      const def = this.streams.get(stream);
      if (!def) throw new UnknownStreamError(stream, [...this.streams.keys()]);
      return def;
    }
    if (!isStreamDefinition(stream)) throw new UnknownStreamError(String(stream), [...this.streams.keys()]);
    return stream;
  }

  private connection(): Promise<RedisConnection> {
    if (this.conn) return Promise.resolve(this.conn);
    this.opening ??= (async () => {
      const conn = new RedisConnection(this.options.redisUrl, this.label, this.events, { connectTimeoutMs: this.connectTimeoutMs, autoPipelining: true });
      try {
        await conn.open(this.connectTimeoutMs);
      } finally {
        this.opening = undefined;
      }
      if (this.stopped) {
        await conn.close();
        throw new StoppedError('stream client');
      }
      this.conn = conn;
      return conn;
    })();
    return this.opening;
  }
}

/**
 * Diagnoses streams: per stream its length, groups, consumers, pending count and oldest pending
 * age, lag and dead-letter count, with a status line per group (a group a consumer is defined for
 * but which does not exist reads "consumer never started"). Streams come from the definitions given,
 * never from KEYS.
 */
export function diagnoseStreams(client: StreamClient, options: DiagnoseOptions = {}): Promise<StreamsDiagnosis> {
  return client.diagnose(options);
}

function validate(o: StreamClientOptions): Issue[] {
  const issues: Issue[] = [];
  const r = (o ?? {}) as unknown as Record<string, unknown>;
  for (const key of Object.keys(r)) if (!KEYS.includes(key)) issues.push(unknownKey(key, KEYS));
  const p = redisUrlProblem(r.redisUrl);
  if (p) issues.push({ path: 'redisUrl', message: p });
  if (r.streams !== undefined) {
    if (!Array.isArray(r.streams)) issues.push({ path: 'streams', message: 'must be an array of streams made with defineStream' });
    else r.streams.forEach((s: unknown, i) => isStreamDefinition(s) || issues.push({ path: `streams.${i}`, message: 'must be made with defineStream' }));
  }
  if (r.events !== undefined && !(r.events instanceof EventBus)) issues.push({ path: 'events', message: 'must be an EventBus' });
  if (r.connectTimeoutMs !== undefined && !isInt(r.connectTimeoutMs, 1, 2_147_483_647)) issues.push({ path: 'connectTimeoutMs', message: 'must be a positive integer number of milliseconds' });
  return issues;
}
