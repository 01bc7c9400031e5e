import { AssertionError } from 'node:assert';
import { isDeepStrictEqual } from 'node:util';
import type { Executor } from '../db/executor.js';
import type { JobRecord, JobState } from '../db/job-row.js';
import type { JobDefinition } from '../jobs/define-job.js';
import type { Nightshift } from '../runtime/nightshift.js';
import { withTestKit } from './test-kit.js';

/**
 * Which jobs count: an object is matched against the payload (every key it names must be equal
 * there, objects compared the same way at every depth, arrays element by element); a function
 * receives the whole job (queue, priority, runAt, dedupeKey, …) and says yes or no.
 */
export type JobMatch = Record<string, unknown> | ((job: JobRecord) => boolean);

/** Options of {@link enqueued} and the assertions. */
export interface EnqueuedOptions {
  /**
   * Look through this client instead of the pool: pass the client of your open transaction to
   * see the jobs it enqueued before it commits (and, after a rollback, that they are gone).
   */
  db?: Executor;
  /** States that count. Default `['available']`: jobs waiting to run, due or scheduled. */
  states?: JobState[];
}

const LIMIT = 10_000;

/** Whether `actual` has every key of `expected` with an equal value (objects at any depth; arrays by element). */
export function matchesPartially(actual: unknown, expected: unknown): boolean {
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((e, i) => matchesPartially(actual[i], e));
  }
  if (typeof expected === 'object' && expected !== null && !(expected instanceof Date)) {
    if (typeof actual !== 'object' || actual === null) return false;
    return Object.entries(expected).every(([k, v]) => matchesPartially((actual as Record<string, unknown>)[k], v));
  }
  return isDeepStrictEqual(actual, expected);
}

function kindOf(job: JobDefinition | string): string {
  return typeof job === 'string' ? job : job.kind;
}

function matches(job: JobRecord, match: JobMatch | undefined): boolean {
  if (match === undefined) return true;
  return typeof match === 'function' ? match(job) : matchesPartially(job.payload, match);
}

/**
 * The jobs of `job`'s kind that are waiting to run (or in `states`), oldest first, whose payload
 * matches `match`. With `{ db: client }` it reads through your transaction's client, so it sees
 * what that transaction enqueued before it commits.
 */
export async function enqueued(ns: Nightshift, job: JobDefinition | string, match?: JobMatch, options: EnqueuedOptions = {}): Promise<JobRecord[]> {
  const kind = kindOf(job);
  const jobs = await withTestKit(ns, (kit) => kit.database.admin.list({ filter: { kind, states: options.states ?? ['available'] }, limit: LIMIT, db: options.db }));
  return jobs.filter((j) => matches(j, match)).reverse();
}

function describe(kind: string, match: JobMatch | undefined, states: readonly JobState[]): string {
  const what = match === undefined ? '' : typeof match === 'function' ? ' matching the predicate' : ` with a payload matching ${JSON.stringify(match)}`;
  return `a job of kind "${kind}" (${states.join('/')})${what}`;
}

function listing(jobs: readonly JobRecord[]): string {
  if (jobs.length === 0) return 'none';
  const shown = jobs.slice(0, 5).map((j) => `#${j.id} ${j.state} ${JSON.stringify(j.payload)}`);
  return shown.join('; ') + (jobs.length > 5 ? `; and ${jobs.length - 5} more` : '');
}

/**
 * Asserts that `job` was enqueued (and waits to run, or is in `states`) with a payload matching
 * `match` — exactly `count` times when given, else at least once — and returns the matching jobs.
 * Throws an AssertionError that lists the jobs of that kind it did find.
 */
export async function assertEnqueued(ns: Nightshift, job: JobDefinition | string, match?: JobMatch, options: EnqueuedOptions & { count?: number } = {}): Promise<JobRecord[]> {
  const found = await enqueued(ns, job, match, options);
  const ok = options.count === undefined ? found.length > 0 : found.length === options.count;
  if (!ok) {
    const all = match === undefined ? found : await enqueued(ns, job, undefined, options);
    const states = options.states ?? ['available'];
    const times = options.count === undefined ? '' : ` ${options.count} time(s)`;
    throw new AssertionError({
      message: `expected ${describe(kindOf(job), match, states)}${times}${options.db ? ' (through the given client)' : ''}; found ${found.length} matching; jobs of that kind: ${listing(all)}`,
      actual: found.length,
      expected: options.count ?? '≥ 1',
      operator: 'assertEnqueued',
    });
  }
  return found;
}

/** Asserts that no job of `job`'s kind matching `match` waits to run (or is in `states`). Throws an AssertionError listing those found. */
export async function refuteEnqueued(ns: Nightshift, job: JobDefinition | string, match?: JobMatch, options: EnqueuedOptions = {}): Promise<void> {
  const found = await enqueued(ns, job, match, options);
  if (found.length > 0) {
    throw new AssertionError({
      message: `expected no ${describe(kindOf(job), match, options.states ?? ['available']).slice(2)}; found ${found.length}: ${listing(found)}`,
      actual: found.length,
      expected: 0,
      operator: 'refuteEnqueued',
    });
  }
}
