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
    ensure: set.plain<never, [name: string]>((s) => `INSERT INTO ${s}.checks (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`),
    // Runs of one check apply one after the other (a tick and a manual run), in the order of the
    // lock; the database clock comes with it.
    lock: set.plain<CheckLockRow, [name: string]>((s) => `SELECT last_applied_at, clock_timestamp() AS now FROM ${s}.checks WHERE name = $1 FOR UPDATE`),
    // The once-per-tick step: only the transaction whose insert took the key goes on.
    runInsert: set.plain<{ run_at: Date }, [check: string, at: Date, status: CheckStatusValue, results: string, durationMs: number, manual: boolean, applied: boolean]>(
      (s) => `INSERT INTO ${s}.check_runs (check_name, run_at, status, results, duration_ms, manual, applied)
        VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7) ON CONFLICT (check_name, run_at) DO NOTHING RETURNING run_at`,
    ),
    advance: set.plain<never, [name: string, at: Date]>((s) => `UPDATE ${s}.checks SET last_applied_at = greatest(coalesce(last_applied_at, $2), $2) WHERE name = $1`),
    // A manual run's instant, to the millisecond and never on a whole second, so it cannot take
    // the key of a scheduled tick (always whole seconds) — as manual schedule ticks do.
    manualStamp: set.plain<{ at: Date }, []>(
      () => `SELECT CASE WHEN date_trunc('second', t) = t THEN t + interval '1 millisecond' ELSE t END AS at
        FROM (SELECT date_trunc('milliseconds', clock_timestamp()) AS t) c`,
    ),
    subjects: set.plain<SubjectStateRow, [name: string]>(
      (s) => `SELECT cs.subject, cs.status, cs.bad_streak, cs.bad_since, a.id::text AS alert_id, a.level AS alert_level,
          a.notifications AS alert_notifications, a.last_notified_at AS alert_last_notified_at, a.acked_at AS alert_acked_at
        FROM ${s}.check_subjects cs
        LEFT JOIN ${s}.alerts a ON a.check_name = cs.check_name AND a.subject = cs.subject AND a.resolved_at IS NULL
        WHERE cs.check_name = $1 FOR UPDATE OF cs`,
    ),
    subjectUpsert: set.plain<never, [name: string, subject: string, status: CheckStatusValue, streak: number]>(
      (s) => `INSERT INTO ${s}.check_subjects AS c (check_name, subject, status, bad_streak, bad_since) VALUES ($1, $2, $3, $4, CASE WHEN $4 > 0 THEN now() END)
        ON CONFLICT (check_name, subject) DO UPDATE SET status = EXCLUDED.status, bad_streak = EXCLUDED.bad_streak, updated_at = now(),
          bad_since = CASE WHEN EXCLUDED.bad_streak = 0 THEN NULL ELSE coalesce(c.bad_since, now()) END`,
    ),
    subjectDelete: set.plain<never, [name: string, subject: string]>((s) => `DELETE FROM ${s}.check_subjects WHERE check_name = $1 AND subject = $2`),
    // The unique index alerts_open makes a second open alert for the subject fail the transaction.
    alertOpen: set.plain<AlertRow, [check: string, subject: string, level: AlertLevelValue, message: string, details: string | null]>(
      (s) => `INSERT INTO ${s}.alerts (check_name, subject, level, message, details, notifications, last_notified_at)
        VALUES ($1, $2, $3, $4, $5::jsonb, 1, now()) RETURNING ${ALERT_COLUMNS}`,
    ),
    alertChange: set.plain<AlertRow, [id: string, level: AlertLevelValue, message: string, details: string | null]>(
      (s) => `UPDATE ${s}.alerts SET level = $2, message = $3, details = $4::jsonb, level_changed_at = now(),
          notifications = notifications + 1, last_notified_at = now()
        WHERE id = $1 AND resolved_at IS NULL RETURNING ${ALERT_COLUMNS}`,
    ),
    alertRemind: set.plain<AlertRow, [id: string, message: string, details: string | null]>(
      (s) => `UPDATE ${s}.alerts SET message = $2, details = $3::jsonb, notifications = notifications + 1, last_notified_at = now()
        WHERE id = $1 AND resolved_at IS NULL RETURNING ${ALERT_COLUMNS}`,
    ),
    alertUpdate: set.plain<never, [id: string, message: string, details: string | null]>((s) => `UPDATE ${s}.alerts SET message = $2, details = $3::jsonb WHERE id = $1 AND resolved_at IS NULL`),
    alertResolve: set.plain<AlertRow, [id: string]>(
      (s) => `UPDATE ${s}.alerts SET resolved_at = now(), notifications = notifications + 1, last_notified_at = now()
        WHERE id = $1 AND resolved_at IS NULL RETURNING ${ALERT_COLUMNS}`,
    ),
    prune: set.plain<never, [name: string]>(
      (s) => `WITH r AS (DELETE FROM ${s}.check_runs WHERE check_name = $1 AND run_at < now() - ${RUN_RETENTION})
        DELETE FROM ${s}.alerts WHERE check_name = $1 AND resolved_at < now() - ${ALERT_RETENTION}`,
    ),
    lastRun: set.plain<CheckRunRow, [name: string]>(
      (s) => `SELECT check_name, run_at, status, results, duration_ms, manual, applied, created_at FROM ${s}.check_runs
        WHERE check_name = $1 AND applied ORDER BY run_at DESC LIMIT 1`,
    ),
    // DISTINCT ON over the primary key (check_name, run_at): one index probe per check.
    lastRuns: set.plain<CheckRunRow, [names: readonly string[]]>(
      (s) => `SELECT DISTINCT ON (check_name) check_name, run_at, status, results, duration_ms, manual, applied, created_at
        FROM ${s}.check_runs WHERE check_name = ANY($1::text[]) ORDER BY check_name, run_at DESC`,
    ),
    alertList: set.plain<AlertRow, [open: boolean, check: string | null, beforeId: string | null, limit: number]>(
      (s) => `SELECT ${ALERT_COLUMNS} FROM ${s}.alerts
        WHERE ($1::boolean IS NOT TRUE OR resolved_at IS NULL) AND ($2::text IS NULL OR check_name = $2)
          AND ($3::bigint IS NULL OR id < $3)
        ORDER BY id DESC LIMIT $4`,
    ),
    alertGet: set.plain<AlertRow, [id: string]>((s) => `SELECT ${ALERT_COLUMNS} FROM ${s}.alerts WHERE id = $1`),
    // The acknowledgement and its audit row in one statement.
    alertAck: set.plain<AlertRow, [id: string, actor: string, reason: string]>(
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
    openCounts: set.plain<OpenAlertCount, []>((s) => `SELECT check_name, level, count(*)::int AS count FROM ${s}.alerts WHERE resolved_at IS NULL GROUP BY 1, 2`),
    now: set.plain<{ now: Date }, []>(() => `SELECT clock_timestamp() AS now`),
  };
}
export type WatchdogStatements = ReturnType<typeof watchdogStatements>;

/**
 * The watchdog's statements bound to the schema's pool. Those a check run applies inside its
 * transaction (the lock, the run's key, the subjects, the alert changes) take it as `tx`.
 */
export class WatchdogQueries {
  private readonly st: WatchdogStatements;

  constructor(
    private readonly pool: Executor,
    set: StatementSet,
  ) {
    this.st = watchdogStatements(set);
  }

  /** Creates a check's row unless it exists, in `tx`. */
  async ensure(p: { tx: Executor; name: string }): Promise<void> {
    await run(p.tx, this.st.ensure, [p.name]);
  }

  /** Locks a check's row for the rest of `tx`; the row must exist ({@link ensure}). */
  async lock(p: { tx: Executor; name: string }): Promise<CheckLockRow> {
    const [row] = await run(p.tx, this.st.lock, [p.name]);
    return row!;
  }

  /** Records a run in `tx`; false when a run with this key was recorded before (the same tick, run again). */
  async runInsert(p: { tx: Executor; run: CheckRunInsert }): Promise<boolean> {
    const r = p.run;
    const rows = await run(p.tx, this.st.runInsert, [r.check, r.at, r.status, JSON.stringify(r.results), Math.round(r.durationMs), r.manual, r.applied]);
    return rows.length === 1;
  }

  /** Moves a check's newest applied run forward (never back), in `tx`. */
  async advance(p: { tx: Executor; name: string; at: Date }): Promise<void> {
    await run(p.tx, this.st.advance, [p.name, p.at]);
  }

  /** The instant of a manual run (database clock, to the ms, never a whole second). */
  async manualStamp(): Promise<Date> {
    const [row] = await run(this.pool, this.st.manualStamp, []);
    return row!.at;
  }

  /** The state of every subject of a check that has one, with its open alert; locks them in `tx`. */
  subjects(p: { tx: Executor; name: string }): Promise<SubjectStateRow[]> {
    return run(p.tx, this.st.subjects, [p.name]);
  }

  /** Writes a subject's status and bad streak, in `tx`. */
  async subjectUpsert(p: { tx: Executor; name: string; subject: string; status: CheckStatusValue; streak: number }): Promise<void> {
    await run(p.tx, this.st.subjectUpsert, [p.name, p.subject, p.status, p.streak]);
  }

  /** Forgets a subject that is ok and has no open alert, in `tx`. */
  async subjectDelete(p: { tx: Executor; name: string; subject: string }): Promise<void> {
    await run(p.tx, this.st.subjectDelete, [p.name, p.subject]);
  }

  /** Opens an alert in `tx` (its first notification counted); fails on the unique index if one is open. */
  async alertOpen(p: { tx: Executor; check: string; subject: string; level: AlertLevelValue; message: string; details: unknown }): Promise<AlertRow> {
    const [row] = await run(p.tx, this.st.alertOpen, [p.check, p.subject, p.level, p.message, json(p.details)]);
    return row!;
  }

  /** Changes an open alert's level in `tx` (a notification counted). */
  async alertChange(p: { tx: Executor; id: string; level: AlertLevelValue; message: string; details: unknown }): Promise<AlertRow | undefined> {
    const [row] = await run(p.tx, this.st.alertChange, [p.id, p.level, p.message, json(p.details)]);
    return row;
  }

  /** Counts a reminder of an open alert, in `tx`. */
  async alertRemind(p: { tx: Executor; id: string; message: string; details: unknown }): Promise<AlertRow | undefined> {
    const [row] = await run(p.tx, this.st.alertRemind, [p.id, p.message, json(p.details)]);
    return row;
  }

  /** Updates an open alert's message and details silently, in `tx`. */
  async alertUpdate(p: { tx: Executor; id: string; message: string; details: unknown }): Promise<void> {
    await run(p.tx, this.st.alertUpdate, [p.id, p.message, json(p.details)]);
  }

  /** Resolves an open alert now, in `tx` (a notification counted). */
  async alertResolve(p: { tx: Executor; id: string }): Promise<AlertRow | undefined> {
    const [row] = await run(p.tx, this.st.alertResolve, [p.id]);
    return row;
  }

  /** Deletes a check's runs older than a week and its alerts resolved more than 90 days ago, in `tx`. */
  prune(p: { tx: Executor; name: string }): Promise<number> {
    return runCount(p.tx, this.st.prune, [p.name]);
  }

  /** A check's newest applied run. */
  async lastRun(p: { name: string }): Promise<CheckRunRow | undefined> {
    const [row] = await run(this.pool, this.st.lastRun, [p.name]);
    return row;
  }

  /** The newest run of each named check. */
  lastRuns(p: { names: readonly string[] }): Promise<CheckRunRow[]> {
    return run(this.pool, this.st.lastRuns, [p.names]);
  }

  /** Alerts, newest first. */
  alertList(p: { open: boolean; check: string | null; beforeId: string | null; limit: number }): Promise<AlertRow[]> {
    return run(this.pool, this.st.alertList, [p.open, p.check, p.beforeId, p.limit]);
  }

  /** One alert. */
  async alertGet(p: { id: string }): Promise<AlertRow | undefined> {
    const [row] = await run(this.pool, this.st.alertGet, [p.id]);
    return row;
  }

  /** Acknowledges an open, unacknowledged alert with its audit row; undefined when none matched. */
  async alertAck(p: { id: string; actor: string; reason: string }): Promise<AlertRow | undefined> {
    const [row] = await run(this.pool, this.st.alertAck, [p.id, p.actor, p.reason]);
    return row;
  }

  /** Open alerts per check and level. */
  openCounts(): Promise<OpenAlertCount[]> {
    return run(this.pool, this.st.openCounts, []);
  }

  /** The database clock. */
  async now(): Promise<Date> {
    const [row] = await run(this.pool, this.st.now, []);
    return row!.now;
  }
}

function json(v: unknown): string | null {
  return v === null || v === undefined ? null : JSON.stringify(v);
}
