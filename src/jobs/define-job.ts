import type { Executor } from '../db/executor.js';
import { ConfigError, unknownKey, type Issue } from '../errors.js';
import type { EnqueueOptions, EnqueueResult } from './enqueue-options.js';
import type { JobControl } from './job-control.js';
import { resolveLimits, type ConcurrencyLimit, type OneOrMany, type RateLimit, type ResolvedLimit } from './limits.js';
import { nameProblem } from './names.js';
import { retentionIssues } from './retention.js';
import type { Backoff } from './retry-policy.js';
import { isPayloadSchema, type PayloadSchema, type SchemaInput, type SchemaOutput } from './standard-schema.js';

/** Delivery guarantee of a kind. */
export type Delivery = 'at-least-once' | 'at-most-once';

/**
 * How long a job's dedupe key keeps a repeat enqueue from adding a job (see docs/jobs.md):
 * - `'pending'` (default): while the job is pending (available, scheduled, waiting to retry);
 * - `'active'`: while it is pending or running;
 * - `'ever'`: until the job, finished, is pruned;
 * - `{ withinMs }`: for that long after the enqueue that took the key, whatever became of the job.
 */
export type DedupeScope = 'pending' | 'active' | 'ever' | { withinMs: number };

/** The stored name of a scope: 'pending', 'active', 'ever' or 'within'. */
export function scopeName(scope: DedupeScope): 'pending' | 'active' | 'ever' | 'within' {
  return typeof scope === 'object' ? 'within' : scope;
}

/**
 * How long finished jobs of one kind are kept, per state, in ms (`false`: forever): overrides the
 * client's `retention` for that kind and state (seed 001: recovery logs 14 days, settlement 30).
 */
export type KindRetention = Partial<Record<'completed' | 'discarded' | 'cancelled' | 'expired', number | false>>;

/** A logger as handlers see it (a pino logger fits). */
export interface JobLogger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

/** What a handler receives besides its payload. */
export interface JobContext {
  /** The job's id: stable across retries, so downstream systems can dedupe on it. */
  readonly jobId: string;
  readonly kind: string;
  readonly queue: string;
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** The fencing token of this attempt's lease; pass it to writes that must refuse a stale worker. */
  readonly leaseToken: string;
  /** Aborts on timeout, cancel, loss of the lease, and shutdown; `signal.reason` says which. */
  readonly signal: AbortSignal;
  /** Renews the lease now (leases are also renewed automatically every `heartbeatMs`). */
  heartbeat(): Promise<void>;
  /** A logger carrying the job id, kind, queue and attempt. */
  readonly log: JobLogger;
  /** The shared pool, to do work or enqueue follow-up jobs in your own transaction. */
  readonly db: Executor;
  /** Enqueues a follow-up job. */
  enqueue<S extends PayloadSchema>(job: JobDefinition<S> | string, payload: SchemaInput<S>, options?: EnqueueOptions): Promise<EnqueueResult>;
  /**
   * Runs `fn` in a transaction on the shared pool that commits only while this attempt still holds
   * the job's lease (a rescued, cancelled or re-claimed job's transaction is rolled back with
   * LeaseLostError). Enqueue follow-ups in it with `{ db: tx }`: they commit with your writes.
   */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T>;
  /**
   * Reports how far the job got (any JSON value up to 4 KiB, e.g. `{ done: 40, of: 100 }`), shown by
   * `jobs show` and kept after the job ends. Written at most once a second; the latest value wins.
   */
  progress(value: unknown): void;
  /** The trace id the job carries (from its stored trace context), if any. */
  readonly traceId: string | undefined;
}

/** What a handler may return: nothing (success) or an explicit control result. */
export type JobHandlerResult = void | undefined | JobControl | unknown;

/** The options of {@link defineJob}. */
export interface JobOptions<S extends PayloadSchema> {
  /** The job's kind: its stable name, 1 to 128 characters of letters, digits, _ . : - */
  kind: string;
  /** A Standard Schema (zod 4, valibot, …) for the payload; enqueue validates against it. */
  payload: S;
  /** The handler. */
  run: (payload: SchemaOutput<S>, ctx: JobContext) => Promise<JobHandlerResult> | JobHandlerResult;
  /** Queue the kind goes to by default. Default `'default'`. */
  queue?: string;
  /** Lower runs first, -1000 to 1000. Default 0. */
  priority?: number;
  /** Attempts before the job is discarded, 1 to 1000. Default 10. */
  maxAttempts?: number;
  /** Delay between attempts. Default exponential from 1 s, factor 2, up to 1 h, 25% jitter. */
  backoff?: Backoff;
  /** Aborts a run after this long (signal aborted, attempt failed). Default: no timeout. */
  timeoutMs?: number;
  /** Default `'at-least-once'`. An at-most-once job is never run twice: if its worker dies, it is abandoned. */
  delivery?: Delivery;
  /** Environment variables a process running this kind must have; start-up fails closed naming the missing ones. */
  requiredEnv?: string[];
  /** How long a dedupe key of this kind holds. Default `'pending'`. */
  dedupeScope?: DedupeScope;
  /**
   * What resolving a held (or abandoned) job means in your domain, run in the resolve's own
   * transaction (`tx`) after the job's state changed: update your rows there (seed 002: the PSP
   * row becomes CONFIRMED or FAILED). If it throws, the resolve is rolled back and the error is
   * the caller's.
   */
  onResolve?: (resolution: ResolveInfo<SchemaOutput<S>>, tx: Executor) => Promise<void> | void;
  /**
   * How long finished jobs of this kind (and the lines their handlers logged) are kept, per state;
   * states left out follow the client's `retention`. Default: the client's. A client that deletes
   * completed jobs as they complete (`retention.completed: 0`) keeps none, whatever this says.
   */
  retention?: KindRetention;
  /**
   * At most `limit` jobs of this kind running at once across the fleet; with `key`, per key
   * (`{ limit: 1, key: (p) => p.coupleId }`). A list applies every limit (per key and in total).
   * Enforced in the claim, counted from the leases really held (docs/flow-control.md). Default: none.
   */
  concurrency?: OneOrMany<ConcurrencyLimit<SchemaOutput<S>>>;
  /** At most `limit` starts per `per` ms across the fleet, globally or per key; a list applies each. Default: none. */
  rateLimit?: OneOrMany<RateLimit<SchemaOutput<S>>>;
}

/** What `onResolve` learns about the resolve. */
export interface ResolveInfo<P = unknown> {
  jobId: string;
  kind: string;
  /** How the operator resolved it. */
  as: 'completed' | 'failed' | 'retry';
  /** The job's payload, as stored. */
  payload: P;
  actor: string;
  reason: string | null;
}

/** A job kind, as returned by {@link defineJob}. */
export interface JobDefinition<S extends PayloadSchema = PayloadSchema> {
  readonly kind: string;
  readonly schema: S;
  readonly run: (payload: SchemaOutput<S>, ctx: JobContext) => Promise<JobHandlerResult> | JobHandlerResult;
  readonly queue: string;
  readonly priority: number;
  readonly maxAttempts: number;
  readonly backoff: Backoff | undefined;
  readonly timeoutMs: number | undefined;
  readonly delivery: Delivery;
  readonly requiredEnv: readonly string[];
  readonly dedupeScope: DedupeScope;
  readonly onResolve: ((resolution: ResolveInfo<SchemaOutput<S>>, tx: Executor) => Promise<void> | void) | undefined;
  readonly retention?: Readonly<KindRetention>;
  /** The kind's fleet-wide limits (concurrency, then rate), with their stable names; empty when none. */
  readonly limits: readonly ResolvedLimit[];
}

const JOB_OPTION_KEYS = ['kind', 'payload', 'run', 'queue', 'priority', 'maxAttempts', 'backoff', 'timeoutMs', 'delivery', 'requiredEnv', 'dedupeScope', 'onResolve', 'retention', 'concurrency', 'rateLimit'];

/** Environment variable names: letters, digits and _, not starting with a digit. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Problems with a `requiredEnv` list. */
export function requiredEnvProblems(value: unknown, path: string): Issue[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) return [{ path, message: 'must be an array of environment variable names' }];
  return value.flatMap((v, i) =>
    typeof v === 'string' && ENV_NAME.test(v) ? [] : [{ path: `${path}.${i}`, message: `${JSON.stringify(v)} is not an environment variable name (letters, digits and _, not starting with a digit)` }],
  );
}

function isInt(v: unknown, min: number, max: number): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

/**
 * Defines a job kind: its payload schema, handler and defaults. Payload types flow from the
 * schema into `run` and into `enqueue`. Invalid options throw NS_CONFIG_INVALID listing every problem.
 */
export function defineJob<S extends PayloadSchema>(options: JobOptions<S>): JobDefinition<S> {
  const issues: Issue[] = [];
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!JOB_OPTION_KEYS.includes(key)) issues.push(unknownKey(key, JOB_OPTION_KEYS));
  }
  const kindProblem = nameProblem(o.kind);
  if (kindProblem) issues.push({ path: 'kind', message: kindProblem });
  if (!isPayloadSchema(o.payload)) {
    issues.push({ path: 'payload', message: 'must be a Standard Schema such as z.object({...}) from zod 4' });
  }
  if (typeof o.run !== 'function') issues.push({ path: 'run', message: 'must be a function (payload, ctx) => …' });
  if (o.queue !== undefined) {
    const p = nameProblem(o.queue);
    if (p) issues.push({ path: 'queue', message: p });
  }
  if (o.priority !== undefined && !isInt(o.priority, -1000, 1000)) {
    issues.push({ path: 'priority', message: 'must be an integer from -1000 to 1000 (lower runs first)' });
  }
  if (o.maxAttempts !== undefined && !isInt(o.maxAttempts, 1, 1000)) {
    issues.push({ path: 'maxAttempts', message: 'must be an integer from 1 to 1000' });
  }
  if (o.timeoutMs !== undefined && !isInt(o.timeoutMs, 1, 2_147_483_647)) {
    issues.push({ path: 'timeoutMs', message: 'must be a positive integer number of milliseconds' });
  }
  if (o.delivery !== undefined && o.delivery !== 'at-least-once' && o.delivery !== 'at-most-once') {
    issues.push({ path: 'delivery', message: "must be 'at-least-once' or 'at-most-once'" });
  }
  issues.push(...backoffProblems(o.backoff));
  const scope = o.dedupeScope;
  if (
    scope !== undefined &&
    scope !== 'pending' &&
    scope !== 'active' &&
    scope !== 'ever' &&
    !(typeof scope === 'object' && scope !== null && Object.keys(scope).join() === 'withinMs' && isInt((scope as { withinMs: unknown }).withinMs, 1, 100 * 365 * 86_400_000))
  ) {
    issues.push({ path: 'dedupeScope', message: "must be 'pending', 'active', 'ever' or { withinMs } (a positive integer number of milliseconds)" });
  }
  if (o.onResolve !== undefined && typeof o.onResolve !== 'function') issues.push({ path: 'onResolve', message: 'must be a function (resolution, tx) => …' });
  issues.push(...requiredEnvProblems(o.requiredEnv, 'requiredEnv'));
  if (o.retention !== undefined) issues.push(...retentionIssues(o.retention, 'retention'));
  const limits = resolveLimits(`kind:${String(o.kind)}`, o, issues);
  const label = typeof o.kind === 'string' ? `job "${o.kind}"` : 'job definition';
  if (issues.length) throw new ConfigError(label, issues);
  return Object.freeze({
    kind: options.kind,
    schema: options.payload,
    run: options.run,
    queue: options.queue ?? 'default',
    priority: options.priority ?? 0,
    maxAttempts: options.maxAttempts ?? 10,
    backoff: options.backoff,
    timeoutMs: options.timeoutMs,
    delivery: options.delivery ?? 'at-least-once',
    requiredEnv: Object.freeze([...(options.requiredEnv ?? [])]),
    dedupeScope: typeof options.dedupeScope === 'object' ? Object.freeze({ withinMs: options.dedupeScope.withinMs }) : (options.dedupeScope ?? 'pending'),
    onResolve: options.onResolve,
    ...(options.retention !== undefined ? { retention: Object.freeze({ ...options.retention }) } : {}),
    limits: Object.freeze(limits),
  });
}

function backoffProblems(b: unknown): Issue[] {
  if (b === undefined || typeof b === 'function') return [];
  if (typeof b !== 'object' || b === null) return [{ path: 'backoff', message: 'must be an object or a function (attempt, error) => ms' }];
  const issues: Issue[] = [];
  const keys = ['initialMs', 'factor', 'maxMs', 'jitter'];
  for (const [k, v] of Object.entries(b)) {
    if (!keys.includes(k))
      issues.push(
        unknownKey(
          `backoff.${k}`,
          keys.map((x) => `backoff.${x}`),
        ),
      );
    else if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) issues.push({ path: `backoff.${k}`, message: 'must be a finite number ≥ 0' });
    else if (k === 'jitter' && v > 1) issues.push({ path: 'backoff.jitter', message: 'must be between 0 and 1' });
    else if (k === 'factor' && v < 1) issues.push({ path: 'backoff.factor', message: 'must be ≥ 1' });
  }
  return issues;
}
