import { keyRelease, runReleasingKeys } from './dedupe-sql.js';
import { run, runCount, type Executor } from './executor.js';
import { HISTORY_COLUMNS, UNSTARTED_RESCUES } from './jobs-run.js';
import type { StatementSet } from './statements.js';

/** A job the rescuer took back from a worker whose lease expired. */
export interface RescuedRow {
  id: string;
  kind: string;
  queue: string;
  state: 'available' | 'discarded' | 'abandoned';
  attempt: number;
  owner: string | null;
}

/** Re-exported: how often a lease may expire unstarted before the job's start is recorded first (jobs-run.ts). */
export { UNSTARTED_RESCUES };

/** Leader-free maintenance statements: each is one atomic UPDATE or DELETE, safe to run on many processes at once. */
export function jobMaintenanceStatements(set: StatementSet) {
  return {
    // Expired leases. A job whose start was never recorded (started_at is NULL: the claim records
    // none, and the worker records it once the handler has run a moment, or before the handler
    // runs for an at-most-once job and a suspected one, SUSPECT in jobs-run.ts) goes back to
    // available with its attempt returned, whatever its delivery: a crash never uses up an attempt
    // of a job that did not run (issue 11, bug 3). Otherwise at-least-once jobs go back to
    // available (the attempt counts; discarded when none is left) and at-most-once jobs are
    // abandoned for an operator. Each give-back is an error entry marked `unstarted`: an
    // at-least-once handler that kills its process within MARK_DELAY_MS of starting leaves no start
    // either, and after UNSTARTED_RESCUES such entries the claim asks the worker to record the
    // job's start before its handler runs, so that handler uses up its attempts and ends — while
    // a job that only waited, unstarted, beside it is given back however often it happens (its
    // start is never recorded). SKIP LOCKED so two rescuers never fight, and a job a worker is
    // completing right now is left to that worker.
    rescue: set.plain<RescuedRow, [limit: number, channel: string]>(
      (s) => `
WITH expired AS (
  SELECT id, lease_owner, started_at IS NULL AS unstarted
  FROM ${s}.jobs
  WHERE state = 'running' AND lease_expires_at < now()
  ORDER BY lease_expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
), upd AS (
  UPDATE ${s}.jobs j SET
    state = CASE WHEN x.unstarted THEN 'available'
                 WHEN j.at_most_once THEN 'abandoned'
                 WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END::${s}.job_state,
    attempt = CASE WHEN x.unstarted THEN greatest(j.attempt - 1, 0) ELSE j.attempt END,
    run_at = now(),
    errors = ${s}.append_error(j.errors, jsonb_build_object(
      'attempt', j.attempt, 'at', now(), 'kind', 'lease-expired',
      'message', 'lease expired: worker ' || coalesce(j.lease_owner, '?') || ' stopped renewing it (crashed, paused or cut off)'
                 || CASE WHEN x.unstarted THEN ' before the handler started (no start recorded); the attempt is given back' ELSE '' END)
      || CASE WHEN x.unstarted THEN '{"unstarted": true}'::jsonb ELSE '{}'::jsonb END),
    reason = CASE WHEN x.unstarted THEN j.reason
                  WHEN j.at_most_once THEN 'at-most-once job abandoned: its worker ' || coalesce(j.lease_owner, '?') || ' stopped while it ran'
                  WHEN j.attempt >= j.max_attempts THEN 'attempts exhausted (last one lost its lease)'
                  ELSE j.reason END,
    finished_at = CASE WHEN NOT x.unstarted AND (j.at_most_once OR j.attempt >= j.max_attempts) THEN now() END,
    ${keyRelease(s, 'j', 'x.unstarted OR (NOT j.at_most_once AND j.attempt < j.max_attempts)')},
    lease_owner = NULL, lease_expires_at = NULL
  FROM expired x WHERE j.id = x.id
  RETURNING j.id, j.kind, j.queue, j.state, j.attempt, x.lease_owner AS owner
)
SELECT id::text, kind, queue, state, attempt, owner,
       CASE WHEN state = 'available' THEN pg_notify($2, queue) END AS notified
FROM upd`,
    ),
    // Pending jobs past their deadline become expired even when no worker claims their queue.
    expire: set.plain<{ id: string; kind: string; queue: string }, [limit: number]>(
      (s) => `
WITH due AS (
  SELECT id FROM ${s}.jobs WHERE state = 'available' AND expires_at <= now()
  ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED
)
UPDATE ${s}.jobs j SET state = 'expired', finished_at = now(),
  reason = 'not started before its deadline ' || j.expires_at::text
FROM due WHERE j.id = due.id
RETURNING j.id::text, j.kind, j.queue`,
    ),
    // Finished rows still in `jobs` move to the history: jobs finished by a statement other than the
    // completion (discarded, cancelled, expired, resolved) and rows an older version completed in
    // place (migration 0008 is compatible). The oldest first, in batches, SKIP LOCKED; served by
    // jobs_finished. This is also how an existing table's history moves after the migration, online.
    archive: set.plain<{ n: number }, [limit: number]>(
      (s) => `
WITH moved AS (
  DELETE FROM ${s}.jobs j WHERE j.id IN (
    SELECT id FROM ${s}.jobs
    WHERE state IN ('completed', 'discarded', 'cancelled', 'expired') AND finished_at IS NOT NULL
    ORDER BY finished_at LIMIT $1 FOR UPDATE SKIP LOCKED)
  RETURNING j.*
), kept AS (
  INSERT INTO ${s}.jobs_history (${HISTORY_COLUMNS}) SELECT ${HISTORY_COLUMNS} FROM moved
)
SELECT count(*)::int AS n FROM moved`,
    ),
    // The day partitions of the history from `back` days ago to `ahead` days ahead (made once).
    ensurePartitions: set.plain<{ made: number }, [back: number, ahead: number]>((s) => `SELECT ${s}.history_partitions_ensure($1, $2) AS made`),
    // One whole day of a state's history older than the retention: dropped with its logs and keys,
    // the spared kinds' rows kept (NULL when no partition is that old, -1 when its lock was busy).
    // See migration 0008.
    pruneDay: set.plain<{ n: string | null }, [state: string, olderThanMs: number, spared: readonly string[]]>(
      (s) => `SELECT ${s}.history_prune($1, $2::float8 * interval '1 millisecond', $3::text[])::text AS n`,
    ),
    // Rows no whole-day drop takes: the default partitions; with onlyDefault false, also the day
    // partitions (a retention under a day, a kind's retention shorter than its state's).
    pruneRows: set.plain<{ n: number }, [state: string, olderThanMs: number, limit: number, kinds: readonly string[] | null, spared: readonly string[], onlyDefault: boolean]>(
      (s) => `SELECT ${s}.history_prune_rows($1, $2::float8 * interval '1 millisecond', $3, $4::text[], $5::text[], $6)::int AS n`,
    ),
    // 'within' keys past their period hold nothing; deleting them only keeps the table small.
    pruneKeys: set.plain<never, [limit: number]>(
      (s) => `
DELETE FROM ${s}.dedupe_keys k USING (
  SELECT kind, key FROM ${s}.dedupe_keys WHERE expires_at < now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED
) d WHERE k.kind = d.kind AND k.key = d.key AND k.expires_at < now()`,
    ),
  };
}
export type JobMaintenanceStatements = ReturnType<typeof jobMaintenanceStatements>;

/**
 * Maintenance bound to the schema's pool: rescue, expiry, pruning. Each is one atomic statement
 * with SKIP LOCKED, safe on many processes at once.
 */
export class JobMaintenanceQueries {
  private readonly st: JobMaintenanceStatements;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
    private readonly jobsChannel: string,
  ) {
    this.st = jobMaintenanceStatements(set);
  }

  /** Takes back up to `limit` jobs whose lease expired; wakes workers of the queues that got work. */
  rescue(p: { limit: number }): Promise<RescuedRow[]> {
    return runReleasingKeys(this.db, this.st.rescue, [p.limit, this.jobsChannel]);
  }

  /** Marks up to `limit` pending jobs past their deadline as expired. */
  expire(p: { limit: number }): Promise<{ id: string; kind: string; queue: string }[]> {
    return run(this.db, this.st.expire, [p.limit]);
  }

  /** Moves up to `limit` finished rows from `jobs` to the history; returns how many. */
  async archive(p: { limit: number }): Promise<number> {
    const [row] = await run(this.db, this.st.archive, [p.limit]);
    return row?.n ?? 0;
  }

  /** Makes the history's day partitions from `back` days ago to `ahead` days ahead; returns how many were new. */
  async ensurePartitions(p: { back: number; ahead: number }): Promise<number> {
    const [row] = await run(this.db, this.st.ensurePartitions, [p.back, p.ahead]);
    return row?.made ?? 0;
  }

  /**
   * Drops the oldest day of `state`'s history that is entirely older than `olderThanMs`: the jobs
   * it held (a number), `busy` when its lock was not free soon enough, `none` when no day is that old.
   */
  async pruneDay(p: { state: string; olderThanMs: number; spared: readonly string[] }): Promise<number | 'busy' | 'none'> {
    const [row] = await run(this.db, this.st.pruneDay, [p.state, p.olderThanMs, p.spared]);
    if (row?.n === null || row?.n === undefined) return 'none';
    return row.n === '-1' ? 'busy' : Number(row.n);
  }

  /**
   * Deletes up to `limit` of `state`'s finished jobs older than `olderThanMs`, of `kinds` (null:
   * any) but not of `spared`: from the default partition only, or (onlyDefault false) from the
   * whole state. Returns how many.
   */
  async pruneRows(p: { state: string; olderThanMs: number; limit: number; kinds: readonly string[] | null; spared: readonly string[]; onlyDefault: boolean }): Promise<number> {
    const [row] = await run(this.db, this.st.pruneRows, [p.state, p.olderThanMs, p.limit, p.kinds, p.spared, p.onlyDefault]);
    return row?.n ?? 0;
  }

  /** Deletes up to `limit` dedupe keys of the 'within' scope whose period is over; returns how many. */
  pruneKeys(p: { limit: number }): Promise<number> {
    return runCount(this.db, this.st.pruneKeys, [p.limit]);
  }
}
