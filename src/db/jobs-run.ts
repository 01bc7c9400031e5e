import { keyRelease, runReleasingKeys } from './dedupe-sql.js';
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
  /**
   * How long the job had been due when claimed, in ms on the database clock (a number, not
   * `run_at`: no worker clock is involved, and parsing a timestamp per row cost ~2 % of a busy
   * worker's CPU).
   */
  waited_ms: number;
  priority: number;
  /** Time left until `expires_at` when claimed, on the database clock; null without a deadline. */
  expires_in_ms: number | null;
}

/**
 * The fence of batched writes: ids in $1, their lease tokens in $2 (same order), still running.
 * Deliberately no join on the pairs: with statistics that say almost nothing runs (the usual state
 * of a queue table's statistics), the planner answered a join of `unnest($1, $2)` with a scan of
 * every running row once per element, quadratic in the batch: 250-790 ms for a few hundred
 * completions with two workers (auto_explain, bench/NOTES.md). Two `= ANY` filters are linear
 * whatever the plan (a primary-key scan, or a scan with hashed arrays). They are as strict as the
 * pairs: a token is issued to exactly one claim of one job, so a row whose token is in $2 is the
 * job that claim took; the caller matches results by token.
 */
const FENCED = `j.id = ANY($1::bigint[]) AND j.lease_token = ANY($2::bigint[]) AND j.state = 'running'`;

/** Records that held jobs' handlers started (ids and tokens in the given parameters), fenced like FENCED. */
const MARK = (s: string, ids: string, tokens: string) => `
UPDATE ${s}.jobs m SET started_at = now()
WHERE m.id = ANY(${ids}::bigint[]) AND m.lease_token = ANY(${tokens}::bigint[]) AND m.state = 'running' AND m.started_at IS NULL`;

/** The worker's statements of one schema: the hot path, every write fenced by the lease token. */
export function jobRunStatements(set: StatementSet) {
  return {
    // The inner SELECT walks jobs_claim in order (queue = $1, then priority, run_at, id) and skips
    // rows other workers hold. A job past its deadline is claimed only to be marked expired, in the
    // same statement, so it is never handed to a handler. The paused check is an InitPlan (run once).
    // The UPDATE finds the picked rows through `id = ANY (ARRAY(...))`, a primary-key index scan:
    // joining the CTE instead let the generic plan (which guesses the LIMIT at 10 % of the table)
    // hash-join a sequential scan of every row, finished ones included.
    // started_at records that a handler started. Only the first $6 rows in claim order (the ones
    // the worker starts at once) get it here; the rest wait in the worker for a slot, and their
    // start is recorded when it happens (the `marks` of the completion statements), so a crash
    // gives back the attempt of a job that never ran (issue 11, bug 3). `(ARRAY(...))[1:$6]` is an
    // InitPlan run once; `= ANY` over it costs $6 comparisons per row. An at-most-once job gets no
    // started_at here: the worker records its start before the handler runs (jobStart).
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
  started_at = CASE WHEN j.expires_at <= now() THEN j.started_at WHEN j.at_most_once THEN NULL
                    WHEN j.id = ANY ((ARRAY(SELECT id FROM picked))[1:$6::int]) THEN now() END,
  finished_at = CASE WHEN j.expires_at <= now() THEN now() END,
  reason = CASE WHEN j.expires_at <= now() THEN 'not started before its deadline ' || j.expires_at::text ELSE j.reason END
WHERE j.id = ANY (ARRAY(SELECT id FROM picked))
RETURNING j.id::text, j.kind, j.queue, j.state, j.payload, j.attempt, j.max_attempts, j.at_most_once,
          j.lease_token::text, j.trace_context, (extract(epoch FROM now() - j.run_at) * 1000)::float8 AS waited_ms, j.priority,
          (extract(epoch FROM j.expires_at - now()) * 1000)::float8 AS expires_in_ms`,
    ),
    // The start of at-most-once handlers, recorded (and committed) before they run: from then on a
    // lost lease means "may have acted" and the job is abandoned rather than re-run.
    start: set.named(
      'job_start',
      (s) => `
UPDATE ${s}.jobs j SET started_at = now()
WHERE ${FENCED}
RETURNING j.lease_token::text AS token`,
    ),
    // A job claimed ahead of a free slot whose deadline passed before a slot freed: expired, its
    // attempt given back (it never ran).
    expireHeld: set.named(
      'job_expire_held',
      (s) => `
UPDATE ${s}.jobs SET state = 'expired', attempt = greatest(attempt - 1, 0), finished_at = now(),
  reason = 'not started before its deadline ' || expires_at::text, lease_owner = NULL, lease_expires_at = NULL
WHERE id = $1 AND lease_token = $2 AND state = 'running'
RETURNING id::text`,
    ),
    // Batched completion: (id, token) pairs; a pair whose token is stale matches nothing and is
    // reported back as refused. A job that started from the worker's held jobs and finishes before
    // its start mark was written gets its start here (within one batch of the truth).
    complete: set.named(
      'job_complete',
      (s) => `
UPDATE ${s}.jobs j SET state = 'completed', finished_at = now(), started_at = coalesce(j.started_at, now()),
  lease_owner = NULL, lease_expires_at = NULL
WHERE ${FENCED}
RETURNING j.lease_token::text AS token`,
    ),
    // The same, carrying the start marks of other jobs ($3 ids, $4 tokens: held jobs whose handler
    // started since the last write) in the same statement, so recording starts costs no round trip.
    // The two sets are disjoint (the worker leaves a job that completes out of the marks).
    completeMarked: set.named(
      'job_complete_marked',
      (s) => `
WITH marked AS (${MARK(s, '$3', '$4')})
UPDATE ${s}.jobs j SET state = 'completed', finished_at = now(), started_at = coalesce(j.started_at, now()),
  lease_owner = NULL, lease_expires_at = NULL
WHERE ${FENCED}
RETURNING j.lease_token::text AS token`,
    ),
    // With completed jobs kept for no time (retention.completed = 0): the completion deletes the
    // row, fenced the same way. A DELETE writes no new row version and no index entries.
    completeDelete: set.named(
      'job_complete_delete',
      (s) => `
DELETE FROM ${s}.jobs j
WHERE ${FENCED}
RETURNING j.lease_token::text AS token`,
    ),
    completeDeleteMarked: set.named(
      'job_complete_delete_marked',
      (s) => `
WITH marked AS (${MARK(s, '$3', '$4')})
DELETE FROM ${s}.jobs j
WHERE ${FENCED}
RETURNING j.lease_token::text AS token`,
    ),
    // Start marks alone, when no completion carried them soon enough.
    mark: set.named('job_mark_started', (s) => MARK(s, '$1', '$2')),
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
  started_at = coalesce(started_at, now()),
  finished_at = CASE WHEN $3 IN ('discarded', 'completed') THEN now() END,
  max_attempts = CASE WHEN $7::boolean AND $3 = 'available' THEN greatest(max_attempts, attempt + 1) ELSE max_attempts END,
  ${keyRelease(s, 'jobs', `$3 = 'available'`)},
  lease_owner = NULL, lease_expires_at = NULL
WHERE id = $1 AND lease_token = $2 AND state = 'running'
RETURNING id::text`,
    ),
    // The fence of a handler's own transaction (ctx.transaction): run inside it just before COMMIT.
    // FOR UPDATE keeps a rescue or a cancel from changing the job until the transaction ends, so
    // its writes commit only while this attempt holds the lease.
    fence: set.named(
      'job_fence',
      (s) => `SELECT 1 AS held FROM ${s}.jobs WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR UPDATE`,
    ),
    // The latest progress a handler reported (ctx.progress), fenced like every write of the attempt.
    progress: set.named(
      'job_progress',
      (s) => `UPDATE ${s}.jobs SET progress = $3::jsonb WHERE id = $1 AND lease_token = $2 AND state = 'running' RETURNING id::text`,
    ),
    heartbeat: set.named(
      'job_heartbeat',
      (s) => `
UPDATE ${s}.jobs j SET lease_expires_at = now() + $3::float8 * interval '1 millisecond'
WHERE ${FENCED}
RETURNING j.lease_token::text AS token`,
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
    ${keyRelease(s, 'j', 'NOT (j.at_most_once AND x.started)')},
    lease_owner = NULL, lease_expires_at = NULL
  FROM unnest($1::bigint[], $2::bigint[], $3::bool[], $4::text[]) AS x(id, token, started, err)
  WHERE j.id = x.id AND j.lease_token = x.token AND j.state = 'running' AND j.id = ANY($1::bigint[])
  RETURNING j.id, j.queue, j.state
)
SELECT r.id::text, r.state, pg_notify($5, r.queue) IS NULL AS notified FROM r`,
    ),
  };
}
export type JobRunStatements = ReturnType<typeof jobRunStatements>;

/**
 * Claims up to `limit` jobs of `kinds` from `queue` under a lease owned by `owner`; the first
 * `startNow` in claim order are recorded as started (the worker runs them at once).
 */
export function jobClaim(
  db: Executor,
  st: JobRunStatements,
  queue: string,
  kinds: readonly string[],
  limit: number,
  startNow: number,
  owner: string,
  leaseMs: number,
): Promise<ClaimedRow[]> {
  return run<ClaimedRow>(db, st.claim, [queue, kinds, limit, owner, leaseMs, startNow]);
}

/** Records that the handlers of these claimed jobs start now; returns the lease tokens that still held. */
export async function jobStart(db: Executor, st: JobRunStatements, ids: string[], tokens: string[]): Promise<Set<string>> {
  const rows = await run<{ token: string }>(db, st.start, [ids, tokens]);
  return new Set(rows.map((r) => r.token));
}

/** Expires a claimed job that never started; false when the token was stale. */
export async function jobExpireHeld(db: Executor, st: JobRunStatements, id: string, token: string): Promise<boolean> {
  return (await run(db, st.expireHeld, [id, token])).length === 1;
}

/** Held jobs whose handlers started, to record with the next write: ids and tokens, in the same order. */
export interface StartMarks {
  ids: string[];
  tokens: string[];
}

/**
 * Completes jobs (or deletes them, with `remove`), recording `marks` in the same statement;
 * returns the lease tokens that still held (the others were refused).
 */
export async function jobComplete(
  db: Executor,
  st: JobRunStatements,
  ids: string[],
  tokens: string[],
  remove = false,
  marks?: StartMarks,
): Promise<Set<string>> {
  const marked = marks !== undefined && marks.ids.length > 0;
  const stmt = remove ? (marked ? st.completeDeleteMarked : st.completeDelete) : marked ? st.completeMarked : st.complete;
  const rows = await run<{ token: string }>(db, stmt, marked ? [ids, tokens, marks.ids, marks.tokens] : [ids, tokens]);
  return new Set(rows.map((r) => r.token));
}

/** Records that held jobs' handlers started (no completion carried the marks soon enough). */
export async function jobMarkStarted(db: Executor, st: JobRunStatements, marks: StartMarks): Promise<void> {
  await run(db, st.mark, [marks.ids, marks.tokens]);
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
  const rows = await runReleasingKeys(db, st.fail, [id, token, o.state, o.delayMs, JSON.stringify(o.error), o.reason, o.grantAttempt]);
  return rows.length === 1;
}

/** Inside a transaction: whether this attempt still holds the job's lease (and, if so, keeps it until the transaction ends). */
export async function jobFence(tx: Executor, st: JobRunStatements, id: string, token: string): Promise<boolean> {
  return (await run(tx, st.fence, [id, token])).length === 1;
}

/** Stores the handler's latest progress; false when the lease was no longer held. */
export async function jobProgress(db: Executor, st: JobRunStatements, id: string, token: string, json: string): Promise<boolean> {
  return (await run(db, st.progress, [id, token, json])).length === 1;
}

/** Extends leases; returns the lease tokens still held. */
export async function jobHeartbeat(
  db: Executor,
  st: JobRunStatements,
  ids: string[],
  tokens: string[],
  leaseMs: number,
): Promise<Set<string>> {
  const rows = await run<{ token: string }>(db, st.heartbeat, [ids, tokens, leaseMs]);
  return new Set(rows.map((r) => r.token));
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
  return runReleasingKeys(db, st.release, [
    rows.map((r) => r.id),
    rows.map((r) => r.token),
    rows.map((r) => r.started),
    rows.map((r) => JSON.stringify(r.error)),
    channel,
  ]);
}
