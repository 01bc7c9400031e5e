import { run, runCount, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** A check result's status. */
export type CheckStatusValue = 'ok' | 'warning' | 'critical';
/** An alert's level: the bad statuses. */
export type AlertLevelValue = 'warning' | 'critical';

/** One result of a run, as stored in `check_runs.results`. */
export interface StoredResult {
  subject: string;
  status: CheckStatusValue;
  message: string;
  details: Record<string, unknown> | null;
}

/** A run to record. */
export interface CheckRunInsert {
  check: string;
  at: Date;
  status: CheckStatusValue;
  results: readonly StoredResult[];
  durationMs: number;
  manual: boolean;
  applied: boolean;
}

/** A check's row, locked for the rest of the transaction. */
export interface CheckLockRow {
  last_applied_at: Date | null;
  /** The database clock. */
  now: Date;
}

/** An alert as stored. */
export interface AlertRow {
  id: string;
  check_name: string;
  subject: string;
  level: AlertLevelValue;
  message: string;
  details: Record<string, unknown> | null;
  opened_at: Date;
  level_changed_at: Date;
  notifications: number;
  last_notified_at: Date | null;
  acked_at: Date | null;
  acked_by: string | null;
  ack_reason: string | null;
  resolved_at: Date | null;
  /** How long it has been open (until it resolved), by the database clock. */
  open_ms: number;
}

/** A subject's state with its open alert, if any. */
export interface SubjectStateRow {
  subject: string;
  status: CheckStatusValue;
  bad_streak: number;
  bad_since: Date | null;
  /** The open alert's columns, null without one. */
  alert_id: string | null;
  alert_level: AlertLevelValue | null;
  alert_notifications: number | null;
  alert_last_notified_at: Date | null;
  alert_acked_at: Date | null;
}

/** A stored run. */
export interface CheckRunRow {
  check_name: string;
  run_at: Date;
  status: CheckStatusValue;
  results: StoredResult[];
  duration_ms: number;
  manual: boolean;
  applied: boolean;
  created_at: Date;
}

/** Open alerts counted per check and level. */
export interface OpenAlertCount {
  check_name: string;
  level: AlertLevelValue;
  count: number;
}

const ALERT_COLUMNS = `id::text AS id, check_name, subject, level, message, details, opened_at, level_changed_at,
  notifications, last_notified_at, acked_at, acked_by, ack_reason, resolved_at,
  extract(epoch FROM coalesce(resolved_at, now()) - opened_at)::float8 * 1000 AS open_ms`;

/** How long runs are kept, and resolved alerts after they resolved. */
const RUN_RETENTION = `interval '7 days'`;
const ALERT_RETENTION = `interval '90 days'`;

/** Watchdog statements of one schema: every write of the alert state machine is one of these. */
export function watchdogStatements(set: StatementSet) {
  return {
    ensure: set.plain((s) => `INSERT INTO ${s}.checks (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`),
    // Runs of one check apply one after the other (a tick and a manual run), in the order of the
    // lock; the database clock comes with it.
    lock: set.plain((s) => `SELECT last_applied_at, clock_timestamp() AS now FROM ${s}.checks WHERE name = $1 FOR UPDATE`),
    // The once-per-tick step: only the transaction whose insert took the key goes on.
    runInsert: set.plain(
      (s) => `INSERT INTO ${s}.check_runs (check_name, run_at, status, results, duration_ms, manual, applied)
        VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7) ON CONFLICT (check_name, run_at) DO NOTHING RETURNING run_at`,
    ),
    advance: set.plain((s) => `UPDATE ${s}.checks SET last_applied_at = greatest(coalesce(last_applied_at, $2), $2) WHERE name = $1`),
    // A manual run's instant, to the millisecond and never on a whole second, so it cannot take
    // the key of a scheduled tick (always whole seconds) — as manual schedule ticks do.
    manualStamp: set.plain(
      () => `SELECT CASE WHEN date_trunc('second', t) = t THEN t + interval '1 millisecond' ELSE t END AS at
        FROM (SELECT date_trunc('milliseconds', clock_timestamp()) AS t) c`,
    ),
    subjects: set.plain(
      (s) => `SELECT cs.subject, cs.status, cs.bad_streak, cs.bad_since, a.id::text AS alert_id, a.level AS alert_level,
          a.notifications AS alert_notifications, a.last_notified_at AS alert_last_notified_at, a.acked_at AS alert_acked_at
        FROM ${s}.check_subjects cs
        LEFT JOIN ${s}.alerts a ON a.check_name = cs.check_name AND a.subject = cs.subject AND a.resolved_at IS NULL
        WHERE cs.check_name = $1 FOR UPDATE OF cs`,
    ),
    subjectUpsert: set.plain(
      (s) => `INSERT INTO ${s}.check_subjects AS c (check_name, subject, status, bad_streak, bad_since) VALUES ($1, $2, $3, $4, CASE WHEN $4 > 0 THEN now() END)
        ON CONFLICT (check_name, subject) DO UPDATE SET status = EXCLUDED.status, bad_streak = EXCLUDED.bad_streak, updated_at = now(),
          bad_since = CASE WHEN EXCLUDED.bad_streak = 0 THEN NULL ELSE coalesce(c.bad_since, now()) END`,
    ),
    subjectDelete: set.plain((s) => `DELETE FROM ${s}.check_subjects WHERE check_name = $1 AND subject = $2`),
    // The unique index alerts_open makes a second open alert for the subject fail the transaction.
    alertOpen: set.plain(
      (s) => `INSERT INTO ${s}.alerts (check_name, subject, level, message, details, notifications, last_notified_at)
        VALUES ($1, $2, $3, $4, $5::jsonb, 1, now()) RETURNING ${ALERT_COLUMNS}`,
    ),
    alertChange: set.plain(
      (s) => `UPDATE ${s}.alerts SET level = $2, message = $3, details = $4::jsonb, level_changed_at = now(),
          notifications = notifications + 1, last_notified_at = now()
        WHERE id = $1 AND resolved_at IS NULL RETURNING ${ALERT_COLUMNS}`,
    ),
    alertRemind: set.plain(
      (s) => `UPDATE ${s}.alerts SET message = $2, details = $3::jsonb, notifications = notifications + 1, last_notified_at = now()
        WHERE id = $1 AND resolved_at IS NULL RETURNING ${ALERT_COLUMNS}`,
    ),
    alertUpdate: set.plain((s) => `UPDATE ${s}.alerts SET message = $2, details = $3::jsonb WHERE id = $1 AND resolved_at IS NULL`),
    alertResolve: set.plain(
      (s) => `UPDATE ${s}.alerts SET resolved_at = now(), notifications = notifications + 1, last_notified_at = now()
        WHERE id = $1 AND resolved_at IS NULL RETURNING ${ALERT_COLUMNS}`,
    ),
    prune: set.plain(
      (s) => `WITH r AS (DELETE FROM ${s}.check_runs WHERE check_name = $1 AND run_at < now() - ${RUN_RETENTION})
        DELETE FROM ${s}.alerts WHERE check_name = $1 AND resolved_at < now() - ${ALERT_RETENTION}`,
    ),
    lastRun: set.plain(
      (s) => `SELECT check_name, run_at, status, results, duration_ms, manual, applied, created_at FROM ${s}.check_runs
        WHERE check_name = $1 AND applied ORDER BY run_at DESC LIMIT 1`,
    ),
    // DISTINCT ON over the primary key (check_name, run_at): one index probe per check.
    lastRuns: set.plain(
      (s) => `SELECT DISTINCT ON (check_name) check_name, run_at, status, results, duration_ms, manual, applied, created_at
        FROM ${s}.check_runs WHERE check_name = ANY($1::text[]) ORDER BY check_name, run_at DESC`,
    ),
    alertList: set.plain(
      (s) => `SELECT ${ALERT_COLUMNS} FROM ${s}.alerts
        WHERE ($1::boolean IS NOT TRUE OR resolved_at IS NULL) AND ($2::text IS NULL OR check_name = $2)
          AND ($3::bigint IS NULL OR id < $3)
        ORDER BY id DESC LIMIT $4`,
    ),
    alertGet: set.plain((s) => `SELECT ${ALERT_COLUMNS} FROM ${s}.alerts WHERE id = $1`),
    // The acknowledgement and its audit row in one statement.
    alertAck: set.plain(
      (s) => `WITH u AS (
          UPDATE ${s}.alerts SET acked_at = now(), acked_by = $2, ack_reason = $3
          WHERE id = $1 AND resolved_at IS NULL AND acked_at IS NULL RETURNING *
        ), a AS (
          INSERT INTO ${s}.audit_log (actor, action, target, reason, details)
          SELECT $2, 'alert-ack', 'alert:' || u.id, $3, jsonb_build_object('check', u.check_name, 'subject', u.subject, 'level', u.level) FROM u
        )
        SELECT ${ALERT_COLUMNS} FROM u`,
    ),
    // Served by the partial unique index of open alerts.
    openCounts: set.plain(
      (s) => `SELECT check_name, level, count(*)::int AS count FROM ${s}.alerts WHERE resolved_at IS NULL GROUP BY 1, 2`,
    ),
    now: set.plain(() => `SELECT clock_timestamp() AS now`),
  };
}
export type WatchdogStatements = ReturnType<typeof watchdogStatements>;

/** Creates a check's row unless it exists. */
export async function checkEnsure(db: Executor, st: WatchdogStatements, name: string): Promise<void> {
  await run(db, st.ensure, [name]);
}

/** Locks a check's row for the rest of the transaction; the row must exist ({@link checkEnsure}). */
export async function checkLock(tx: Executor, st: WatchdogStatements, name: string): Promise<CheckLockRow> {
  const [row] = await run<CheckLockRow>(tx, st.lock, [name]);
  return row!;
}

/** Records a run; false when a run with this key was recorded before (the same tick, run again). */
export async function checkRunInsert(tx: Executor, st: WatchdogStatements, r: CheckRunInsert): Promise<boolean> {
  const rows = await run(tx, st.runInsert, [r.check, r.at, r.status, JSON.stringify(r.results), Math.round(r.durationMs), r.manual, r.applied]);
  return rows.length === 1;
}

/** Moves a check's newest applied run forward (never back). */
export async function checkAdvance(tx: Executor, st: WatchdogStatements, name: string, at: Date): Promise<void> {
  await run(tx, st.advance, [name, at]);
}

/** The instant of a manual run (database clock, to the ms, never a whole second). */
export async function checkManualStamp(db: Executor, st: WatchdogStatements): Promise<Date> {
  const [row] = await run<{ at: Date }>(db, st.manualStamp);
  return row!.at;
}

/** The state of every subject of a check that has one, with its open alert; locks them. */
export function checkSubjects(tx: Executor, st: WatchdogStatements, name: string): Promise<SubjectStateRow[]> {
  return run<SubjectStateRow>(tx, st.subjects, [name]);
}

/** Writes a subject's status and bad streak. */
export async function checkSubjectUpsert(tx: Executor, st: WatchdogStatements, name: string, subject: string, status: CheckStatusValue, streak: number): Promise<void> {
  await run(tx, st.subjectUpsert, [name, subject, status, streak]);
}

/** Forgets a subject that is ok and has no open alert. */
export async function checkSubjectDelete(tx: Executor, st: WatchdogStatements, name: string, subject: string): Promise<void> {
  await run(tx, st.subjectDelete, [name, subject]);
}

/** Opens an alert (its first notification counted); fails on the unique index if one is open. */
export async function alertOpen(
  tx: Executor,
  st: WatchdogStatements,
  a: { check: string; subject: string; level: AlertLevelValue; message: string; details: unknown },
): Promise<AlertRow> {
  const [row] = await run<AlertRow>(tx, st.alertOpen, [a.check, a.subject, a.level, a.message, json(a.details)]);
  return row!;
}

/** Changes an open alert's level (a notification counted). */
export async function alertChange(tx: Executor, st: WatchdogStatements, id: string, level: AlertLevelValue, message: string, details: unknown): Promise<AlertRow | undefined> {
  const [row] = await run<AlertRow>(tx, st.alertChange, [id, level, message, json(details)]);
  return row;
}

/** Counts a reminder of an open alert. */
export async function alertRemind(tx: Executor, st: WatchdogStatements, id: string, message: string, details: unknown): Promise<AlertRow | undefined> {
  const [row] = await run<AlertRow>(tx, st.alertRemind, [id, message, json(details)]);
  return row;
}

/** Updates an open alert's message and details, silently. */
export async function alertUpdate(tx: Executor, st: WatchdogStatements, id: string, message: string, details: unknown): Promise<void> {
  await run(tx, st.alertUpdate, [id, message, json(details)]);
}

/** Resolves an open alert now (a notification counted). */
export async function alertResolve(tx: Executor, st: WatchdogStatements, id: string): Promise<AlertRow | undefined> {
  const [row] = await run<AlertRow>(tx, st.alertResolve, [id]);
  return row;
}

/** Deletes a check's runs older than a week and its alerts resolved more than 90 days ago. */
export function checkPrune(tx: Executor, st: WatchdogStatements, name: string): Promise<number> {
  return runCount(tx, st.prune, [name]);
}

/** A check's newest applied run. */
export async function checkLastRun(db: Executor, st: WatchdogStatements, name: string): Promise<CheckRunRow | undefined> {
  const [row] = await run<CheckRunRow>(db, st.lastRun, [name]);
  return row;
}

/** The newest run of each named check. */
export function checkLastRuns(db: Executor, st: WatchdogStatements, names: readonly string[]): Promise<CheckRunRow[]> {
  return run<CheckRunRow>(db, st.lastRuns, [names]);
}

/** Alerts, newest first. */
export function alertList(db: Executor, st: WatchdogStatements, f: { open: boolean; check: string | null; beforeId: string | null; limit: number }): Promise<AlertRow[]> {
  return run<AlertRow>(db, st.alertList, [f.open, f.check, f.beforeId, f.limit]);
}

/** One alert. */
export async function alertGet(db: Executor, st: WatchdogStatements, id: string): Promise<AlertRow | undefined> {
  const [row] = await run<AlertRow>(db, st.alertGet, [id]);
  return row;
}

/** Acknowledges an open, unacknowledged alert with its audit row; undefined when none matched. */
export async function alertAck(db: Executor, st: WatchdogStatements, id: string, actor: string, reason: string): Promise<AlertRow | undefined> {
  const [row] = await run<AlertRow>(db, st.alertAck, [id, actor, reason]);
  return row;
}

/** Open alerts per check and level. */
export function alertOpenCounts(db: Executor, st: WatchdogStatements): Promise<OpenAlertCount[]> {
  return run<OpenAlertCount>(db, st.openCounts);
}

/** The database clock. */
export async function watchdogNow(db: Executor, st: WatchdogStatements): Promise<Date> {
  const [row] = await run<{ now: Date }>(db, st.now);
  return row!.now;
}

function json(v: unknown): string | null {
  return v === null || v === undefined ? null : JSON.stringify(v);
}
