import type { Executor } from '../db/executor.js';
import { ConfigError, unknownKey, type Issue } from '../errors.js';
import { requiredEnvProblems } from '../jobs/define-job.js';
import { nameProblem } from '../jobs/names.js';
import type { Logger } from '../telemetry/logger.js';

/** What a daemon's `run` receives: its term of leadership and the means to fence its writes. */
export interface DaemonContext {
  /** The daemon's name. */
  readonly name: string;
  /** The lease the daemon is elected under (`daemon:<name>`), for your own `assert_lease(name, token)` calls in SQL. */
  readonly leaseName: string;
  /** This term's fencing token: strictly greater than every earlier term's, never reused. */
  readonly fencingToken: string;
  /** Aborts when leadership is lost (not renewed in time, taken over) or the process is stopping. */
  readonly signal: AbortSignal;
  /** A logger carrying the daemon's name and fencing token (as `daemon` and `fencingToken`). */
  readonly log: Logger;
  /** The shared pool, for queries and your own transactions. */
  readonly db: Executor;
  /**
   * Fences the transaction `tx` (a client inside BEGIN … COMMIT): throws FencedError (NS_FENCED)
   * unless this term still holds the lease, and otherwise keeps any takeover from committing before
   * `tx` ends — so the transaction's writes commit only if this process is still the leader.
   */
  fence(tx: Executor): Promise<void>;
  /** Runs `fn` in a transaction fenced by this term (BEGIN, fence, fn, COMMIT; ROLLBACK on error). */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T>;
}

/** The options of {@link defineDaemon}. */
export interface DaemonOptions {
  /** The daemon's name, unique in the fleet: 1 to 128 characters of letters, digits, _ . : - */
  name: string;
  /**
   * With `everyMs`: called every `everyMs` while this process is the leader, never overlapping
   * itself (a run longer than `everyMs` delays the next). Without: a loop that runs until
   * `ctx.signal` aborts. Either way a run that throws is restarted with back-off while this
   * process stays the leader.
   */
  run: (ctx: DaemonContext) => Promise<void> | void;
  /** Period between the starts of runs, in ms. Default: none (`run` is a long-running loop). */
  everyMs?: number;
  /** Lease duration for this daemon, in ms: a dead leader is replaced within about this plus a third of it. Default: the runner's (15 000). */
  ttlMs?: number;
  /** Environment variables that must be set for this daemon to start (fail closed, listing every missing one). */
  requiredEnv?: readonly string[];
}

/** A daemon, as returned by {@link defineDaemon}. */
export interface DaemonDefinition {
  readonly name: string;
  readonly run: (ctx: DaemonContext) => Promise<void> | void;
  readonly everyMs: number | undefined;
  readonly ttlMs: number | undefined;
  readonly requiredEnv: readonly string[];
}

const DAEMON_OPTION_KEYS = ['name', 'run', 'everyMs', 'ttlMs', 'requiredEnv'];
const MAX_MS = 2_147_483_647;

function isIntIn(v: unknown, min: number, max: number): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

/**
 * Defines a daemon: work that runs on exactly one live process of the fleet, elected through a
 * lease in PostgreSQL, with failover when its holder dies and a fencing token for its writes.
 * Invalid options throw NS_CONFIG_INVALID listing every problem.
 */
export function defineDaemon(options: DaemonOptions): DaemonDefinition {
  const issues: Issue[] = [];
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  if (typeof options !== 'object' || options === null) issues.push({ path: '', message: 'must be an object { name, run, … }' });
  for (const key of Object.keys(o)) {
    if (!DAEMON_OPTION_KEYS.includes(key)) issues.push(unknownKey(key, DAEMON_OPTION_KEYS));
  }
  const problem = nameProblem(o.name);
  if (problem) issues.push({ path: 'name', message: problem });
  if (typeof o.run !== 'function') issues.push({ path: 'run', message: 'must be a function (ctx) => …' });
  if (o.everyMs !== undefined && !isIntIn(o.everyMs, 1, MAX_MS)) {
    issues.push({ path: 'everyMs', message: 'must be a positive integer number of milliseconds (or left out for a loop that runs until ctx.signal aborts)' });
  }
  if (o.ttlMs !== undefined && !isIntIn(o.ttlMs, 100, MAX_MS)) {
    issues.push({ path: 'ttlMs', message: 'must be an integer number of milliseconds, at least 100' });
  }
  issues.push(...requiredEnvProblems(o.requiredEnv, 'requiredEnv'));
  const label = typeof o.name === 'string' ? `daemon "${o.name}"` : 'daemon definition';
  if (issues.length) throw new ConfigError(label, issues);
  return Object.freeze({
    name: options.name,
    run: options.run,
    everyMs: options.everyMs,
    ttlMs: options.ttlMs,
    requiredEnv: Object.freeze([...(options.requiredEnv ?? [])]),
  });
}

/** The environment variables the daemons require that `env` lacks (unset, empty or blanks only), one issue each. */
export function missingEnv(daemons: readonly DaemonDefinition[], env: Record<string, string | undefined>): Issue[] {
  const issues: Issue[] = [];
  for (const d of daemons) {
    for (const name of d.requiredEnv) {
      if ((env[name] ?? '').trim() === '') issues.push({ path: `${d.name}.requiredEnv.${name}`, message: `environment variable ${name} is not set (or blank); daemon "${d.name}" needs it` });
    }
  }
  return issues;
}
