import { run, runCount, type Executor } from './executor.js';
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

/** Leader-free maintenance statements: each is one atomic UPDATE or DELETE, safe to run on many processes at once. */
export function jobMaintenanceStatements(set: StatementSet) {
  return {
    // Expired leases: at-least-once jobs go back to available (the attempt counts; discarded when
    // none is left), at-most-once jobs whose start was recorded are abandoned for an operator, and
    // at-most-once jobs that never started go back to available with their attempt returned.
    // SKIP LOCKED so two rescuers never fight, and a job a worker is completing right now is left
    // to that worker.
    rescue: set.plain(
      (s) => `
WITH expired AS (
  SELECT id, lease_owner FROM ${s}.jobs
  WHERE state = 'running' AND lease_expires_at < now()
  ORDER BY lease_expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
), upd AS (
  UPDATE ${s}.jobs j SET
    state = CASE WHEN j.at_most_once AND j.started_at IS NULL THEN 'available'
                 WHEN j.at_most_once THEN 'abandoned'
                 WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END::${s}.job_state,
    attempt = CASE WHEN j.at_most_once AND j.started_at IS NULL THEN greatest(j.attempt - 1, 0) ELSE j.attempt END,
    run_at = now(),
    errors = ${s}.append_error(j.errors, jsonb_build_object(
      'attempt', j.attempt, 'at', now(), 'kind', 'lease-expired',
      'message', 'lease expired: worker ' || coalesce(j.lease_owner, '?') || ' stopped renewing it (crashed, paused or cut off)'
                 || CASE WHEN j.at_most_once AND j.started_at IS NULL THEN ' before the handler started' ELSE '' END)),
    reason = CASE WHEN j.at_most_once AND j.started_at IS NULL THEN j.reason
                  WHEN j.at_most_once THEN 'at-most-once job abandoned: its worker ' || coalesce(j.lease_owner, '?') || ' stopped while it ran'
                  WHEN j.attempt >= j.max_attempts THEN 'attempts exhausted (last one lost its lease)'
                  ELSE j.reason END,
    finished_at = CASE WHEN (j.at_most_once AND j.started_at IS NOT NULL) OR (NOT j.at_most_once AND j.attempt >= j.max_attempts) THEN now() END,
    lease_owner = NULL, lease_expires_at = NULL
  FROM expired WHERE j.id = expired.id
  RETURNING j.id, j.kind, j.queue, j.state, j.attempt, expired.lease_owner AS owner
)
SELECT id::text, kind, queue, state, attempt, owner,
       CASE WHEN state = 'available' THEN pg_notify($2, queue) END AS notified
FROM upd`,
    ),
    // Pending jobs past their deadline become expired even when no worker claims their queue.
    expire: set.plain(
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
    prune: set.plain(
      (s) => `
WITH doomed AS (
  SELECT id FROM ${s}.jobs
  WHERE state = $1::${s}.job_state AND finished_at < now() - $2::float8 * interval '1 millisecond'
  LIMIT $3
)
DELETE FROM ${s}.jobs j USING doomed WHERE j.id = doomed.id`,
    ),
  };
}
export type JobMaintenanceStatements = ReturnType<typeof jobMaintenanceStatements>;

/** Takes back up to `limit` jobs whose lease expired; wakes workers of the queues that got work. */
export function jobRescue(db: Executor, st: JobMaintenanceStatements, limit: number, channel: string): Promise<RescuedRow[]> {
  return run<RescuedRow>(db, st.rescue, [limit, channel]);
}

/** Marks up to `limit` pending jobs past their deadline as expired. */
export function jobExpire(db: Executor, st: JobMaintenanceStatements, limit: number): Promise<{ id: string; kind: string; queue: string }[]> {
  return run(db, st.expire, [limit]);
}

/** Deletes up to `limit` jobs in `state` that finished more than `olderThanMs` ago; returns how many. */
export function jobPrune(
  db: Executor,
  st: JobMaintenanceStatements,
  state: string,
  olderThanMs: number,
  limit: number,
): Promise<number> {
  return runCount(db, st.prune, [state, olderThanMs, limit]);
}
