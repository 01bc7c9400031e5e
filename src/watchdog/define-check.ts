import type { Executor } from '../db/executor.js';
import { ConfigError, isNightshiftError, unknownKey, type Issue } from '../errors.js';
import type { JobLogger } from '../jobs/define-job.js';
import { defineSchedule, type ScheduleDefinition } from '../schedules/define-schedule.js';
import { parseDuration } from '../schedules/duration.js';

/** What a check says about what it looked at. */
export type CheckStatus = 'ok' | 'warning' | 'critical';

/** One result of a check: about the check as a whole, or about one `subject` of it (a queue, a PSP). */
export interface CheckResult {
  status: CheckStatus;
  /** What is wrong and what to do about it (up to 2,000 characters); it goes to the notifiers. */
  message: string;
  /** JSON for machines (up to 8 KiB). */
  details?: Record<string, unknown>;
  /** What the result is about, when the check reports several things (up to 200 characters). Default `''`: the check as a whole. */
  subject?: string;
}

/** What a check's `run` returns: one result, or one per subject. */
export type CheckOutcome = CheckResult | readonly CheckResult[];

/** A result as the previous run recorded it. */
export interface RecordedResult {
  readonly subject: string;
  readonly status: CheckStatus;
  readonly message: string;
  readonly details: Readonly<Record<string, unknown>> | null;
}

/** What a check's `run` receives. */
export interface CheckContext {
  /** The check's name. */
  readonly name: string;
  /** The tick the run stands for (a manual run: when it started, on the database clock). Judge ages against it. */
  readonly at: Date;
  /** True for a run started by `checks run` / `runCheck`. */
  readonly manual: boolean;
  /** Aborted when the run passes `timeoutMs`, and at shutdown. */
  readonly signal: AbortSignal;
  /** The shared pool, for your queries. */
  readonly db: Executor;
  /** A logger carrying the check's name. */
  readonly log: JobLogger;
  /** The previous applied run's results; empty the first time. */
  readonly previous: readonly RecordedResult[];
}

/** The options of {@link defineCheck}. Give exactly one of `every` and `cron`. */
export interface CheckOptions {
  /** The check's stable name: 1 to 100 letters, digits, _ . : - (names starting `nightshift.` are the built-ins'). */
  name: string;
  /** An interval: ms (whole seconds, at least 1 s) or a string like `'5m'`. */
  every?: number | string;
  /** A cron expression (5 fields, or 6 with seconds first), evaluated in `tz`. */
  cron?: string;
  /** IANA time zone of `cron`. Default `'UTC'`. */
  tz?: string;
  /** Looks and says: one result or one per subject. Throwing, or not finishing within `timeoutMs`, is a `critical` result. */
  run: (ctx: CheckContext) => CheckOutcome | Promise<CheckOutcome>;
  /** A run not finished by then is a `critical` result ("timed out"); `ctx.signal` is aborted. Default 30 s. */
  timeoutMs?: number | string;
  /** Bad results in a row before an alert opens (flapping damping). Default 1. */
  failAfter?: number;
  /** While an alert stays open and unacknowledged, notify again this often (`'1h'`). Default: never. */
  renotify?: number | string;
  /** Names of the notifiers that get this check's alerts. Default: every notifier; `[]` records alerts only. */
  notify?: string[];
  /** One line for `checks list`. */
  description?: string;
}

/** A validated, frozen check, as returned by {@link defineCheck}. */
export interface CheckDefinition {
  readonly name: string;
  readonly run: (ctx: CheckContext) => CheckOutcome | Promise<CheckOutcome>;
  /** The schedule whose ticks run the check (`check:<name>`, its job of the same kind). */
  readonly schedule: ScheduleDefinition;
  /** The timing as one string (`every 5m`, `cron 0 1 * * * UTC`). */
  readonly spec: string;
  readonly timeoutMs: number;
  readonly failAfter: number;
  readonly renotifyMs: number | undefined;
  readonly notify: readonly string[] | undefined;
  readonly description: string | undefined;
  /** True for nightshift's own checks. */
  readonly builtin: boolean;
}

/** The prefix of the schedule and the job kind that run a check. */
export const CHECK_PREFIX = 'check:';
/** The queue of check runs and notifications. */
export const WATCHDOG_QUEUE = 'nightshift.watchdog';
/** The names of built-in checks start with this. */
export const BUILTIN_PREFIX = 'nightshift.';
/** Default `timeoutMs`. */
export const DEFAULT_CHECK_TIMEOUT_MS = 30_000;

/** The schedule name and job kind of a check. */
export function checkKind(name: string): string {
  return `${CHECK_PREFIX}${name}`;
}

const KEYS = ['name', 'every', 'cron', 'tz', 'run', 'timeoutMs', 'failAfter', 'renotify', 'notify', 'description'];
const CHECK_NAME = /^[A-Za-z0-9_.:-]{1,100}$/;
const MAX_TIMEOUT_MS = 3_600_000;

/**
 * Defines a check: what it looks at (`run`), when (`every` or `cron`), and how its alerts behave
 * (`failAfter`, `renotify`, `notify`). Everything is checked here and every problem is reported at
 * once (NS_CONFIG_INVALID, naming each field). Pass it to the config's `checks`; a role's
 * `checks` decides which processes host it.
 */
export function defineCheck(options: CheckOptions): CheckDefinition {
  return buildCheck(options, false);
}

/** {@link defineCheck} for nightshift's own checks, whose names start `nightshift.`. */
export function buildCheck(options: CheckOptions, builtin: boolean): CheckDefinition {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('check definition', [{ path: '', message: 'pass an object: defineCheck({ name, every | cron, run })' }]);
  }
  const o = options as unknown as Record<string, unknown>;
  const issues: Issue[] = [];
  for (const key of Object.keys(o)) if (!KEYS.includes(key)) issues.push(unknownKey(key, KEYS));
  const name = o.name;
  if (typeof name !== 'string' || !CHECK_NAME.test(name)) {
    issues.push({ path: 'name', message: `${typeof name === 'string' ? `"${name.slice(0, 60)}"` : 'a name'} is required: 1 to 100 characters of letters, digits, _ . : -` });
  } else if (!builtin && name.startsWith(BUILTIN_PREFIX)) {
    issues.push({ path: 'name', message: `names starting "${BUILTIN_PREFIX}" are reserved for the built-in checks; choose another name` });
  }
  if (typeof o.run !== 'function') issues.push({ path: 'run', message: 'must be a function (ctx) => result | results' });

  let schedule: ScheduleDefinition | undefined;
  try {
    schedule = defineSchedule({
      name: checkKind(typeof name === 'string' && CHECK_NAME.test(name) ? name : 'invalid'),
      ...(o.every !== undefined ? { every: o.every as number | string } : {}),
      ...(o.cron !== undefined ? { cron: o.cron as string } : {}),
      ...(o.tz !== undefined ? { tz: o.tz as string } : {}),
      job: checkKind(typeof name === 'string' && CHECK_NAME.test(name) ? name : 'invalid'),
      payload: (tick) => ({ at: tick.at.toISOString(), manual: tick.manual }),
      // A late check run is worth little and a pile of them nothing: one at a time, and after
      // downtime only the latest missed tick.
      overlap: 'skip',
      catchUp: 'latest',
    });
  } catch (err) {
    if (!isNightshiftError(err) || err.code !== 'NS_CONFIG_INVALID') throw err;
    for (const i of err.issues) if (['every', 'cron', 'tz'].includes(i.path.split('.')[0]!)) issues.push(i);
  }

  const timeoutMs = durationOption(o.timeoutMs, 'timeoutMs', 1, MAX_TIMEOUT_MS, issues) ?? DEFAULT_CHECK_TIMEOUT_MS;
  const renotifyMs = durationOption(o.renotify, 'renotify', 1_000, 365 * 86_400_000, issues);
  if (o.failAfter !== undefined && !(typeof o.failAfter === 'number' && Number.isInteger(o.failAfter) && o.failAfter >= 1 && o.failAfter <= 1_000)) {
    issues.push({ path: 'failAfter', message: 'must be an integer from 1 to 1000: bad results in a row before an alert opens' });
  }
  if (o.notify !== undefined && !(Array.isArray(o.notify) && o.notify.every((n) => typeof n === 'string' && n.length > 0))) {
    issues.push({ path: 'notify', message: 'must be a list of notifier names ([] records alerts without notifying)' });
  }
  if (o.description !== undefined && (typeof o.description !== 'string' || o.description.length > 300)) {
    issues.push({ path: 'description', message: 'must be a string of at most 300 characters' });
  }
  const label = typeof name === 'string' ? `check "${name.slice(0, 100)}"` : 'check definition';
  if (issues.length || !schedule) throw new ConfigError(label, issues.length ? issues : [{ path: 'every', message: 'give every or cron' }]);
  return Object.freeze({
    name: name as string,
    run: options.run,
    schedule,
    spec: schedule.spec,
    timeoutMs,
    failAfter: (o.failAfter as number | undefined) ?? 1,
    renotifyMs,
    notify: options.notify ? Object.freeze([...options.notify]) : undefined,
    description: options.description,
    builtin,
  });
}

function durationOption(value: unknown, path: string, min: number, max: number, issues: Issue[]): number | undefined {
  if (value === undefined) return undefined;
  const d = parseDuration(value);
  if ('problem' in d) {
    issues.push({ path, message: d.problem });
    return undefined;
  }
  if (d.ms < min || d.ms > max) {
    issues.push({ path, message: `must be from ${min} ms to ${max} ms, got ${d.ms}` });
    return undefined;
  }
  return d.ms;
}

/** Whether a value was made by {@link defineCheck}. */
export function isCheckDefinition(value: unknown): value is CheckDefinition {
  const v = value as CheckDefinition | null;
  return typeof v === 'object' && v !== null && typeof v.name === 'string' && typeof v.run === 'function' && typeof v.schedule?.spec === 'string';
}
