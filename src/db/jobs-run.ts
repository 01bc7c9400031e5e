import { run, type Executor } from './executor.js';
import type { JobErrorEntry } from './job-row.js';
import type { StatementSet } from './statements.js';

/** A job as claimed by a worker: what it needs to run it and to report back. */
export interface ClaimedRow {
  id: string;
  kind: string;
  queue: string;
  state: 'running' | 'expired';
  payload: unknown;
  attempt: number;
  max_attempts: number;
  at_most_once: boolean;
  lease_token: string;
  trace_context: Record<string, string> | null;
  run_at: Date;
  created_at: Date;
}

/** The worker's statements of one schema: the hot path, every write fenced by the lease token. */
export function jobRunStatements(set: StatementSet) {
  return {
    // The inner SELECT walks jobs_claim in order (queue = $1, then priority, run_at, id) and skips
    // rows other workers hold. A job past its deadline is claimed only to be marked expired, in the
    // same statement, so it is never handed to a handler. The paused check is an InitPlan (run once).
    claim: set.named(
      'job_claim',
      (s) => `
WITH picked AS (
  SELECT id FROM ${s}.jobs
  WHERE state = 'available' AND queue = $1 AND run_at <= now() AND kind = ANY($2::text[])
    AND NOT EXISTS (SELECT 1 FROM ${s}.queues q WHERE q.name = $1 AND q.paused)
  ORDER BY priority, run_at, id
  LIMIT $3
  FOR UPDATE SKIP LOCKED
)
UPDATE ${s}.jobs j SET
  state = CASE WHEN j.expires_at <= now() THEN 'expired' ELSE 'running' END::${s}.job_state,
  attempt = CASE WHEN j.expires_at <= now() THEN j.attempt ELSE j.attempt + 1 END,
  lease_token = CASE WHEN j.expires_at <= now() THEN j.lease_token ELSE nextval('${s}.lease_token_seq') END,
  lease_owner = CASE WHEN j.expires_at <= now() THEN NULL ELSE $4 END,
  lease_expires_at = CASE WHEN j.expires_at <= now() THEN NULL ELSE now() + $5::float8 * interval '1 millisecond' END,
  started_at = CASE WHEN j.expires_at <= now() THEN j.started_at ELSE now() END,
  finished_at = CASE WHEN j.expires_at <= now() THEN now() END,
  reason = CASE WHEN j.expires_at <= now() THEN 'not started before its deadline ' || j.expires_at::text ELSE j.reason END
FROM picked WHERE j.id = picked.id
RETURNING j.id::text, j.kind, j.queue, j.state, j.payload, j.attempt, j.max_attempts, j.at_most_once,
          j.lease_token::text, j.trace_context, j.run_at, j.created_at`,
    ),
    // Batched completion: (id, token) pairs; a pair whose token is stale matches nothing and is
    // reported back as refused.
    complete: set.named(
      'job_complete',
      (s) => `
UPDATE ${s}.jobs j SET state = 'completed', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL
FROM unnest($1::bigint[], $2::bigint[]) AS c(id, token)
WHERE j.id = c.id AND j.lease_token = c.token AND j.state = 'running'
RETURNING j.id::text`,
    ),
    // One failed attempt: back to available after a delay, or held, or discarded. Fenced by token.
    fail: set.named(
      'job_fail',
      (s) => `
UPDATE ${s}.jobs SET
  state = $3::${s}.job_state,
  run_at = CASE WHEN $3 = 'available' THEN now() + $4::float8 * interval '1 millisecond' ELSE run_at END,
  -- The entry's time is the database's, like every other time of a job: a worker's clock may be off.
  errors = ${s}.append_error(errors, $5::jsonb || jsonb_build_object('at', now())),
  reason = $6,
  finished_at = CASE WHEN $3 IN ('discarded', 'completed') THEN now() END,
  max_attempts = CASE WHEN $7::boolean AND $3 = 'available' THEN greatest(max_attempts, attempt + 1) ELSE max_attempts END,
  lease_owner = NULL, lease_expires_at = NULL
WHERE id = $1 AND lease_token = $2 AND state = 'running'
RETURNING id::text`,
    ),
    heartbeat: set.named(
      'job_heartbeat',
      (s) => `
UPDATE ${s}.jobs j SET lease_expires_at = now() + $3::float8 * interval '1 millisecond'
FROM unnest($1::bigint[], $2::bigint[]) AS h(id, token)
WHERE j.id = h.id AND j.lease_token = h.token AND j.state = 'running'
RETURNING j.id::text`,
    ),
    // Shutdown: hand jobs back at once. A job whose handler never started gets its attempt back;
    // an at-most-once job whose handler did start may have acted, so it is abandoned, not re-run.
    release: set.named(
      'job_release',
      (s) => `
WITH r AS (
  UPDATE ${s}.jobs j SET
    state = CASE WHEN j.at_most_once AND x.started THEN 'abandoned' ELSE 'available' END::${s}.job_state,
    attempt = CASE WHEN x.started THEN j.attempt ELSE j.attempt - 1 END,
    run_at = now(),
    finished_at = CASE WHEN j.at_most_once AND x.started THEN now() END,
    reason = CASE WHEN j.at_most_once AND x.started THEN 'at-most-once job interrupted by shutdown of ' || j.lease_owner ELSE j.reason END,
    errors = CASE WHEN x.started THEN ${s}.append_error(j.errors, x.err::jsonb || jsonb_build_object('at', now())) ELSE j.errors END,
    lease_owner = NULL, lease_expires_at = NULL
  FROM unnest($1::bigint[], $2::bigint[], $3::bool[], $4::text[]) AS x(id, token, started, err)
  WHERE j.id = x.id AND j.lease_token = x.token AND j.state = 'running'
  RETURNING j.id, j.queue, j.state
)
SELECT r.id::text, r.state, pg_notify($5, r.queue) IS NULL AS notified FROM r`,
    ),
  };
}
export type JobRunStatements = ReturnType<typeof jobRunStatements>;

/** Claims up to `limit` jobs of `kinds` from `queue` under a lease owned by `owner`. */
export function jobClaim(
  db: Executor,
  st: JobRunStatements,
  queue: string,
  kinds: readonly string[],
  limit: number,
  owner: string,
  leaseMs: number,
): Promise<ClaimedRow[]> {
  return run<ClaimedRow>(db, st.claim, [queue, kinds, limit, owner, leaseMs]);
}

/** Completes jobs; returns the ids whose token still held (the others were refused). */
export async function jobComplete(db: Executor, st: JobRunStatements, ids: string[], tokens: string[]): Promise<Set<string>> {
  const rows = await run<{ id: string }>(db, st.complete, [ids, tokens]);
  return new Set(rows.map((r) => r.id));
}

/** The outcome of one failed attempt, decided by the jobs layer. */
export interface FailOutcome {
  state: 'available' | 'discarded' | 'held';
  delayMs: number;
  error: JobErrorEntry;
  reason: string | null;
  /** An explicit retry asked by the handler: grant an attempt beyond max_attempts if needed. */
  grantAttempt: boolean;
}

/** Records a failed attempt; false when the token was stale (the write was refused). */
export async function jobFail(db: Executor, st: JobRunStatements, id: string, token: string, o: FailOutcome): Promise<boolean> {
  const rows = await run(db, st.fail, [id, token, o.state, o.delayMs, JSON.stringify(o.error), o.reason, o.grantAttempt]);
  return rows.length === 1;
}

/** Extends leases; returns the ids still held. */
export async function jobHeartbeat(
  db: Executor,
  st: JobRunStatements,
  ids: string[],
  tokens: string[],
  leaseMs: number,
): Promise<Set<string>> {
  const rows = await run<{ id: string }>(db, st.heartbeat, [ids, tokens, leaseMs]);
  return new Set(rows.map((r) => r.id));
}

/** A job handed back at shutdown. */
export interface ReleaseRow {
  id: string;
  token: string;
  started: boolean;
  error: JobErrorEntry;
}

/** Hands jobs back at shutdown and wakes other workers; returns each job's new state. */
export async function jobRelease(
  db: Executor,
  st: JobRunStatements,
  rows: readonly ReleaseRow[],
  channel: string,
): Promise<{ id: string; state: string }[]> {
  return run(db, st.release, [
    rows.map((r) => r.id),
    rows.map((r) => r.token),
    rows.map((r) => r.started),
    rows.map((r) => JSON.stringify(r.error)),
    channel,
  ]);
}
