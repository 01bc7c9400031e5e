import { keyRelease, runReleasingKeys } from './dedupe-sql.js';
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
    // Expired leases. A job whose handler never started (started_at is NULL: it waited in the
    // worker for a slot, or an at-most-once job whose start was not recorded) goes back to
    // available with its attempt returned, whatever its delivery: a crash never uses up an attempt
    // of a job that did not run (issue 11, bug 3). Otherwise at-least-once jobs go back to
    // available (the attempt counts; discarded when none is left) and at-most-once jobs are
    // abandoned for an operator. SKIP LOCKED so two rescuers never fight, and a job a worker is
    // completing right now is left to that worker.
    rescue: set.plain<RescuedRow, [limit: number, channel: string]>(
      (s) => `
WITH expired AS (
  SELECT id, lease_owner FROM ${s}.jobs
  WHERE state = 'running' AND lease_expires_at < now()
  ORDER BY lease_expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
), upd AS (
  UPDATE ${s}.jobs j SET
    state = CASE WHEN j.started_at IS NULL THEN 'available'
                 WHEN j.at_most_once THEN 'abandoned'
                 WHEN j.attempt >= j.max_attempts THEN 'discarded' ELSE 'available' END::${s}.job_state,
    attempt = CASE WHEN j.started_at IS NULL THEN greatest(j.attempt - 1, 0) ELSE j.attempt END,
    run_at = now(),
    errors = ${s}.append_error(j.errors, jsonb_build_object(
      'attempt', j.attempt, 'at', now(), 'kind', 'lease-expired',
      'message', 'lease expired: worker ' || coalesce(j.lease_owner, '?') || ' stopped renewing it (crashed, paused or cut off)'
                 || CASE WHEN j.started_at IS NULL THEN ' before the handler started' ELSE '' END)),
    reason = CASE WHEN j.started_at IS NULL THEN j.reason
                  WHEN j.at_most_once THEN 'at-most-once job abandoned: its worker ' || coalesce(j.lease_owner, '?') || ' stopped while it ran'
                  WHEN j.attempt >= j.max_attempts THEN 'attempts exhausted (last one lost its lease)'
                  ELSE j.reason END,
    finished_at = CASE WHEN j.started_at IS NOT NULL AND (j.at_most_once OR j.attempt >= j.max_attempts) THEN now() END,
    ${keyRelease(s, 'j', 'j.started_at IS NULL OR (NOT j.at_most_once AND j.attempt < j.max_attempts)')},
    lease_owner = NULL, lease_expires_at = NULL
  FROM expired WHERE j.id = expired.id
  RETURNING j.id, j.kind, j.queue, j.state, j.attempt, expired.lease_owner AS owner
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
    // A pruned job takes its 'ever' dedupe key with it, in the same statement (an enqueue waiting
    // on that key row then sees it gone and takes the key).
    prune: set.plain<{ n: number }, [state: string, olderThanMs: number, limit: number]>(
      (s) => `
WITH doomed AS (
  SELECT id FROM ${s}.jobs
  WHERE state = $1::${s}.job_state AND finished_at < now() - $2::float8 * interval '1 millisecond'
  LIMIT $3
), gone AS (
  DELETE FROM ${s}.jobs j USING doomed WHERE j.id = doomed.id RETURNING j.id, j.dedupe_scope
), keys AS (
  DELETE FROM ${s}.dedupe_keys k USING gone WHERE gone.dedupe_scope = 'ever' AND k.job_id = gone.id AND k.expires_at IS NULL
)
SELECT count(*)::int AS n FROM gone`,
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

  /** Deletes up to `limit` jobs in `state` that finished more than `olderThanMs` ago; returns how many. */
  async prune(p: { state: string; olderThanMs: number; limit: number }): Promise<number> {
    const [row] = await run(this.db, this.st.prune, [p.state, p.olderThanMs, p.limit]);
    return row?.n ?? 0;
  }

  /** Deletes up to `limit` dedupe keys of the 'within' scope whose period is over; returns how many. */
  pruneKeys(p: { limit: number }): Promise<number> {
    return runCount(this.db, this.st.pruneKeys, [p.limit]);
  }
}
