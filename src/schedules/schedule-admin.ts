import type { Database } from '../db/database.js';
import type { JobState } from '../db/job-row.js';
import type { ScheduleListRow, ScheduleQueries, TickOutcome } from '../db/schedules.js';
import { OptionsInvalidError, type Issue } from '../errors.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { EventBus } from '../telemetry/events.js';
import type { CatchUpPolicy, Overlap, ScheduleDefinition } from './define-schedule.js';
import { formatDuration } from './duration.js';
import { enqueueTickJob, ScheduleSet, scheduleTick } from './schedule-set.js';
import { nextTick } from './ticks.js';

/** Who does an operator action and why; written to the audit log. */
export interface ScheduleActorOptions {
  /** Who acts. Default: the admin's actor. */
  actor?: string;
  /** Why; kept with the audit entry. */
  reason?: string;
}

/** A decided tick, as listed. */
export interface ScheduleTickRecord {
  schedule: string;
  /** The tick's instant (for a manual run: when it was triggered). */
  at: Date;
  outcome: TickOutcome;
  jobId: string | null;
  /** The state of the tick's job now; null without a job or once the job was pruned. */
  jobState: JobState | null;
  /** For a skipped-catchup tick: how many missed ticks it stands for. */
  missed: number;
  error: string | null;
  createdAt: Date;
}

/** A schedule as `listSchedules` shows it. */
export interface ScheduleInfo {
  name: string;
  /** Defined in this client's code (false: only its row remains, from a client that defined it). */
  defined: boolean;
  /** The timing in force in the database (`cron 0 0 * * * UTC`, `every 2m`); null before a ticker registered it. */
  spec: string | null;
  /** This client's definition differs from the timing in force (another version registered last). */
  superseded: boolean;
  cron: string | null;
  every: string | null;
  tz: string | null;
  kind: string | null;
  catchUp: CatchUpPolicy | null;
  overlap: Overlap | null;
  paused: boolean;
  /** The next run times from now (database clock); empty when paused or not defined here. */
  nextRuns: Date[];
  /** Every scheduled tick up to this instant has been decided. */
  decidedUntil: Date | null;
  /** The newest tick (scheduled or manual) and what became of it. */
  lastTick: ScheduleTickRecord | null;
  /** Ticks waiting for the previous job (overlap 'queue'). */
  queued: number;
}

/** What a manual trigger did. */
export interface TriggerResult {
  schedule: string;
  /** The manual tick's instant (database clock). */
  at: Date;
  jobId: string;
}

/**
 * The operator's view of schedules: list them with their next runs and last outcome, show their
 * ticks, trigger one now, pause and resume. Every action is written to the audit log.
 */
export class ScheduleAdmin {
  private readonly set: ScheduleSet;
  private readonly st: ScheduleQueries;
  private readonly events: EventBus;

  constructor(
    private readonly options: {
      database: Database;
      enqueuer: Enqueuer;
      registry: JobRegistry;
      schedules: readonly ScheduleDefinition[];
      events?: EventBus;
      /** Actor written to the audit log when an action names none. */
      actor: string;
    },
  ) {
    this.set = new ScheduleSet(options.schedules, options.registry);
    this.st = options.database.schedules;
    this.events = options.events ?? new EventBus();
  }

  /**
   * Runs a schedule's job now, as a `manual` tick stamped with the database clock, with `payload`
   * or else the one the schedule builds for a tick at this instant. Ignores the overlap policy and
   * pause (an operator asked for it) and leaves the schedule's own ticks as they are. Throws
   * NS_SCHEDULE_NOT_FOUND, or NS_PAYLOAD_INVALID when the payload does not fit; then nothing is written.
   */
  async triggerSchedule(name: string, payload?: unknown, options: ScheduleActorOptions = {}): Promise<TriggerResult> {
    const entry = this.set.require(name);
    const who = checkActor(options, this.options.actor);
    await this.st.ensure({ name, spec: entry.def.spec, kind: entry.def.kind });
    const result = await this.options.database.transaction(async (tx) => {
      let at: Date | undefined;
      // Two manual ticks in the same millisecond share a key; the clock moves on for the retry.
      for (let i = 0; i < 5 && !at; i++) at = await this.st.tickManualInsert({ tx, name });
      if (!at) throw new OptionsInvalidError('trigger', [{ path: 'name', message: 'could not stamp a manual tick; try again' }]);
      const { id } = await enqueueTickJob(this.options.enqueuer, entry, tx, scheduleTick(entry.def, at, true), payload === undefined ? undefined : { value: payload });
      await this.st.tickUpdate({ tx, tick: { schedule: name, at, outcome: 'manual', jobId: id, error: null } });
      await this.st.advance({ tx, name, lastTickAt: null, lastJobId: id });
      await this.st.audit({ tx, entry: { actor: who.actor, action: 'schedule-trigger', name, reason: who.reason, details: { jobId: id, at } } });
      return { schedule: name, at, jobId: id };
    });
    this.events.emit({ type: 'schedule.fired', schedule: name, tickAt: result.at, jobId: result.jobId, kind: entry.job.kind, manual: true, late: false });
    return result;
  }

  /** Every schedule defined here or known to the database, with its next `next` runs (default 5) and last tick. */
  async listSchedules(options: { next?: number } = {}): Promise<ScheduleInfo[]> {
    const n = options.next ?? 5;
    if (!Number.isInteger(n) || n < 0 || n > 100) {
      throw new OptionsInvalidError('listSchedules options', [{ path: 'next', message: 'must be an integer from 0 to 100' }]);
    }
    const rows = await this.st.list(null);
    const byName = new Map(rows.map((r) => [r.name, r]));
    const now = rows[0]?.now.getTime() ?? (await this.dbNow());
    const names = [...new Set([...this.set.names(), ...rows.map((r) => r.name)])].sort();
    return names.map((name) => this.info(name, byName.get(name), now, n));
  }

  /** A schedule's decided ticks, newest first (default 50, at most 1000), before `before` when given. */
  async scheduleTicks(name: string, options: { limit?: number; before?: Date } = {}): Promise<ScheduleTickRecord[]> {
    const issues: Issue[] = [];
    const limit = options.limit ?? 50;
    if (typeof name !== 'string' || name.length === 0) issues.push({ path: 'name', message: 'must be a schedule name' });
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) issues.push({ path: 'limit', message: 'must be an integer from 1 to 1000' });
    if (options.before !== undefined && !(options.before instanceof Date && !Number.isNaN(options.before.getTime()))) {
      issues.push({ path: 'before', message: 'must be a valid Date' });
    }
    if (issues.length) throw new OptionsInvalidError('scheduleTicks options', issues);
    const rows = await this.st.ticks({ name, before: options.before ?? null, limit });
    return rows.map((r) => ({
      schedule: r.schedule,
      at: r.tick_at,
      outcome: r.outcome,
      jobId: r.job_id,
      jobState: r.job_state,
      missed: r.missed,
      error: r.error,
      createdAt: r.created_at,
    }));
  }

  /** Stops a schedule's ticks fleet-wide until resumed (manual triggers still work). Returns whether it changed. */
  pauseSchedule(name: string, options: ScheduleActorOptions = {}): Promise<boolean> {
    return this.setPaused(name, true, options);
  }

  /** Resumes a paused schedule. Ticks that fell due while it was paused are not run: it counts from now. */
  resumeSchedule(name: string, options: ScheduleActorOptions = {}): Promise<boolean> {
    return this.setPaused(name, false, options);
  }

  private async setPaused(name: string, paused: boolean, options: ScheduleActorOptions): Promise<boolean> {
    const entry = this.set.require(name);
    const who = checkActor(options, this.options.actor);
    await this.st.ensure({ name, spec: entry.def.spec, kind: entry.def.kind });
    return this.st.setPaused({ name, paused, who });
  }

  private info(name: string, row: ScheduleListRow | undefined, now: number, n: number): ScheduleInfo {
    const def = this.set.get(name)?.def;
    const paused = row?.paused ?? false;
    const nextRuns: Date[] = [];
    if (def && !paused) {
      let t: number | null = now;
      for (let i = 0; i < n; i++) {
        t = nextTick(def.timing, t);
        if (t === null) break;
        nextRuns.push(new Date(t));
      }
    }
    return {
      name,
      defined: def !== undefined,
      spec: row?.spec ?? null,
      superseded: def !== undefined && row !== undefined && row.spec !== def.spec,
      cron: def?.cron ?? row?.spec.match(/^cron (.*) \S+$/)?.[1] ?? null,
      every: def?.everyMs !== undefined ? formatDuration(def.everyMs) : (row?.spec.match(/^every (\S+)$/)?.[1] ?? null),
      tz: def?.tz ?? row?.spec.match(/^cron .* (\S+)$/)?.[1] ?? null,
      kind: def?.kind ?? row?.job_kind ?? null,
      catchUp: def?.catchUp ?? null,
      overlap: def?.overlap ?? null,
      paused,
      nextRuns,
      decidedUntil: row?.last_tick_at ?? null,
      lastTick:
        row && row.tick_at && row.outcome
          ? {
              schedule: name,
              at: row.tick_at,
              outcome: row.outcome,
              jobId: row.job_id,
              jobState: row.job_state,
              missed: row.missed ?? 0,
              error: row.error,
              createdAt: row.tick_created_at ?? row.tick_at,
            }
          : null,
      queued: row?.queued ?? 0,
    };
  }

  private async dbNow(): Promise<number> {
    return (await this.st.now()).getTime();
  }
}

function checkActor(o: ScheduleActorOptions, fallback: string): { actor: string; reason: string | null } {
  const issues: Issue[] = [];
  if (o.actor !== undefined && (typeof o.actor !== 'string' || o.actor.length < 1 || o.actor.length > 200)) {
    issues.push({ path: 'actor', message: 'must be a string of 1 to 200 characters' });
  }
  if (o.reason !== undefined && (typeof o.reason !== 'string' || o.reason.length > 2000)) {
    issues.push({ path: 'reason', message: 'must be a string of at most 2000 characters' });
  }
  if (issues.length) throw new OptionsInvalidError('actor options', issues);
  return { actor: o.actor ?? fallback, reason: o.reason ?? null };
}
