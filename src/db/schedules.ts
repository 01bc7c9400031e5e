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
    register: set.plain(
      (s) => `
INSERT INTO ${s}.schedules AS c (name, spec, job_kind, last_tick_at)
SELECT u.name, u.spec, u.kind, coalesce($4::timestamptz, now()) FROM unnest($1::text[], $2::text[], $3::text[]) AS u(name, spec, kind)
ON CONFLICT (name) DO UPDATE SET spec = EXCLUDED.spec, job_kind = EXCLUDED.job_kind, updated_at = now(),
  last_tick_at = CASE WHEN c.spec <> EXCLUDED.spec THEN greatest(c.last_tick_at, EXCLUDED.last_tick_at) ELSE c.last_tick_at END
WHERE (c.spec, c.job_kind) IS DISTINCT FROM (EXCLUDED.spec, EXCLUDED.job_kind)`,
    ),
    // Operator actions create a missing row but never change the timing in force: a CLI with an
    // older config must not take a schedule over from the fleet.
    ensure: set.plain(
      (s) => `INSERT INTO ${s}.schedules (name, spec, job_kind) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING`,
    ),
    // The ticker's poll: one cheap read of every schedule it runs, with the database clock.
    overview: set.named(
      'schedule_overview',
      (s) => `SELECT ${STATE_COLUMNS(s)} FROM ${s}.schedules s LEFT JOIN ${s}.jobs j ON j.id = s.last_job_id
        WHERE s.name = ANY($1::text[])`,
    ),
    // SKIP LOCKED: while one replica decides a schedule's ticks, the others pass it by instead of
    // queueing up behind it; when they next look, last_tick_at has moved on.
    lock: set.named(
      'schedule_lock',
      (s) => `SELECT ${STATE_COLUMNS(s)} FROM ${s}.schedules s LEFT JOIN ${s}.jobs j ON j.id = s.last_job_id
        WHERE s.name = $1 FOR UPDATE OF s SKIP LOCKED`,
    ),
    tickInsert: set.named(
      'schedule_tick_insert',
      (s) => `INSERT INTO ${s}.schedule_ticks (schedule, tick_at, outcome, missed, error) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (schedule, tick_at) DO NOTHING RETURNING tick_at`,
    ),
    tickUpdate: set.named(
      'schedule_tick_update',
      (s) => `UPDATE ${s}.schedule_ticks SET outcome = $3, job_id = $4, error = $5 WHERE schedule = $1 AND tick_at = $2`,
    ),
    oldestQueued: set.named(
      'schedule_tick_oldest_queued',
      (s) => `SELECT tick_at FROM ${s}.schedule_ticks WHERE schedule = $1 AND outcome = 'queued' ORDER BY tick_at LIMIT 1`,
    ),
    advance: set.named(
      'schedule_advance',
      (s) => `UPDATE ${s}.schedules SET last_tick_at = greatest(last_tick_at, $2), last_job_id = coalesce($3, last_job_id)
        WHERE name = $1`,
    ),
    // A manual tick is stamped with the database clock to the millisecond (what a JS Date holds),
    // never on a whole second, so it cannot take the key of a scheduled tick (always whole seconds).
    manualInsert: set.plain(
      (s) => `
WITH c AS (SELECT date_trunc('milliseconds', clock_timestamp()) AS t)
INSERT INTO ${s}.schedule_ticks (schedule, tick_at, outcome)
SELECT $1, CASE WHEN date_trunc('second', c.t) = c.t THEN c.t + interval '1 millisecond' ELSE c.t END, 'manual' FROM c
ON CONFLICT (schedule, tick_at) DO NOTHING RETURNING tick_at`,
    ),
    now: set.plain(() => `SELECT clock_timestamp() AS now`),
    audit: set.plain(
      (s) => `INSERT INTO ${s}.audit_log (actor, action, target, reason, details) VALUES ($1, $2, 'schedule:' || $3, $4, $5)`,
    ),
    setPaused: set.plain(
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
    list: set.plain(
      (s) => `
SELECT s.name, s.spec, s.job_kind, s.created_at, s.last_tick_at, s.paused,
  (SELECT count(*)::int FROM ${s}.schedule_ticks q WHERE q.schedule = s.name AND q.outcome = 'queued') AS queued,
  t.tick_at, t.outcome, t.job_id::text AS job_id, t.missed, t.error, t.created_at AS tick_created_at, j.state::text AS job_state,
  clock_timestamp() AS now
FROM ${s}.schedules s
LEFT JOIN LATERAL (SELECT * FROM ${s}.schedule_ticks t WHERE t.schedule = s.name ORDER BY t.tick_at DESC LIMIT 1) t ON true
LEFT JOIN ${s}.jobs j ON j.id = t.job_id
WHERE $1::text[] IS NULL OR s.name = ANY($1::text[])
ORDER BY s.name`,
    ),
    ticks: set.plain(
      (s) => `
SELECT t.schedule, t.tick_at, t.outcome, t.job_id::text AS job_id, t.missed, t.error, t.created_at, j.state::text AS job_state
FROM ${s}.schedule_ticks t LEFT JOIN ${s}.jobs j ON j.id = t.job_id
WHERE t.schedule = $1 AND ($2::timestamptz IS NULL OR t.tick_at < $2)
ORDER BY t.tick_at DESC LIMIT $3`,
    ),
    // Old ticks go, except each schedule's newest (shown by list) and ticks still queued.
    prune: set.plain(
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

/**
 * Creates the rows of schedules first seen, and records a changed timing or job; both count from
 * now on the database clock, or from `at` when a test clock gives one.
 */
export async function scheduleRegister(db: Executor, st: ScheduleStatements, rows: readonly ScheduleRegistration[], at: Date | null = null): Promise<void> {
  if (rows.length === 0) return;
  await run(db, st.register, [rows.map((r) => r.name), rows.map((r) => r.spec), rows.map((r) => r.kind), at]);
}

/** Creates a schedule's row when it has none; leaves an existing row as it is. */
export async function scheduleEnsure(db: Executor, st: ScheduleStatements, r: ScheduleRegistration): Promise<void> {
  await run(db, st.ensure, [r.name, r.spec, r.kind]);
}

/** The shared state of the named schedules, with the database clock. */
export function scheduleOverview(db: Executor, st: ScheduleStatements, names: readonly string[]): Promise<ScheduleStateRow[]> {
  return run<ScheduleStateRow>(db, st.overview, [names]);
}

/** Locks a schedule's row for the rest of the transaction; undefined when another transaction holds it (or it does not exist). */
export async function scheduleLock(tx: Executor, st: ScheduleStatements, name: string): Promise<ScheduleStateRow | undefined> {
  const [row] = await run<ScheduleStateRow>(tx, st.lock, [name]);
  return row;
}

/** Records a tick; false when the tick was already recorded (by this or another replica). */
export async function tickInsert(
  tx: Executor,
  st: ScheduleStatements,
  tick: { schedule: string; at: Date; outcome: TickOutcome; missed?: number; error?: string | null },
): Promise<boolean> {
  const rows = await run(tx, st.tickInsert, [tick.schedule, tick.at, tick.outcome, tick.missed ?? 0, tick.error ?? null]);
  return rows.length === 1;
}

/** Sets a recorded tick's outcome, job and error. */
export async function tickUpdate(
  tx: Executor,
  st: ScheduleStatements,
  tick: { schedule: string; at: Date; outcome: TickOutcome; jobId: string | null; error: string | null },
): Promise<void> {
  await run(tx, st.tickUpdate, [tick.schedule, tick.at, tick.outcome, tick.jobId, tick.error]);
}

/** The oldest tick waiting for the previous job, if any. */
export async function tickOldestQueued(tx: Executor, st: ScheduleStatements, name: string): Promise<Date | undefined> {
  const [row] = await run<{ tick_at: Date }>(tx, st.oldestQueued, [name]);
  return row?.tick_at;
}

/** Moves a schedule's last decided tick forward (never back) and records its newest job. */
export async function scheduleAdvance(tx: Executor, st: ScheduleStatements, name: string, lastTickAt: Date | null, lastJobId: string | null): Promise<void> {
  await run(tx, st.advance, [name, lastTickAt, lastJobId]);
}

/** Records a manual tick now (database clock); undefined on the rare clash with another manual tick in the same millisecond. */
export async function tickManualInsert(tx: Executor, st: ScheduleStatements, name: string): Promise<Date | undefined> {
  const [row] = await run<{ tick_at: Date }>(tx, st.manualInsert, [name]);
  return row?.tick_at;
}

/** The database clock. */
export async function databaseNow(db: Executor, st: ScheduleStatements): Promise<Date> {
  const [row] = await run<{ now: Date }>(db, st.now);
  return row!.now;
}

/** Writes an audit row about a schedule. */
export async function scheduleAudit(
  tx: Executor,
  st: ScheduleStatements,
  entry: { actor: string; action: string; name: string; reason: string | null; details: unknown },
): Promise<void> {
  await run(tx, st.audit, [entry.actor, entry.action, entry.name, entry.reason, JSON.stringify(entry.details)]);
}

/** Pauses or resumes a schedule (with an audit row); returns whether it changed. */
export async function schedulePause(
  db: Executor,
  st: ScheduleStatements,
  name: string,
  paused: boolean,
  who: { actor: string; reason: string | null },
): Promise<boolean> {
  const [row] = await run<{ n: number }>(db, st.setPaused, [name, paused, who.actor, who.reason]);
  return (row?.n ?? 0) > 0;
}

/** Schedules with their newest tick; all of them, or the named ones. */
export function scheduleList(db: Executor, st: ScheduleStatements, names: readonly string[] | null): Promise<ScheduleListRow[]> {
  return run<ScheduleListRow>(db, st.list, [names]);
}

/** A schedule's ticks, newest first, before `before` when given. */
export function tickList(db: Executor, st: ScheduleStatements, name: string, before: Date | null, limit: number): Promise<TickRow[]> {
  return run<TickRow>(db, st.ticks, [name, before, limit]);
}

/** Deletes ticks older than `olderThanMs` (keeping each schedule's newest and queued ones), at most `limit`. */
export function tickPrune(db: Executor, st: ScheduleStatements, olderThanMs: number, limit: number): Promise<number> {
  return runCount(db, st.prune, [olderThanMs, limit]);
}
