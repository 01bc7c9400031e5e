import { ConfigError, OptionsInvalidError, unknownKey, type Issue } from '../errors.js';
import type { JobDefinition } from '../jobs/define-job.js';
import { resolveEnqueueOptions } from '../jobs/enqueue-options.js';
import { nameProblem } from '../jobs/names.js';
import type { PayloadSchema, SchemaInput } from '../jobs/standard-schema.js';
import { formatDuration, parseDuration } from './duration.js';
import { compileCron, type TickTiming } from './ticks.js';
import { canonicalTimeZone, timeZoneProblem } from './time-zone.js';

/** One tick of a schedule, as the payload function sees it. */
export interface ScheduleTick {
  /** The schedule's name. */
  readonly name: string;
  /** The instant the tick stands for (for a manual run: when it was triggered, on the database clock). */
  readonly at: Date;
  /** The schedule's time zone. */
  readonly tz: string;
  /** `at` as local date (`YYYY-MM-DD`) and time (`HH:MM:SS`) in the schedule's zone. */
  readonly local: { readonly date: string; readonly time: string };
  /** True for a run started by `triggerSchedule`. */
  readonly manual: boolean;
}

/**
 * What happens to ticks missed while no ticker ran (downtime, a long pause of the process):
 * - `'none'`: missed ticks are skipped; the schedule resumes with the next tick.
 * - `'latest'` (default): the most recent missed tick runs once; older ones are skipped.
 * - `{ all: true, window }`: every missed tick within `window` (ms or `'6h'`) of now runs, oldest
 *   first; older ones are skipped.
 */
export type CatchUp = 'none' | 'latest' | { all: true; window: number | string };

/**
 * What a tick does while the schedule's previous job is still pending or running:
 * - `'skip'` (default): the tick is recorded as `skipped-overlap` and no job is enqueued.
 * - `'queue'`: the tick is recorded as `queued`; its job is enqueued when the previous one has
 *   finished, ticks in order, one at a time.
 * - `'allow'`: the job is enqueued at once; jobs may run side by side.
 */
export type Overlap = 'skip' | 'queue' | 'allow';

/** Options for the jobs a schedule enqueues; the job's own defaults apply to the rest. */
export interface ScheduleEnqueueOptions {
  queue?: string;
  priority?: number;
  maxAttempts?: number;
  /** A tick's job not started within this long is expired instead of run late. */
  maxAgeMs?: number;
}

/** The options of {@link defineSchedule}. Give exactly one of `cron` and `every`. */
export interface ScheduleOptions<S extends PayloadSchema = PayloadSchema> {
  /** The schedule's stable name: 1 to 128 characters of letters, digits, _ . : - */
  name: string;
  /** A cron expression of 5 fields (`m h dom mon dow`) or 6 (seconds first), evaluated in `tz`. */
  cron?: string;
  /** A fixed interval: ms (whole seconds, at least 1 s) or a string like `'2m'`. Ticks are aligned to the Unix epoch. */
  every?: number | string;
  /** IANA time zone of `cron` (and of `tick.local`). Default `'UTC'`. */
  tz?: string;
  /** The job each tick enqueues: its definition, or its kind. */
  job: JobDefinition<S> | string;
  /**
   * Builds the job's payload from the tick (a settlement's day id, …). Default: `{}`. Keep it a
   * function of the tick alone: it runs inside the ticker's transaction, and once more at start-up
   * on a sample tick to check its result against the job's schema.
   */
  payload?: (tick: ScheduleTick) => SchemaInput<S> | Promise<SchemaInput<S>>;
  /** Missed ticks after downtime. Default `'latest'`. */
  catchUp?: CatchUp;
  /** A tick while the previous job is pending or running. Default `'skip'`. */
  overlap?: Overlap;
  /**
   * How late a tick may be handled and still count as on time rather than missed. Default: 60 s,
   * and never past the next tick (a tick whose successor is already due is missed).
   */
  graceMs?: number | string;
  /** Options for the enqueued jobs. */
  enqueue?: ScheduleEnqueueOptions;
}

/** The resolved catch-up policy. */
export type CatchUpPolicy = { readonly policy: 'none' } | { readonly policy: 'latest' } | { readonly policy: 'all'; readonly windowMs: number };

/** A validated, frozen schedule, as returned by {@link defineSchedule}. */
export interface ScheduleDefinition<S extends PayloadSchema = PayloadSchema> {
  readonly name: string;
  readonly timing: TickTiming;
  /** The cron expression, when the schedule has one. */
  readonly cron: string | undefined;
  /** The interval in ms, when the schedule has one. */
  readonly everyMs: number | undefined;
  readonly tz: string;
  readonly job: JobDefinition<S> | string;
  /** The job's kind. */
  readonly kind: string;
  readonly payload: ((tick: ScheduleTick) => SchemaInput<S> | Promise<SchemaInput<S>>) | undefined;
  readonly catchUp: CatchUpPolicy;
  readonly overlap: Overlap;
  /** Explicit grace, or undefined for the default (60 s, never past the next tick). */
  readonly graceMs: number | undefined;
  readonly enqueue: Readonly<ScheduleEnqueueOptions>;
  /** The timing as one canonical string (`cron 0 0 * * * UTC`, `every 2m`); stored, and compared across replicas. */
  readonly spec: string;
}

/** The default catch-up policy (PRODUCT.md): run the most recent missed tick once. */
export const DEFAULT_CATCH_UP: CatchUpPolicy = Object.freeze({ policy: 'latest' });
/** The default overlap policy. */
export const DEFAULT_OVERLAP: Overlap = 'skip';
/** The default grace: how late a tick may be and still be on time. */
export const DEFAULT_GRACE_MS = 60_000;

const KEYS = ['name', 'cron', 'every', 'tz', 'job', 'payload', 'catchUp', 'overlap', 'graceMs', 'enqueue'];
const ENQUEUE_KEYS = ['queue', 'priority', 'maxAttempts', 'maxAgeMs'];
const MAX_WINDOW_MS = 400 * 86_400_000;
/** Any reference works for "does this expression ever fire": without a year field, the calendar repeats every 400 years. */
const REFERENCE = Date.UTC(2000, 0, 1);

/**
 * Defines a schedule: when it ticks (cron in a time zone, or an interval), which job each tick
 * enqueues with which payload, and what happens to missed and overlapping ticks. Everything is
 * checked here — the cron expression, the zone, an expression that can never fire, the job, the
 * options — and every problem is reported at once (NS_CONFIG_INVALID, naming each field).
 */
export function defineSchedule<S extends PayloadSchema>(options: ScheduleOptions<S>): ScheduleDefinition<S> {
  const issues: Issue[] = [];
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  if (typeof options !== 'object' || options === null) {
    throw new ConfigError('schedule definition', [{ path: '', message: 'pass an object: defineSchedule({ name, cron | every, job })' }]);
  }
  for (const key of Object.keys(o)) if (!KEYS.includes(key)) issues.push(unknownKey(key, KEYS));
  const nameIssue = nameProblem(o.name);
  if (nameIssue) issues.push({ path: 'name', message: nameIssue });

  let tz = 'UTC';
  if (o.tz !== undefined) {
    const p = timeZoneProblem(o.tz);
    if (p) issues.push({ path: 'tz', message: p });
    else tz = canonicalTimeZone(o.tz as string)!;
  }

  let timing: TickTiming | undefined;
  let spec = '';
  if (o.cron !== undefined && o.every !== undefined) {
    issues.push({ path: 'every', message: 'give cron or every, not both' });
  } else if (o.cron === undefined && o.every === undefined) {
    issues.push({ path: 'cron', message: "give cron (e.g. '0 0 * * *') or every (e.g. '2m')" });
  } else if (o.cron !== undefined) {
    if (typeof o.cron !== 'string' || o.cron.trim() === '') {
      issues.push({ path: 'cron', message: "must be a cron expression string such as '*/2 * * * *'" });
    } else {
      const expression = o.cron.trim().replace(/\s+/g, ' ');
      const compiled = compileCron(expression);
      if ('problem' in compiled) {
        issues.push({ path: 'cron', message: `"${expression}" is not a valid cron expression: ${compiled.problem}` });
      } else if (compiled.cron.nextRun(new Date(REFERENCE)) === null) {
        issues.push({ path: 'cron', message: `"${expression}" never fires: no date matches it (check day of month against month)` });
      } else {
        timing = Object.freeze({ kind: 'cron', expression, tz, cron: compiled.cron });
        spec = `cron ${expression} ${tz}`;
      }
    }
  } else {
    const d = parseDuration(o.every);
    if ('problem' in d) issues.push({ path: 'every', message: d.problem });
    else if (d.ms < 1_000 || d.ms % 1_000 !== 0) {
      issues.push({ path: 'every', message: `must be a whole number of seconds, at least 1 s, got ${d.ms} ms` });
    } else {
      timing = Object.freeze({ kind: 'every', everyMs: d.ms, tz });
      spec = `every ${formatDuration(d.ms)}`;
    }
  }

  let kind = '';
  const job = o.job as JobDefinition | string | undefined;
  if (typeof job === 'string') {
    const p = nameProblem(job);
    if (p) issues.push({ path: 'job', message: p });
    else kind = job;
  } else if (job && typeof job === 'object' && typeof job.kind === 'string' && job.schema) {
    kind = job.kind;
  } else {
    issues.push({ path: 'job', message: 'must be a job from defineJob(...) or its kind' });
  }

  if (o.payload !== undefined && typeof o.payload !== 'function') {
    issues.push({ path: 'payload', message: 'must be a function (tick) => payload, e.g. ({ at }) => ({ dayId: … })' });
  }

  const catchUp = resolveCatchUp(o.catchUp, issues);
  if (o.overlap !== undefined && !['skip', 'queue', 'allow'].includes(o.overlap as string)) {
    issues.push({ path: 'overlap', message: `must be 'skip', 'queue' or 'allow', got ${JSON.stringify(o.overlap)}` });
  }
  let graceMs: number | undefined;
  if (o.graceMs !== undefined) {
    const g = parseDuration(o.graceMs);
    if ('problem' in g) issues.push({ path: 'graceMs', message: g.problem });
    else graceMs = g.ms;
  }
  const enqueue = resolveEnqueue(o.enqueue, kind, issues);

  const label = typeof o.name === 'string' ? `schedule "${o.name}"` : 'schedule definition';
  if (issues.length || !timing) throw new ConfigError(label, issues);
  return Object.freeze({
    name: o.name as string,
    timing,
    cron: timing.kind === 'cron' ? timing.expression : undefined,
    everyMs: timing.kind === 'every' ? timing.everyMs : undefined,
    tz,
    job: options.job,
    kind,
    payload: options.payload,
    catchUp,
    overlap: (o.overlap as Overlap | undefined) ?? DEFAULT_OVERLAP,
    graceMs,
    enqueue,
    spec,
  });
}

function resolveCatchUp(value: unknown, issues: Issue[]): CatchUpPolicy {
  if (value === undefined || value === 'latest') return DEFAULT_CATCH_UP;
  if (value === 'none') return Object.freeze({ policy: 'none' });
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const v = value as Record<string, unknown>;
    const before = issues.length;
    for (const key of Object.keys(v)) if (key !== 'all' && key !== 'window') issues.push(unknownKey(`catchUp.${key}`, ['catchUp.all', 'catchUp.window']));
    if (v.all !== true) issues.push({ path: 'catchUp.all', message: "must be true: { all: true, window: '6h' }" });
    let windowMs = 0;
    if (v.window === undefined) issues.push({ path: 'catchUp.window', message: "is required: how far back missed ticks still run, e.g. '6h'" });
    else {
      const w = parseDuration(v.window);
      if ('problem' in w) issues.push({ path: 'catchUp.window', message: w.problem });
      else if (w.ms < 1_000 || w.ms > MAX_WINDOW_MS) issues.push({ path: 'catchUp.window', message: 'must be from 1 s to 400 days' });
      else windowMs = w.ms;
    }
    if (issues.length === before) return Object.freeze({ policy: 'all', windowMs });
    return DEFAULT_CATCH_UP;
  }
  issues.push({ path: 'catchUp', message: `must be 'none', 'latest' or { all: true, window: '6h' }, got ${JSON.stringify(value)}` });
  return DEFAULT_CATCH_UP;
}

function resolveEnqueue(value: unknown, kind: string, issues: Issue[]): ScheduleEnqueueOptions {
  if (value === undefined) return Object.freeze({});
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    issues.push({ path: 'enqueue', message: 'must be an object: { queue?, priority?, maxAttempts?, maxAgeMs? }' });
    return {};
  }
  const v = value as Record<string, unknown>;
  const before = issues.length;
  for (const key of Object.keys(v))
    if (!ENQUEUE_KEYS.includes(key))
      issues.push(
        unknownKey(
          `enqueue.${key}`,
          ENQUEUE_KEYS.map((k) => `enqueue.${k}`),
        ),
      );
  if (issues.length > before) return {};
  // The jobs layer's own rules, against a stand-in for the kind (its defaults do not matter here).
  try {
    resolveEnqueueOptions({ kind: kind || 'schedule', queue: 'default', priority: 0, maxAttempts: 1, delivery: 'at-least-once' } as JobDefinition, v, '{}');
  } catch (err) {
    if (!(err instanceof OptionsInvalidError)) throw err;
    for (const i of err.issues) issues.push({ path: `enqueue.${i.path}`, message: i.message });
    return {};
  }
  return Object.freeze({ ...(v as ScheduleEnqueueOptions) });
}
