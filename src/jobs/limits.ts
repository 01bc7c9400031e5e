import type { LimitRow } from '../db/limits.js';
import { OptionsInvalidError, unknownKey, type Issue } from '../errors.js';
import { nameProblem } from './names.js';

/**
 * At most `limit` jobs running at once across the whole fleet — per key when `key` is given (one
 * running job per couple, per PSP account). Jobs over the limit stay available and start when a
 * slot frees (a job of the limit leaves `running`, or its crashed worker's lease is rescued).
 */
export interface ConcurrencyLimit<P = unknown> {
  /** Jobs running at once, 1 to 1,000,000. */
  limit: number;
  /** The key the limit holds per, computed from the payload at enqueue: a string of 1 to 512 characters. Default: one limit for all. */
  key?: (payload: P) => string;
  /**
   * Limits of the same name share their slots, across kinds (one provider called by several
   * kinds). A name of letters, digits, _ . : - (up to 100). Default: the limit is the kind's own.
   */
  name?: string;
}

/**
 * At most `limit` starts in any window of `per` ms across the fleet, on the database clock, per key
 * when `key` is given. Jobs over the limit stay available and start as soon as the window allows.
 */
export interface RateLimit<P = unknown> {
  /** Starts per window, 1 to 1,000,000. */
  limit: number;
  /** The window, in ms: 1 to 86,400,000 (a day). */
  per: number;
  /** As for {@link ConcurrencyLimit.key}. Default: one limit for all. */
  key?: (payload: P) => string;
  /** As for {@link ConcurrencyLimit.name}. */
  name?: string;
}

/** One limit as the worker and the database know it. */
export interface ResolvedLimit {
  /** Its stable name: `kind:<kind>:c0`, `queue:<queue>:r`, or `limit:<name>` for a named one. */
  readonly name: string;
  readonly type: 'concurrency' | 'rate';
  readonly max: number;
  /** The window of a rate limit; null for a concurrency limit. */
  readonly perMs: number | null;
  readonly key: ((payload: unknown) => string) | undefined;
}

const MAX_LIMIT = 1_000_000;
const MAX_PER_MS = 86_400_000;
const KEY_MAX = 512;

/** A limit option: one limit or a list of them. */
export type OneOrMany<T> = T | readonly T[];

/**
 * Validates the `concurrency` and `rateLimit` options of a kind or queue into limits with stable
 * names (`owner` is `kind:<kind>` or `queue:<queue>`), pushing a problem per wrong field.
 * `keys: false` (queues) refuses a `key`: a queue's jobs have payloads of different kinds.
 */
export function resolveLimits(owner: string, o: { concurrency?: unknown; rateLimit?: unknown }, issues: Issue[], keys = true): ResolvedLimit[] {
  const out: ResolvedLimit[] = [];
  for (const [field, type] of [
    ['concurrency', 'concurrency'],
    ['rateLimit', 'rate'],
  ] as const) {
    const value = o[field];
    if (value === undefined) continue;
    const list = Array.isArray(value) ? (value as unknown[]) : [value];
    const many = Array.isArray(value) && list.length > 1;
    if (Array.isArray(value) && list.length === 0) issues.push({ path: field, message: 'is an empty list: give a limit, or leave the option out' });
    list.forEach((spec, i) => {
      const path = Array.isArray(value) ? `${field}.${i}` : field;
      const allowed = type === 'rate' ? ['limit', 'per', 'key', 'name'] : ['limit', 'key', 'name'];
      if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
        issues.push({ path, message: type === 'rate' ? 'must be { limit, per } (and optionally key, name)' : 'must be { limit } (and optionally key, name)' });
        return;
      }
      const s = spec as Record<string, unknown>;
      const before = issues.length;
      for (const k of Object.keys(s))
        if (!allowed.includes(k))
          issues.push(
            unknownKey(
              `${path}.${k}`,
              allowed.map((a) => `${path}.${a}`),
            ),
          );
      if (!isInt(s.limit, 1, MAX_LIMIT)) issues.push({ path: `${path}.limit`, message: `must be an integer from 1 to ${MAX_LIMIT}, got ${JSON.stringify(s.limit) ?? String(s.limit)}` });
      if (type === 'rate' && !isInt(s.per, 1, MAX_PER_MS))
        issues.push({ path: `${path}.per`, message: `must be a window in ms, an integer from 1 to ${MAX_PER_MS}, got ${JSON.stringify(s.per) ?? String(s.per)}` });
      if (s.key !== undefined && typeof s.key !== 'function') issues.push({ path: `${path}.key`, message: 'must be a function (payload) => string' });
      if (s.key !== undefined && !keys) issues.push({ path: `${path}.key`, message: "a queue's limit holds for the whole queue; put a limit per key on the job kind" });
      if (s.name !== undefined) {
        const p = typeof s.name === 'string' && s.name.length > 100 ? 'must be at most 100 characters' : nameProblem(s.name);
        if (p) issues.push({ path: `${path}.name`, message: p });
      }
      if (issues.length > before) return;
      const suffix = `${type === 'rate' ? 'r' : 'c'}${many ? i : ''}`;
      out.push(
        Object.freeze({
          name: s.name !== undefined ? `limit:${s.name as string}` : `${owner}:${suffix}`,
          type,
          max: s.limit as number,
          perMs: type === 'rate' ? (s.per as number) : null,
          key: s.key as ((payload: unknown) => string) | undefined,
        }),
      );
    });
  }
  const names = new Set<string>();
  for (const l of out) {
    if (names.has(l.name)) issues.push({ path: 'concurrency', message: `two limits are named "${l.name.slice('limit:'.length)}"` });
    names.add(l.name);
  }
  return out;
}

function isInt(v: unknown, min: number, max: number): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

/**
 * The limit keys a job of these limits holds, computed from its payload (the kind's key
 * functions), or null when it has no limit. A key function that throws, or returns anything but
 * a string of 1 to 512 characters without NUL, fails the enqueue with NS_OPTIONS_INVALID.
 */
export function limitKeys(kind: string, limits: readonly ResolvedLimit[], payload: unknown): string[] | null {
  if (limits.length === 0) return null;
  const keys: string[] = [];
  const issues: Issue[] = [];
  for (const l of limits) {
    if (!l.key) {
      keys.push(l.name);
      continue;
    }
    let k: unknown;
    try {
      k = l.key(payload);
    } catch (err) {
      issues.push({ path: `${l.type === 'rate' ? 'rateLimit' : 'concurrency'}.key`, message: `threw ${err instanceof Error ? err.name : typeof err} for this payload` });
      continue;
    }
    if (typeof k !== 'string' || k.length < 1 || k.length > KEY_MAX || k.includes('\u0000') || !k.isWellFormed()) {
      issues.push({
        path: `${l.type === 'rate' ? 'rateLimit' : 'concurrency'}.key`,
        message: `must return a string of 1 to ${KEY_MAX} characters without NUL, got ${typeof k === 'string' ? `a string of ${k.length}` : typeof k}`,
      });
      continue;
    }
    keys.push(`${l.name}#${k}`);
  }
  if (issues.length) throw new OptionsInvalidError(`limit keys of "${kind}"`, issues);
  return keys;
}

/** A limit's row in the limits table. */
export function limitRow(l: ResolvedLimit): LimitRow {
  return { name: l.name, type: l.type, max: l.max, perMs: l.perMs, keyed: l.key !== undefined };
}

/**
 * The keys of a job of these limits that carries none (enqueued through SQL, the CLI, or code
 * that does not know the limits): the limits' names, and `name#` (one shared key) for a limit per key.
 */
export function defaultKeys(limits: readonly ResolvedLimit[]): string[] {
  return limits.map((l) => (l.key ? `${l.name}#` : l.name));
}

/**
 * Problems with the limits of a client's kinds and queues taken together: a named limit shared by
 * kinds must be the same limit everywhere, and a queue is defined once.
 */
export function limitConflicts(jobs: readonly { kind?: unknown; limits?: readonly ResolvedLimit[] }[], queues: readonly { name?: unknown; limits?: readonly ResolvedLimit[] }[]): Issue[] {
  const issues: Issue[] = [];
  const seen = new Map<string, ResolvedLimit>();
  jobs.forEach((j, i) => {
    for (const l of j?.limits ?? []) {
      const other = seen.get(l.name);
      if (other && (other.type !== l.type || other.max !== l.max || other.perMs !== l.perMs || (other.key === undefined) !== (l.key === undefined))) {
        issues.push({ path: `jobs.${i}`, message: `limit "${l.name.slice('limit:'.length)}" of kind "${String(j.kind)}" differs from another kind's limit of that name: a shared limit is one limit` });
      }
      seen.set(l.name, l);
    }
  });
  const names = new Set<string>();
  queues.forEach((q, i) => {
    if (typeof q?.name !== 'string') return;
    if (names.has(q.name)) issues.push({ path: `queueDefinitions.${i}`, message: `queue "${q.name}" is defined twice` });
    names.add(q.name);
  });
  return issues;
}
