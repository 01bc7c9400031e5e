import { isExecutor, type Executor } from '../db/executor.js';
import type { JobInsertRow } from '../db/jobs-insert.js';
import { OptionsInvalidError, unknownKey, type Issue } from '../errors.js';
import { scopeName, type JobDefinition } from './define-job.js';
import { nameProblem } from './names.js';

/** Options of one enqueue. All optional; the kind's definition gives the defaults. */
export interface EnqueueOptions {
  /** Run at this time (a Date, or an ISO-8601 string with a zone: `Z` or `+02:00`). */
  runAt?: Date | string;
  /** Run after this many ms, measured on the database clock. */
  delayMs?: number;
  /** Lower runs first, -1000 to 1000. */
  priority?: number;
  /** Queue name; default the kind's queue. */
  queue?: string;
  /** Attempts before the job is discarded, 1 to 1000. */
  maxAttempts?: number;
  /** If not started by then, the job is not run: its state becomes `expired`, with the reason. */
  expiresAt?: Date | string;
  /** Like `expiresAt`, counted from now on the database clock. */
  maxAgeMs?: number;
  /** At most one pending job per kind and key: a repeat returns the pending job instead (see docs/jobs.md). */
  dedupeKey?: string;
  /** With `dedupeKey`: a repeat within the window moves the pending job to now + debounceMs and keeps the latest payload. */
  debounceMs?: number;
  /**
   * With `dedupeKey`: the first enqueue of the key runs; repeats within this many ms of it add
   * nothing and return that job with `deduped: true, throttled: true` (whatever became of it).
   */
  throttleMs?: number;
  /** Your own pg client inside a transaction: the job commits or rolls back with it (outbox pattern). */
  db?: Executor;
  /** W3C trace context (`traceparent`, `tracestate`) to continue when the job runs. */
  traceContext?: Record<string, string>;
}

/** What an enqueue did. */
export interface EnqueueResult {
  /** The job's id (stable across retries). With a dedupe hit, the id of the pending job that absorbed this one. */
  id: string;
  /** True when a pending job with the same dedupe key absorbed this enqueue. */
  deduped: boolean;
  /** Present (true) when a throttle dropped this enqueue: `id` is the job that took the key within the window. */
  throttled?: true;
}

const OPTION_KEYS = ['runAt', 'delayMs', 'priority', 'queue', 'maxAttempts', 'expiresAt', 'maxAgeMs', 'dedupeKey', 'debounceMs', 'throttleMs', 'db', 'traceContext'];

/** 100 years: beyond that a delay is a bug, and the database's interval arithmetic overflows later. */
const MAX_DELAY_MS = 100 * 365 * 24 * 3_600_000;
const ZONED_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

function parseTime(value: unknown, path: string, issues: Issue[]): Date | null {
  if (value === undefined) return null;
  let d: Date | undefined;
  if (value instanceof Date) d = value;
  else if (typeof value === 'string') {
    if (!ZONED_ISO.test(value)) {
      issues.push({ path, message: `"${value.slice(0, 40)}" is ambiguous or not ISO-8601: give a Date or a string like 2026-01-31T12:00:00Z with its zone` });
      return null;
    }
    // Date parsing rolls a day that does not exist over into the next month (2026-02-30 → 2026-03-02).
    const [year, month, day] = value.slice(0, 10).split('-').map(Number) as [number, number, number];
    if (month < 1 || month > 12 || day < 1 || day > new Date(Date.UTC(year, month, 0)).getUTCDate()) {
      issues.push({ path, message: `"${value.slice(0, 10)}" is not a day of the calendar` });
      return null;
    }
    d = new Date(value);
  } else {
    issues.push({ path, message: 'must be a Date or an ISO-8601 string with a zone' });
    return null;
  }
  const t = d.getTime();
  if (Number.isNaN(t)) {
    issues.push({ path, message: 'is an invalid date' });
    return null;
  }
  if (t < Date.UTC(1970, 0, 1) || t > Date.UTC(9999, 0, 1)) {
    issues.push({ path, message: 'is outside the years 1970 to 9999' });
    return null;
  }
  return d;
}

function checkMs(value: unknown, path: string, issues: Issue[], min: number): number | null {
  if (value === undefined) return null;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > MAX_DELAY_MS) {
    issues.push({ path, message: `must be a finite number of milliseconds from ${min} to ${MAX_DELAY_MS}, got ${String(value)}` });
    return null;
  }
  return value;
}

/** The validated options split into what goes to the database and where to run the insert. */
export interface ResolvedEnqueue {
  row: JobInsertRow;
  debounced: boolean;
  /** The throttle window (throttleMs), or null. */
  throttleMs: number | null;
  db: Executor | undefined;
}

/**
 * Validates enqueue options against the kind's defaults and builds the row to insert (payload
 * filled in by the caller). Reports every problem at once; throws NS_OPTIONS_INVALID.
 */
export function resolveEnqueueOptions(def: JobDefinition, options: EnqueueOptions | undefined, payload: string): ResolvedEnqueue {
  const o = (options ?? {}) as Record<string, unknown>;
  const issues: Issue[] = [];
  if (typeof o !== 'object' || o === null || Array.isArray(o)) {
    throw new OptionsInvalidError(`enqueue options for "${def.kind}"`, [{ path: '', message: 'options must be an object' }]);
  }
  for (const key of Object.keys(o)) if (!OPTION_KEYS.includes(key)) issues.push(unknownKey(key, OPTION_KEYS));
  const runAt = parseTime(o.runAt, 'runAt', issues);
  const delayMs = checkMs(o.delayMs, 'delayMs', issues, 0);
  if (o.runAt !== undefined && o.delayMs !== undefined) issues.push({ path: 'delayMs', message: 'give runAt or delayMs, not both' });
  const expiresAt = parseTime(o.expiresAt, 'expiresAt', issues);
  const maxAgeMs = checkMs(o.maxAgeMs, 'maxAgeMs', issues, 1);
  if (o.expiresAt !== undefined && o.maxAgeMs !== undefined) issues.push({ path: 'maxAgeMs', message: 'give expiresAt or maxAgeMs, not both' });
  // Deadlines the job could never meet. Relative times are measured from this process's clock
  // here; the database applies them on its own.
  const debounceFor = typeof o.debounceMs === 'number' && Number.isFinite(o.debounceMs) ? o.debounceMs : null;
  const startsIn = runAt ? runAt.getTime() - Date.now() : (delayMs ?? debounceFor ?? 0);
  if (expiresAt && expiresAt.getTime() <= Date.now()) issues.push({ path: 'expiresAt', message: 'is in the past: the job could never run' });
  else if (runAt && expiresAt && expiresAt <= runAt) issues.push({ path: 'expiresAt', message: 'is not after runAt: the job could never run' });
  else if (expiresAt && !runAt && expiresAt.getTime() - Date.now() <= startsIn) issues.push({ path: 'expiresAt', message: 'is not after the run time (now + delay): the job could never run' });
  if (maxAgeMs !== null && maxAgeMs <= startsIn) {
    issues.push({ path: 'maxAgeMs', message: `is not longer than the time until the job runs (${Math.round(startsIn)} ms): the job could never run` });
  }
  if (o.priority !== undefined && !(typeof o.priority === 'number' && Number.isInteger(o.priority) && o.priority >= -1000 && o.priority <= 1000)) {
    issues.push({ path: 'priority', message: `must be an integer from -1000 to 1000 (lower runs first), got ${String(o.priority)}` });
  }
  if (o.maxAttempts !== undefined && !(typeof o.maxAttempts === 'number' && Number.isInteger(o.maxAttempts) && o.maxAttempts >= 1 && o.maxAttempts <= 1000)) {
    issues.push({ path: 'maxAttempts', message: `must be an integer from 1 to 1000, got ${String(o.maxAttempts)}` });
  }
  if (o.queue !== undefined) {
    const p = nameProblem(o.queue);
    if (p) issues.push({ path: 'queue', message: p });
  }
  if (o.dedupeKey !== undefined) {
    if (typeof o.dedupeKey !== 'string' || o.dedupeKey.length < 1 || o.dedupeKey.length > 512) {
      issues.push({ path: 'dedupeKey', message: 'must be a string of 1 to 512 characters (hash longer keys)' });
    } else if (o.dedupeKey.includes('\u0000') || !o.dedupeKey.isWellFormed()) {
      issues.push({ path: 'dedupeKey', message: 'has a NUL character or a lone surrogate' });
    }
  }
  const debounceMs = checkMs(o.debounceMs, 'debounceMs', issues, 0);
  const scope = scopeName(def.dedupeScope ?? 'pending');
  if (debounceMs !== null) {
    if (o.dedupeKey === undefined) issues.push({ path: 'debounceMs', message: 'needs a dedupeKey: debounce moves the pending job with the same key' });
    if (o.runAt !== undefined || o.delayMs !== undefined) issues.push({ path: 'debounceMs', message: 'sets the run time itself; drop runAt/delayMs' });
    if (scope !== 'pending') issues.push({ path: 'debounceMs', message: `moves a pending job, so it needs the 'pending' dedupe scope; kind "${def.kind}" has '${scope}'` });
  }
  const throttleMs = checkMs(o.throttleMs, 'throttleMs', issues, 1);
  if (throttleMs !== null) {
    if (o.dedupeKey === undefined) issues.push({ path: 'throttleMs', message: 'needs a dedupeKey: a throttle drops repeats of the same key' });
    if (o.debounceMs !== undefined) issues.push({ path: 'throttleMs', message: 'give debounceMs (keep the last) or throttleMs (keep the first), not both' });
    if (scope !== 'pending') issues.push({ path: 'throttleMs', message: `is a dedupe mode of its own; kind "${def.kind}" has the '${scope}' dedupe scope` });
  }
  if (o.db !== undefined && !isExecutor(o.db)) issues.push({ path: 'db', message: 'must be a pg Client, PoolClient or Pool (something with query())' });
  let traceContext: string | null = null;
  if (o.traceContext !== undefined) {
    const problem = traceContextProblem(o.traceContext);
    if (problem) issues.push({ path: 'traceContext', message: problem });
    else traceContext = JSON.stringify(o.traceContext);
  }
  if (issues.length) throw new OptionsInvalidError(`enqueue options for "${def.kind}"`, issues);
  return {
    row: {
      kind: def.kind,
      queue: (o.queue as string | undefined) ?? def.queue,
      priority: (o.priority as number | undefined) ?? def.priority,
      runAt,
      delayMs: debounceMs ?? delayMs,
      payload,
      maxAttempts: (o.maxAttempts as number | undefined) ?? def.maxAttempts,
      atMostOnce: def.delivery === 'at-most-once',
      dedupeKey: (o.dedupeKey as string | undefined) ?? null,
      expiresAt,
      maxAgeMs,
      traceContext,
      dedupeScope: scope,
      limitKeys: null,
    },
    debounced: debounceMs !== null,
    throttleMs,
    db: o.db as Executor | undefined,
  };
}

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * What is wrong with a W3C trace context to store with a job, or undefined: an object of at most
 * 8 string fields (keys up to 64, values up to 512 characters) whose `traceparent`, if any, is
 * well formed. The same rule as the SQL function's `trace_context_problem`.
 */
export function traceContextProblem(tc: unknown): string | undefined {
  if (typeof tc !== 'object' || tc === null || Array.isArray(tc)) return 'must be an object such as { traceparent: "00-…-…-01" }';
  const entries = Object.entries(tc);
  if (entries.length > 8) return 'has more than 8 fields';
  if (entries.some(([k, v]) => typeof v !== 'string' || k.length > 64 || v.length > 512)) return 'fields must be strings (keys up to 64, values up to 512 characters)';
  const tp = (tc as Record<string, string>).traceparent;
  if (tp !== undefined && !TRACEPARENT.test(tp)) return 'traceparent is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)';
  return undefined;
}
