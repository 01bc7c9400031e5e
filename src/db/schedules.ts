import { run, runCount, type Executor } from './executor.js';
import type { JobState } from './job-row.js';
import type { StatementSet } from './statements.js';

/** What became of a tick. */
export type TickOutcome = 'enqueued' | 'queued' | 'skipped-overlap' | 'skipped-catchup' | 'manual' | 'failed';

/** A schedule to register: its name, timing spec and job kind. */
export interface ScheduleRegistration {
  name: string;
  spec: string;
  kind: string;
}

/** A schedule's shared state as a ticker reads it. */
export interface ScheduleStateRow {
  name: string;
  spec: string;
  last_tick_at: Date;
  paused: boolean;
  last_job_id: string | null;
  /** State of the newest job this schedule enqueued (null when there is none, or it was pruned). */
  last_job_state: JobState | null;
  /** Whether ticks wait for the previous job (overlap 'queue'). */
  has_queued: boolean;
  /** The database clock when the row was read. */
  now: Date;
}

/** One decided tick. */
export interface TickRow {
  schedule: string;
  tick_at: Date;
  outcome: TickOutcome;
  job_id: string | null;
  missed: number;
  error: string | null;
  created_at: Date;
  /** State of the tick's job (null without a job, or when it was pruned). */
  job_state: JobState | null;
}

/** A schedule as listed: its row, and its newest tick. */
export interface ScheduleListRow {
  name: string;
  spec: string;
  job_kind: string;
  created_at: Date;
  last_tick_at: Date;
  paused: boolean;
  queued: number;
  tick_at: Date | null;
  outcome: TickOutcome | null;
  job_id: string | null;
  missed: number | null;
  error: string | null;
  tick_created_at: Date | null;
  job_state: JobState | null;
  now: Date;
}

// The ticker's view of the last tick's job joins `jobs` only: a job still pending or running is
// there; a finished one has moved to the history (migration 0008) and counts as not in progress,
// as a pruned one always did. The operator's listings join jobs_all to show how it ended.
const STATE_COLUMNS = (s: string) => `s.name, s.spec, s.last_tick_at, s.paused, s.last_job_id::text AS last_job_id,
  j.state::text AS last_job_state,
  EXISTS (SELECT 1 FROM ${s}.schedule_ticks q WHERE q.schedule = s.name AND q.outcome = 'queued') AS has_queued,
  clock_timestamp() AS now`;

/** Schedule statements of one schema. */
export function scheduleStatements(set: StatementSet) {
  return {
    // A changed timing counts from the moment of the change: ticks of the old timing that were
    // not decided yet are not replayed under the new one. "The moment" is the database clock; $4
    // replaces it only for a test clock (nightshift/testing's tick), null everywhere else.
    register: set.plain<never, [names: string[], specs: string[], kinds: string[], at: Date | null]>(
      (s) => `
INSERT INTO ${s}.schedules AS c (name, spec, job_kind, last_tick_at)
SELECT u.name, u.spec, u.kind, coalesce($4::timestamptz, now()) FROM unnest($1::text[], $2::text[], $3::text[]) AS u(name, spec, kind)
ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, job_kind = EXCLUDED.job_kind, updated_at = now(),
  last_tick_at = CASE WHEN c.spec <> EXCLUDED.spec THEN greatest(c.last_tick_at, EXCLUDED.last_tick_at) ELSE c.last_tick_at END
WHERE (c.spec, c.job_kind) IS DISTINCT FROM (EXCLUDED.spec, EXCLUDED.job_kind)`,
    ),
    // Operator actions create a missing row but never change the timing in force: a CLI with an
    // older config must not take a schedule over from the fleet.
    ensure: set.plain<never, [name: string, spec: string, kind: string]>((s) => `INSERT INTO ${s}.schedules (name, spec, job_kind) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`),
    // The ticker's poll: one cheap read of every schedule it runs, with the database clock.
    overview: set.named<ScheduleStateRow, [names: readonly string[]]>(
      'schedule_overview',
      (s) => `SELECT ${STATE_COLUMNS(s)} FROM ${s}.schedules s LEFT JOIN ${s}.jobs j ON j.id = s.last_job_id
        WHERE s.name = ANY($1::text[])`,
    ),
    // SKIP LOCKED: while one replica decides a schedule's ticks, the others pass it by instead of
    // queueing up behind it; when they next look, last_tick_at has moved on.
    lock: set.named<ScheduleStateRow, [name: string]>(
      'schedule_lock',
      (s) => `SELECT ${STATE_COLUMNS(s)} FROM ${s}.schedules s LEFT JOIN ${s}.jobs j ON j.id = s.last_job_id
        WHERE s.name = $1 FOR UPDATE OF s SKIP LOCKED`,
    ),
    tickInsert: set.named<{ tick_at: Date }, [schedule: string, at: Date, outcome: TickOutcome, missed: number, error: string | null]>(
      'schedule_tick_insert',
      (s) => `INSERT INTO ${s}.schedule_ticks (schedule, tick_at, outcome, missed, error) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (schedule, tick_at) DO NOTHING RETURNING tick_at`,
    ),
    tickUpdate: set.named<never, [schedule: string, at: Date, outcome: TickOutcome, jobId: string | null, error: string | null]>(
      'schedule_tick_update',
      (s) => `UPDATE ${s}.schedule_ticks SET outcome = $3, job_id = $4, error = $5 WHERE schedule = $1 AND tick_at = $2`,
    ),
    oldestQueued: set.named<{ tick_at: Date }, [name: string]>(
      'schedule_tick_oldest_queued',
      (s) => `SELECT tick_at FROM ${s}.schedule_ticks WHERE schedule = $1 AND outcome = 'queued' ORDER BY tick_at LIMIT 1`,
    ),
    advance: set.named<never, [name: string, lastTickAt: Date | null, lastJobId: string | null]>(
      'schedule_advance',
      (s) => `UPDATE ${s}.schedules SET last_tick_at = greatest(last_tick_at, $2), last_job_id = coalesce($3, last_job_id)
        WHERE name = $1`,
    ),
    // A manual tick is stamped with the database clock to the millisecond (what a JS Date holds),
    // never on a whole second, so it cannot take the key of a scheduled tick (always whole seconds).
    manualInsert: set.plain<{ tick_at: Date }, [name: string]>(
      (s) => `
WITH c AS (SELECT date_trunc('milliseconds', clock_timestamp()) AS t)
INSERT INTO ${s}.schedule_ticks (schedule, tick_at, outcome)
SELECT $1, CASE WHEN date_trunc('second', c.t) = c.t THEN c.t + interval '1 millisecond' ELSE c.t END, 'manual' FROM c
ON CONFLICT (schedule, tick_at) DO NOTHING RETURNING tick_at`,
    ),
    now: set.plain<{ now: Date }, []>(() => `SELECT clock_timestamp() AS now`),
    audit: set.plain<never, [actor: string, action: string, name: string, reason: string | null, details: string]>(
      (s) => `INSERT INTO ${s}.audit_log (actor, action, target, reason, details) VALUES ($1, $2, 'schedule:' || $3, $4, $5)`,
    ),
    setPaused: set.plain<{ n: number }, [name: string, paused: boolean, actor: string, reason: string | null]>(
      (s) => `
WITH u AS (
  UPDATE ${s}.schedules SET paused = $2, updated_at = now(),
    last_tick_at = CASE WHEN $2 THEN last_tick_at ELSE greatest(last_tick_at, now()) END
  WHERE name = $1 AND paused <> $2
  RETURNING name
), a AS (
  INSERT INTO ${s}.audit_log (actor, action, target, reason)
  SELECT $3, CASE WHEN $2 THEN 'schedule-pause' ELSE 'schedule-resume' END, 'schedule:' || u.name, $4 FROM u
)
SELECT count(*)::int AS n FROM u`,
    ),
    list: set.plain<ScheduleListRow, [names: readonly string[] | null]>(
      (s) => `
SELECT s.name, s.spec, s.job_kind, s.created_at, s.last_tick_at, s.paused,
  (SELECT count(*)::int FROM ${s}.schedule_ticks q WHERE q.schedule = s.name AND q.outcome = 'queued') AS queued,
  t.tick_at, t.outcome, t.job_id::text AS job_id, t.missed, t.error, t.created_at AS tick_created_at, j.state::text AS job_state,
  clock_timestamp() AS now
FROM ${s}.schedules s
LEFT JOIN LATERAL (SELECT * FROM ${s}.schedule_ticks t WHERE t.schedule = s.name ORDER BY t.tick_at DESC LIMIT 1) t ON true
LEFT JOIN ${s}.jobs_all j ON j.id = t.job_id
WHERE $1::text[] IS NULL OR s.name = ANY($1::text[])
ORDER BY s.name`,
    ),
    ticks: set.plain<TickRow, [name: string, before: Date | null, limit: number]>(
      (s) => `
SELECT t.schedule, t.tick_at, t.outcome, t.job_id::text AS job_id, t.missed, t.error, t.created_at, j.state::text AS job_state
FROM ${s}.schedule_ticks t LEFT JOIN ${s}.jobs_all j ON j.id = t.job_id
WHERE t.schedule = $1 AND ($2::timestamptz IS NULL OR t.tick_at < $2)
ORDER BY t.tick_at DESC LIMIT $3`,
    ),
    // Old ticks go, except each schedule's newest (shown by list) and ticks still queued.
    prune: set.plain<never, [olderThanMs: number, limit: number]>(
      (s) => `
DELETE FROM ${s}.schedule_ticks d USING (
  SELECT t.schedule, t.tick_at FROM ${s}.schedule_ticks t
  WHERE t.tick_at < now() - $1 * interval '1 millisecond' AND t.outcome <> 'queued'
    AND t.tick_at < (SELECT max(l.tick_at) FROM ${s}.schedule_ticks l WHERE l.schedule = t.schedule)
  LIMIT $2
) old
WHERE d.schedule = old.schedule AND d.tick_at = old.tick_at`,
    ),
  };
}
export type ScheduleStatements = ReturnType<typeof scheduleStatements>;

/** A tick to record. */
export interface TickInsert {
  schedule: string;
  at: Date;
  outcome: TickOutcome;
  missed?: number;
  error?: string | null;
}

/**
 * The schedule statements bound to the schema's pool. Those a ticker or an operator runs inside
 * its transaction (the lock, the tick rows, the advance, the audit) take it as `tx`.
 */
export class ScheduleQueries {
  private readonly st: ScheduleStatements;

  constructor(
    private readonly pool: Executor,
    set: StatementSet,
  ) {
    this.st = scheduleStatements(set);
  }

  /**
   * Creates the rows of schedules first seen, and records a changed timing or job; both count from
   * now on the database clock, or from `at` when a test clock gives one.
   */
  async register(p: { rows: readonly ScheduleRegistration[]; at?: Date | null }): Promise<void> {
    if (p.rows.length === 0) return;
    await run(this.pool, this.st.register, [p.rows.map((r) => r.name), p.rows.map((r) => r.spec), p.rows.map((r) => r.kind), p.at ?? null]);
  }

  /** Creates a schedule's row when it has none; leaves an existing row as it is. */
  async ensure(r: ScheduleRegistration): Promise<void> {
    await run(this.pool, this.st.ensure, [r.name, r.spec, r.kind]);
  }

  /** The shared state of the named schedules, with the database clock. */
  overview(names: readonly string[]): Promise<ScheduleStateRow[]> {
    return run(this.pool, this.st.overview, [names]);
  }

  /** Locks a schedule's row for the rest of `tx`; undefined when another transaction holds it (or it does not exist). */
  async lock(p: { tx: Executor; name: string }): Promise<ScheduleStateRow | undefined> {
    const [row] = await run(p.tx, this.st.lock, [p.name]);
    return row;
  }

  /** Records a tick in `tx`; false when the tick was already recorded (by this or another replica). */
  async tickInsert(p: { tx: Executor; tick: TickInsert }): Promise<boolean> {
    const t = p.tick;
    const rows = await run(p.tx, this.st.tickInsert, [t.schedule, t.at, t.outcome, t.missed ?? 0, t.error ?? null]);
    return rows.length === 1;
  }

  /** Sets a recorded tick's outcome, job and error, in `tx`. */
  async tickUpdate(p: { tx: Executor; tick: { schedule: string; at: Date; outcome: TickOutcome; jobId: string | null; error: string | null } }): Promise<void> {
    const t = p.tick;
    await run(p.tx, this.st.tickUpdate, [t.schedule, t.at, t.outcome, t.jobId, t.error]);
  }

  /** The oldest tick waiting for the previous job, if any. */
  async tickOldestQueued(p: { tx: Executor; name: string }): Promise<Date | undefined> {
    const [row] = await run(p.tx, this.st.oldestQueued, [p.name]);
    return row?.tick_at;
  }

  /** Moves a schedule's last decided tick forward (never back) and records its newest job, in `tx`. */
  async advance(p: { tx: Executor; name: string; lastTickAt: Date | null; lastJobId: string | null }): Promise<void> {
    await run(p.tx, this.st.advance, [p.name, p.lastTickAt, p.lastJobId]);
  }

  /** Records a manual tick now (database clock) in `tx`; undefined on the rare clash with another manual tick in the same millisecond. */
  async tickManualInsert(p: { tx: Executor; name: string }): Promise<Date | undefined> {
    const [row] = await run(p.tx, this.st.manualInsert, [p.name]);
    return row?.tick_at;
  }

  /** The database clock. */
  async now(): Promise<Date> {
    const [row] = await run(this.pool, this.st.now, []);
    return row!.now;
  }

  /** Writes an audit row about a schedule, in `tx`. */
  async audit(p: { tx: Executor; entry: { actor: string; action: string; name: string; reason: string | null; details: unknown } }): Promise<void> {
    const e = p.entry;
    await run(p.tx, this.st.audit, [e.actor, e.action, e.name, e.reason, JSON.stringify(e.details)]);
  }

  /** Pauses or resumes a schedule (with an audit row); returns whether it changed. */
  async setPaused(p: { name: string; paused: boolean; who: { actor: string; reason: string | null } }): Promise<boolean> {
    const [row] = await run(this.pool, this.st.setPaused, [p.name, p.paused, p.who.actor, p.who.reason]);
    return (row?.n ?? 0) > 0;
  }

  /** Schedules with their newest tick; all of them, or the named ones. */
  list(names: readonly string[] | null): Promise<ScheduleListRow[]> {
    return run(this.pool, this.st.list, [names]);
  }

  /** A schedule's ticks, newest first, before `before` when given. */
  ticks(p: { name: string; before: Date | null; limit: number }): Promise<TickRow[]> {
    return run(this.pool, this.st.ticks, [p.name, p.before, p.limit]);
  }

  /** Deletes ticks older than `olderThanMs` (keeping each schedule's newest and queued ones), at most `limit`. */
  prune(p: { olderThanMs: number; limit: number }): Promise<number> {
    return runCount(this.pool, this.st.prune, [p.olderThanMs, p.limit]);
  }
}
