import { hostname } from 'node:os';
import type { Database } from '../db/database.js';
import { ConfigError, unknownKey, type Issue } from '../errors.js';
import type { Clock } from '../lifecycle/clock.js';
import type { EventBus } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';

/** The options of a {@link LeaseElector}. */
export interface LeaseElectorOptions {
  /** The database whose `leases` table holds the lease. */
  database: Database;
  /** The lease's name: 1 to 200 characters. One leader per name across every process on the schema. */
  name: string;
  /** Who this process is, shown in listings. Default `hostname:pid`. Purely informational: terms are told apart by token. */
  holder?: string;
  /** How long a term lasts without renewal, in ms (database clock). Default 15 000. A dead holder is replaced within `ttlMs + retryMs`. */
  ttlMs?: number;
  /** How often the holder renews, in ms. Default `ttlMs / 3`. Must leave room for a renewal before the holder steps down. */
  renewMs?: number;
  /** How often a non-holder tries to acquire, in ms; each wait is drawn between half and all of it. Default `ttlMs / 3`. */
  retryMs?: number;
  /**
   * How long before its lease would expire the holder steps down when renewals fail, in ms (monotonic
   * clock, from the moment the last successful renewal was sent). Covers a late timer and clock rate
   * drift. Default `ttlMs / 5`.
   */
  stepDownMarginMs?: number;
  /** Where `leader.elected` and `leader.deposed` go. Default: a private bus. */
  events?: EventBus;
  /** For errors of acquisition and renewal. Default: silent. */
  logger?: Logger;
  /** Where the elector reads monotonic time and sets its timers (the step-down deadline). Default: the system clock; tests may move one by hand. */
  clock?: Clock;
}

/** Options after defaults, validated. */
export interface ResolvedElectorOptions {
  database: Database;
  name: string;
  holder: string;
  ttlMs: number;
  renewMs: number;
  retryMs: number;
  stepDownMarginMs: number;
  events: EventBus | undefined;
  logger: Logger | undefined;
  clock: Clock | undefined;
}

const KEYS = ['database', 'name', 'holder', 'ttlMs', 'renewMs', 'retryMs', 'stepDownMarginMs', 'events', 'logger', 'clock'];
const MAX_MS = 2_147_483_647;

function isIntIn(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

/** Checks a lease name; returns the problem or undefined. */
export function leaseNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string') return `must be a string, got ${typeof name}`;
  if (name.length < 1 || name.length > 200) return 'must be 1 to 200 characters';
  return undefined;
}

/** The default holder of this process: `hostname:pid`. */
export function defaultHolder(): string {
  return `${hostname()}:${process.pid}`;
}

/** Applies defaults and validates; throws NS_CONFIG_INVALID listing every problem. */
export function resolveElectorOptions(input: LeaseElectorOptions): ResolvedElectorOptions {
  const o = (input ?? {}) as unknown as Record<string, unknown>;
  const issues: Issue[] = [];
  for (const key of Object.keys(o)) if (!KEYS.includes(key)) issues.push(unknownKey(key, KEYS));
  const db = o.database as { statements?: unknown; pool?: unknown } | undefined;
  if (typeof db !== 'object' || db === null || !db.statements || !db.pool) {
    issues.push({ path: 'database', message: 'must be the Database of a nightshift client' });
  }
  const nameProblem = leaseNameProblem(o.name);
  if (nameProblem) issues.push({ path: 'name', message: nameProblem });
  if (o.holder !== undefined && (typeof o.holder !== 'string' || o.holder.length < 1 || o.holder.length > 200)) {
    issues.push({ path: 'holder', message: 'must be a string of 1 to 200 characters' });
  }
  if (o.ttlMs !== undefined && !isIntIn(o.ttlMs, 100, MAX_MS)) {
    issues.push({ path: 'ttlMs', message: 'must be an integer number of milliseconds, at least 100' });
  }
  const ttlMs = isIntIn(o.ttlMs, 100, MAX_MS) ? o.ttlMs : 15_000;
  for (const key of ['renewMs', 'retryMs'] as const) {
    if (o[key] !== undefined && !isIntIn(o[key], 1, MAX_MS)) issues.push({ path: key, message: 'must be a positive integer number of milliseconds' });
  }
  if (o.stepDownMarginMs !== undefined && !isIntIn(o.stepDownMarginMs, 0, ttlMs - 1)) {
    issues.push({ path: 'stepDownMarginMs', message: `must be an integer number of milliseconds from 0 to below ttlMs (${ttlMs})` });
  }
  const stepDownMarginMs = isIntIn(o.stepDownMarginMs, 0, ttlMs - 1) ? o.stepDownMarginMs : Math.floor(ttlMs / 5);
  const renewMs = isIntIn(o.renewMs, 1, MAX_MS) ? o.renewMs : Math.max(1, Math.floor(ttlMs / 3));
  if (o.renewMs !== undefined && renewMs >= ttlMs - stepDownMarginMs) {
    issues.push({
      path: 'renewMs',
      message: `must be below ttlMs - stepDownMarginMs (${ttlMs - stepDownMarginMs}) so a renewal is tried before the holder steps down; ttlMs / 3 is a good choice`,
    });
  }
  const retryMs = isIntIn(o.retryMs, 1, MAX_MS) ? o.retryMs : Math.max(1, Math.floor(ttlMs / 3));
  if (o.events !== undefined && (typeof o.events !== 'object' || o.events === null || typeof (o.events as EventBus).emit !== 'function')) {
    issues.push({ path: 'events', message: 'must be an EventBus' });
  }
  if (o.logger !== undefined && (typeof o.logger !== 'object' || o.logger === null || typeof (o.logger as Logger).warn !== 'function')) {
    issues.push({ path: 'logger', message: 'must be a logger (pino or one with debug/info/warn/error)' });
  }
  if (o.clock !== undefined && (typeof o.clock !== 'object' || o.clock === null || typeof (o.clock as Clock).monotonic !== 'function' || typeof (o.clock as Clock).setTimeout !== 'function')) {
    issues.push({ path: 'clock', message: 'must be a Clock (monotonic, wall, setTimeout, clearTimeout)' });
  }
  if (issues.length) throw new ConfigError(typeof o.name === 'string' ? `lease elector "${o.name}"` : 'lease elector options', issues);
  return {
    database: input.database,
    name: input.name,
    holder: input.holder ?? defaultHolder(),
    ttlMs,
    renewMs,
    retryMs,
    stepDownMarginMs,
    events: input.events,
    logger: input.logger,
    clock: input.clock,
  };
}
