import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { ConfigError, StoppedError, unknownKey, type Issue } from '../errors.js';
import type { PayloadSchema, SchemaInput } from '../jobs/standard-schema.js';
import type { LeaderLease, LeaderTerm } from '../leadership/leader-lease.js';
import { BaseService, type ServiceOptions } from '../lifecycle/service.js';
import { EventBus } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import { ConsumerLoop, type ConsumerLoopSettings, type ServerCapabilities } from './consumer-loop.js';
import type { ConsumerScope } from './consumer-scope.js';
import { isConsumerDefinition, type ConsumerDefinition } from './define-consumer.js';
import { isInt, type StreamDefinition } from './define-stream.js';
import { ensureGroup } from './pending-entries.js';
import { RedisConnection, redisUrlProblem } from './redis-connection.js';
import { publishEntry, type PublishResult } from './stream-publisher.js';

/** Options of {@link ConsumerRunner}. */
export interface ConsumerRunnerOptions extends ServiceOptions {
  /** Redis to read from, `redis://[user:password@]host:port[/db]` or `rediss://`. */
  redisUrl: string;
  /** The consumers this process hosts (those of its roles). */
  consumers: ConsumerDefinition[];
  /** This process's name; consumer names in groups are `<owner>:<random>`. Default `host:pid`. */
  owner?: string;
  /**
   * Makes the lease that elects the one process running a singleton consumer; called once per
   * singleton with the name `stream:<stream>:<group>`. Required when any consumer is a singleton.
   */
  leaderLease?: (name: string) => LeaderLease;
  /** Where events go. Default: a bus of its own. */
  events?: EventBus;
  /** Parent of the loggers handlers get. Default: silent. */
  logger?: Logger;
  /** On stop, how long in-flight entries may finish before their handlers are aborted. Default 25 000 ms. */
  shutdownGraceMs?: number;
  /** How long one XREADGROUP blocks waiting for entries. Default 5 000 ms. */
  blockMs?: number;
  /** How long start waits for Redis before failing with NS_REDIS_UNAVAILABLE. Default 10 000 ms. */
  connectTimeoutMs?: number;
  /** Consumers of other processes idle this long with nothing pending are removed from their group. Default 3 600 000 ms (1 h). */
  pruneIdleMs?: number;
}

const KEYS = ['redisUrl', 'consumers', 'owner', 'leaderLease', 'events', 'logger', 'clock', 'shutdownGraceMs', 'blockMs', 'connectTimeoutMs', 'pruneIdleMs'];

/** One hosted consumer: its definition, and the loop running it now (none for a singleton not elected). */
interface Hosted {
  readonly def: ConsumerDefinition;
  loop: ConsumerLoop | undefined;
  /** The term a singleton's loop runs in. */
  term: LeaderTerm | undefined;
  lease: LeaderLease | undefined;
  unsubscribe: (() => void) | undefined;
  /** Serialises activations and deactivations of a singleton. */
  chain: Promise<void>;
}

/**
 * Hosts stream consumers in this process: creates their groups (id 0, MKSTREAM, BUSYGROUP
 * tolerated), runs each one's loop, runs a singleton only while this process holds its lease, and
 * stops within a bound. One command connection is shared; each running consumer adds one
 * connection for its blocking reads.
 */
export class ConsumerRunner extends BaseService {
  readonly events: EventBus;
  private readonly settings: ConsumerLoopSettings;
  private readonly owner: string;
  private readonly consumerName: string;
  private readonly hosted: Hosted[];
  private readonly server: ServerCapabilities = { autoclaim: true, warned: false };
  private conn: RedisConnection | undefined;

  constructor(private readonly options: ConsumerRunnerOptions) {
    const issues = validate(options);
    if (issues.length) throw new ConfigError('stream consumer runner options', issues);
    const owner = options.owner ?? `${hostname()}:${process.pid}`;
    // A random suffix keeps a restarted process (same host and pid, as in containers) from inheriting a dead one's pending entries by name.
    const consumerName = `${owner}:${randomBytes(3).toString('hex')}`;
    super({ name: consumerName, kind: 'stream-consumers', logger: options.logger, clock: options.clock });
    this.events = options.events ?? new EventBus();
    this.owner = owner;
    this.consumerName = consumerName;
    this.settings = {
      redisUrl: options.redisUrl,
      blockMs: options.blockMs ?? 5_000,
      shutdownGraceMs: options.shutdownGraceMs ?? 25_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
      pruneIdleMs: options.pruneIdleMs ?? 3_600_000,
    };
    this.hosted = options.consumers.map((def) => ({ def, loop: undefined, term: undefined, lease: undefined, unsubscribe: undefined, chain: Promise.resolve() }));
  }

  /** This process's consumer name in every group it reads. */
  get consumer(): string {
    return this.consumerName;
  }

  /** Names of the consumers running now (a singleton only while this process leads). */
  get active(): string[] {
    return this.hosted.filter((h) => h.loop).map((h) => h.def.name);
  }

  /**
   * Connects (NS_REDIS_UNAVAILABLE if Redis is not ready within `connectTimeoutMs`), creates every
   * consumer's group, starts the non-singleton consumers, and starts campaigning for the
   * singletons. Later Redis outages are ridden out: consumers wait and reconnect.
   */
  protected async onStart(): Promise<void> {
    // On failure, everything started so far is stopped (onStop); start may be called again (Redis may be back).
    this.conn = new RedisConnection(this.settings.redisUrl, `nightshift:${this.consumerName}:streams`, this.events, {
      connectTimeoutMs: this.settings.connectTimeoutMs,
      autoPipelining: true,
    });
    await this.conn.open(this.settings.connectTimeoutMs);
    for (const h of this.hosted) await ensureGroup(this.scope(h.def, undefined), false);
    for (const h of this.hosted) {
      if (!h.def.singleton) {
        h.loop = new ConsumerLoop(this.scope(h.def, undefined), this.settings, this.server);
        h.loop.start();
      } else {
        await this.campaign(h);
      }
    }
  }

  /** Stops every consumer (bounded by `shutdownGraceMs`), releases singleton leases, and disconnects. Safe before start and twice. */
  protected async onStop(): Promise<void> {
    await this.stopParts();
  }

  /** Publishes through this runner's connection (what handlers' `ctx.publish` uses). */
  publish<S extends PayloadSchema>(stream: StreamDefinition<S>, payload: SchemaInput<S>): Promise<PublishResult> {
    if (!this.conn || this.state === 'stopped') return Promise.reject(new StoppedError(`publish to "${stream.name}"`));
    const conn = this.conn;
    return publishEntry(() => conn, stream, payload, this.events);
  }

  private scope(def: ConsumerDefinition, term: LeaderTerm | undefined): ConsumerScope {
    return {
      def,
      consumer: this.consumerName,
      conn: this.conn!,
      events: this.events,
      logger: this.logger,
      term,
      leaseName: def.singleton ? consumerLeaseName(def) : undefined,
      publish: (stream, payload) => this.publish(stream, payload),
    };
  }

  private async campaign(h: Hosted): Promise<void> {
    const lease = this.options.leaderLease!(consumerLeaseName(h.def));
    h.lease = lease;
    h.unsubscribe = lease.onChange((term) => this.follow(h, term));
    await lease.start();
    if (lease.term) this.follow(h, lease.term);
  }

  /** Runs a singleton's loop for exactly the span of a term: started when elected, stopped when deposed or the term's signal aborts. */
  private follow(h: Hosted, term: LeaderTerm | undefined): void {
    h.chain = h.chain.then(async () => {
      if (!this.live) return;
      // Terms are told apart by token: an elector may hand out a fresh object for the same term.
      if (term && h.term?.token === term.token) return;
      await this.endTerm(h, h.term);
      if (!term || term.signal.aborted) return;
      h.term = term;
      h.loop = new ConsumerLoop(this.scope(h.def, term), this.settings, this.server);
      h.loop.start();
      term.signal.addEventListener(
        'abort',
        () => {
          h.chain = h.chain.then(() => this.endTerm(h, term));
        },
        { once: true },
      );
    });
  }

  private async endTerm(h: Hosted, term: LeaderTerm | undefined): Promise<void> {
    if (!term || h.term?.token !== term.token || !h.loop) return;
    const loop = h.loop;
    h.loop = undefined;
    h.term = undefined;
    await loop.stop('leadership lost', { leave: false });
  }

  private async stopParts(): Promise<void> {
    await Promise.all(
      this.hosted.map(async (h) => {
        h.unsubscribe?.();
        await h.chain;
        const loop = h.loop;
        h.loop = undefined;
        h.term = undefined;
        await loop?.stop('shutdown');
        await h.lease?.stop();
      }),
    );
    await this.conn?.close();
  }
}

/** The name of the lease electing the one process that runs a singleton consumer: `stream:<stream>:<group>`. */
export function consumerLeaseName(def: ConsumerDefinition): string {
  return `stream:${def.stream.name}:${def.group}`;
}

function validate(o: ConsumerRunnerOptions): Issue[] {
  const issues: Issue[] = [];
  const r = (o ?? {}) as unknown as Record<string, unknown>;
  for (const key of Object.keys(r)) if (!KEYS.includes(key)) issues.push(unknownKey(key, KEYS));
  const urlProblem = redisUrlProblem(r.redisUrl);
  if (urlProblem) issues.push({ path: 'redisUrl', message: urlProblem });
  if (!Array.isArray(r.consumers)) issues.push({ path: 'consumers', message: 'must be an array of consumers made with defineConsumer' });
  else {
    const seen = new Map<string, number>();
    const names = new Map<string, number>();
    r.consumers.forEach((c: unknown, i) => {
      if (!isConsumerDefinition(c)) return issues.push({ path: `consumers.${i}`, message: 'must be made with defineConsumer' });
      const key = `${c.stream.name}\u0000${c.group}`;
      if (seen.has(key))
        issues.push({ path: `consumers.${i}`, message: `group "${c.group}" on stream "${c.stream.name}" is already consumed by consumers.${seen.get(key)}; one definition per group and stream` });
      else seen.set(key, i);
      if (names.has(c.name)) issues.push({ path: `consumers.${i}.name`, message: `"${c.name}" is also the name of consumers.${names.get(c.name)}; set name to tell them apart` });
      else names.set(c.name, i);
      if (c.singleton && typeof r.leaderLease !== 'function') {
        issues.push({ path: 'leaderLease', message: `consumer "${c.name}" is a singleton: pass leaderLease, a factory (name) => LeaderLease from the runtime's elector` });
      }
      return undefined;
    });
  }
  if (r.leaderLease !== undefined && typeof r.leaderLease !== 'function') issues.push({ path: 'leaderLease', message: 'must be a function (name) => LeaderLease' });
  if (r.events !== undefined && !(r.events instanceof EventBus)) issues.push({ path: 'events', message: 'must be an EventBus' });
  if (r.owner !== undefined && (typeof r.owner !== 'string' || r.owner.length === 0 || r.owner.length > 200 || /\s/.test(r.owner))) {
    issues.push({ path: 'owner', message: 'must be 1 to 200 characters without spaces' });
  }
  for (const [key, min] of [
    ['shutdownGraceMs', 0],
    ['blockMs', 1],
    ['connectTimeoutMs', 1],
    ['pruneIdleMs', 1_000],
  ] as const) {
    if (r[key] !== undefined && !isInt(r[key], min, 2_147_483_647)) issues.push({ path: key, message: `must be an integer number of milliseconds, at least ${min}` });
  }
  return issues;
}
