import { ConfigError, unknownKey, type Issue } from '../errors.js';
import type { Delivery, JobLogger } from '../jobs/define-job.js';
import { nameProblem } from '../jobs/names.js';
import type { PayloadSchema, SchemaInput, SchemaOutput } from '../jobs/standard-schema.js';
import { isInt, isStreamDefinition, type StreamDefinition } from './define-stream.js';

/** What a stream handler receives besides the payload. */
export interface ConsumerContext {
  /** The entry's id, `<unix-ms>-<seq>`: stable across redeliveries, so writes can dedupe on it. */
  readonly id: string;
  readonly stream: string;
  readonly group: string;
  /** This process's consumer name in the group. */
  readonly consumer: string;
  /** How many times the entry has been delivered, this time included (always 1 for at-most-once). */
  readonly deliveries: number;
  /** When the entry was added, in Unix ms, read from its id (Redis's clock). */
  readonly publishedAtMs: number;
  /** How old the entry is now, by Redis's clock. */
  readonly ageMs: number;
  /** Aborts on timeout, shutdown after the grace period, and loss of a singleton's leadership; `signal.reason` says which. */
  readonly signal: AbortSignal;
  /**
   * For a singleton consumer: the fencing token of the leadership term this entry is handled in.
   * Pass it to writes that must refuse a deposed leader. Undefined for other consumers.
   */
  readonly fencingToken: string | undefined;
  /** For a singleton consumer: the lease it holds, `stream:<stream>:<group>` (for `assert_lease(leaseName, fencingToken)` in SQL). */
  readonly leaseName: string | undefined;
  /** A logger carrying the stream, group and entry id (never the payload). */
  readonly log: JobLogger;
  /** Publishes to another (or the same) stream through this runner's connection. */
  publish<S extends PayloadSchema>(stream: StreamDefinition<S>, payload: SchemaInput<S>): Promise<{ id: string }>;
}

/** A handler of entries. Throwing fails the delivery (see `delivery` for what happens next). */
export type ConsumerHandler<S extends PayloadSchema> = (payload: SchemaOutput<S>, ctx: ConsumerContext) => Promise<unknown> | unknown;

/** The options of {@link defineConsumer}. */
export interface ConsumerOptions<S extends PayloadSchema> {
  /** The stream to read, from defineStream. */
  stream: StreamDefinition<S>;
  /** The consumer group: created at id `0` with MKSTREAM, so a backlog is delivered once. */
  group: string;
  /** This consumer's name in roles and events. Default: the group. */
  name?: string;
  /**
   * `'at-least-once'` (default): XACK after the handler succeeds; entries pending longer than
   * `claimIdleMs` are taken over by a live consumer; a duplicate is possible, a loss is not (with AOF
   * `appendfsync always`). `'at-most-once'`: an entry is never handled twice; one whose handler
   * started and did not finish (the process died) is recorded as abandoned and passed to
   * `onAbandoned` — never to `handler` again.
   */
  delivery?: Delivery;
  /** The handler. */
  handler: ConsumerHandler<S>;
  /**
   * Entries older than this (by the time in their id) go to `onExpired` instead of `handler`.
   * Default: no age limit.
   */
  maxAgeMs?: number;
  /** Handles an entry older than `maxAgeMs`. Default: the entry is dead-lettered with reason `expired`. */
  onExpired?: ConsumerHandler<S>;
  /**
   * At-most-once: recovers an entry whose handler started on a process that died before it finished
   * (seed 004: an escrow opened and never settled → `settleEmpty`). Called by a live consumer of
   * the group after `claimIdleMs`, at least once until it returns (make it idempotent); then the
   * entry is dead-lettered as `abandoned`. Default: dead-lettered as `abandoned` at once.
   */
  onAbandoned?: ConsumerHandler<S>;
  /** At-least-once: deliveries before an entry that keeps failing is moved to the dead-letter stream. 1 to 1000, default 10. */
  maxDeliveries?: number;
  /**
   * How long an entry may stay pending (delivered, not acked) before a live consumer takes it over
   * with XAUTOCLAIM (at-least-once), or dead-letters it as abandoned (at-most-once). Entries being
   * handled are kept fresh, so a slow handler is not taken over. Default 60 000 ms.
   */
  claimIdleMs?: number;
  /** Entries handled at once by this process. Default 1 (entries are handled in stream order). */
  concurrency?: number;
  /** Aborts a handler after this long (its signal aborts; the delivery fails). Default: no timeout. */
  timeoutMs?: number;
  /** Runs on exactly one process of the fleet, through an elected lease. Default false. */
  singleton?: boolean;
  /** Where entries that cannot be handled go, with their error. Default `<stream>:dead-letter`. */
  deadLetterStream?: string;
}

/** A consumer, as returned by {@link defineConsumer}. */
export interface ConsumerDefinition<S extends PayloadSchema = PayloadSchema> {
  readonly name: string;
  readonly stream: StreamDefinition<S>;
  readonly group: string;
  readonly delivery: Delivery;
  readonly handler: ConsumerHandler<S>;
  readonly onExpired: ConsumerHandler<S> | undefined;
  readonly onAbandoned: ConsumerHandler<S> | undefined;
  readonly maxAgeMs: number | undefined;
  readonly maxDeliveries: number;
  readonly claimIdleMs: number;
  readonly concurrency: number;
  readonly timeoutMs: number | undefined;
  readonly singleton: boolean;
  readonly deadLetterStream: string;
}

const KEYS = ['stream', 'group', 'name', 'delivery', 'handler', 'maxAgeMs', 'onExpired', 'onAbandoned', 'maxDeliveries', 'claimIdleMs', 'concurrency', 'timeoutMs', 'singleton', 'deadLetterStream'];
const MAX_MS = 2_147_483_647;

/**
 * Defines a consumer group's handling of a stream: delivery mode, age limit, dead-lettering,
 * concurrency, and whether it runs on one process only. Hosted by a `ConsumerRunner`. Invalid
 * options throw NS_CONFIG_INVALID listing every problem.
 */
export function defineConsumer<S extends PayloadSchema>(options: ConsumerOptions<S>): ConsumerDefinition<S> {
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  const issues: Issue[] = [];
  for (const key of Object.keys(o)) if (!KEYS.includes(key)) issues.push(unknownKey(key, KEYS));
  if (!isStreamDefinition(o.stream)) issues.push({ path: 'stream', message: 'must be a stream made with defineStream' });
  for (const key of ['group', 'name', 'deadLetterStream'] as const) {
    if (key !== 'group' && o[key] === undefined) continue;
    const p = nameProblem(o[key]);
    if (p) issues.push({ path: key, message: p });
  }
  if (o.delivery !== undefined && o.delivery !== 'at-least-once' && o.delivery !== 'at-most-once') {
    issues.push({ path: 'delivery', message: "must be 'at-least-once' or 'at-most-once'" });
  }
  if (typeof o.handler !== 'function') issues.push({ path: 'handler', message: 'must be a function (payload, ctx) => …' });
  if (o.onExpired !== undefined && typeof o.onExpired !== 'function') issues.push({ path: 'onExpired', message: 'must be a function (payload, ctx) => …' });
  if (o.onExpired !== undefined && o.maxAgeMs === undefined) issues.push({ path: 'onExpired', message: 'is only called for entries older than maxAgeMs; set maxAgeMs too' });
  if (o.onAbandoned !== undefined && typeof o.onAbandoned !== 'function') issues.push({ path: 'onAbandoned', message: 'must be a function (payload, ctx) => …' });
  if (o.onAbandoned !== undefined && o.delivery !== 'at-most-once') {
    issues.push({ path: 'onAbandoned', message: 'applies to at-most-once consumers only: at-least-once entries of a dead consumer are handled again' });
  }
  if (o.maxAgeMs !== undefined && !isInt(o.maxAgeMs, 1, Number.MAX_SAFE_INTEGER)) issues.push({ path: 'maxAgeMs', message: 'must be a positive integer number of milliseconds' });
  if (o.maxDeliveries !== undefined && !isInt(o.maxDeliveries, 1, 1000)) issues.push({ path: 'maxDeliveries', message: 'must be an integer from 1 to 1000' });
  if (o.maxDeliveries !== undefined && o.delivery === 'at-most-once') {
    issues.push({ path: 'maxDeliveries', message: 'does not apply to at-most-once consumers: each entry is delivered once' });
  }
  if (o.claimIdleMs !== undefined && !isInt(o.claimIdleMs, 100, MAX_MS)) issues.push({ path: 'claimIdleMs', message: 'must be an integer number of milliseconds, at least 100' });
  if (o.concurrency !== undefined && !isInt(o.concurrency, 1, 10_000)) issues.push({ path: 'concurrency', message: 'must be an integer from 1 to 10000' });
  if (o.timeoutMs !== undefined && !isInt(o.timeoutMs, 1, MAX_MS)) issues.push({ path: 'timeoutMs', message: 'must be a positive integer number of milliseconds' });
  if (o.singleton !== undefined && typeof o.singleton !== 'boolean') issues.push({ path: 'singleton', message: 'must be true or false' });
  const stream = isStreamDefinition(o.stream) ? o.stream.name : undefined;
  if (stream !== undefined && o.deadLetterStream === stream) {
    issues.push({ path: 'deadLetterStream', message: 'must differ from the stream itself, or failed entries would be read again' });
  }
  if (o.singleton === true && stream !== undefined && typeof o.group === 'string' && `stream:${stream}:${o.group}`.length > 200) {
    issues.push({ path: 'group', message: "with the stream name, too long for a singleton's lease name stream:<stream>:<group> (at most 200 characters)" });
  }
  const label = typeof o.group === 'string' ? `consumer "${String(o.name ?? o.group)}"` : 'consumer definition';
  if (issues.length) throw new ConfigError(label, issues);
  return Object.freeze({
    name: options.name ?? options.group,
    stream: options.stream,
    group: options.group,
    delivery: options.delivery ?? 'at-least-once',
    handler: options.handler,
    onExpired: options.onExpired,
    onAbandoned: options.onAbandoned,
    maxAgeMs: options.maxAgeMs,
    maxDeliveries: options.maxDeliveries ?? 10,
    claimIdleMs: options.claimIdleMs ?? 60_000,
    concurrency: options.concurrency ?? 1,
    timeoutMs: options.timeoutMs,
    singleton: options.singleton ?? false,
    deadLetterStream: options.deadLetterStream ?? `${options.stream.name}:dead-letter`,
  });
}

/** Whether a value was made by {@link defineConsumer}. */
export function isConsumerDefinition(value: unknown): value is ConsumerDefinition {
  const v = value as ConsumerDefinition | null;
  return typeof v === 'object' && v !== null && isStreamDefinition(v.stream) && typeof v.group === 'string' && typeof v.handler === 'function';
}
