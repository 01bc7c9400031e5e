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
  /**
   * Record the start before the handler runs, as for an at-most-once job: the job's lease expired
   * with no start recorded {@link UNSTARTED_RESCUES} times already (see {@link SUSPECT}).
   */
  start_first: boolean;
}

/**
 * How many times a job's lease may expire with no start recorded before the worker records its
 * start before its handler runs (the claim's `start_first`). Below it the start is recorded
 * lazily (Completer), so a handler that kills its process at once leaves none: the rescuer gives
 * such an attempt back every time, and this bound is what makes that handler use up its attempts.
 */
export const UNSTARTED_RESCUES = 3;

/**
 * Whether the job `j` (a row of `jobs`, its error history as it was before this claim) is
 * suspected of killing its process before its start could be recorded: its lease expired with no
 * start recorded UNSTARTED_RESCUES times (the rescuer's entries marked `unstarted`). Such a job
 * — or one that only waited beside such a handler, unstarted, that often — has its start
 * recorded before its handler runs; a job that waited unstarted is never charged an attempt.
 * (claim_limited, migration 0011, counts the same entries and returns the count as `unstarted`.)
 */
export const SUSPECT = (j: string) => `(${j}.errors IS NOT NULL AND (SELECT count(*) FROM jsonb_array_elements(${j}.errors) e WHERE e @> '{"unstarted": true}') >= ${UNSTARTED_RESCUES})`;

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

/** The columns of a job row in `jobs` and `jobs_history` (migration 0008), in one order for both. */
export const HISTORY_COLUMNS =
  'id, kind, queue, state, priority, run_at, payload, attempt, max_attempts, at_most_once, dedupe_key, expires_at, lease_token, ' +
  'lease_owner, lease_expires_at, errors, reason, trace_context, created_at, started_at, finished_at, dedupe_scope, dedupe_given, progress';

/**
 * The completion: fenced DELETE from `jobs`, INSERT of the finished row into `jobs_history`, one
 * statement. $3 holds how long each handler had run (ms, same order as $1 and $2): a job that
 * finished before its start was marked gets `now() - ran` as its start. The join is of the
 * deleted rows with the parameters, on (id, token) — a token belongs to one claim — never of the
 * parameters with `jobs` (see FENCED).
 */
function completeToHistory(s: string, more: string): string {
  return `
WITH ${more}done AS (
  DELETE FROM ${s}.jobs j WHERE ${FENCED}
  RETURNING j.*
), kept AS (
  INSERT INTO ${s}.jobs_history (${HISTORY_COLUMNS})
  SELECT d.id, kind, queue, 'completed', priority, run_at, payload, attempt, max_attempts, at_most_once, dedupe_key, expires_at, lease_token,
         NULL, NULL, errors, reason, trace_context, created_at, coalesce(started_at, now() - coalesce(r.ran, 0) * interval '1 millisecond'), now(),
         dedupe_scope, dedupe_given, progress
  FROM done d LEFT JOIN unnest($1::bigint[], $2::bigint[], $3::float8[]) AS r(id, token, ran) ON r.id = d.id AND r.token = d.lease_token
)
SELECT lease_token::text AS token FROM done`;
}

/**
 * Records that handlers started (ids, tokens and how many ms ago each started, in the given
 * parameters), fenced like FENCED. `array_position` finds a row's age in a batch of at most a
 * worker's running jobs (no join on the arrays, for the reason FENCED gives).
 */
const MARK = (s: string, ids: string, tokens: string, ages: string) => `
UPDATE ${s}.jobs m SET started_at = now() - (${ages}::float8[])[array_position(${ids}::bigint[], m.id)] * interval '1 millisecond'
WHERE m.id = ANY(${ids}::bigint[]) AND m.lease_token = ANY(${tokens}::bigint[]) AND m.state = 'running' AND m.started_at IS NULL`;

/** A row naming a job by id. */
type IdRow = { id: string };
/** A row naming the lease token a fenced write matched. */
type TokenRow = { token: string };
/** Ids in $1 and their lease tokens in $2, in the same order. */
type Pairs = [ids: readonly string[], tokens: readonly string[]];
/** Start marks: ids, tokens and ages in ms (see MARK). */
type MarkTriples = [ids: readonly string[], tokens: readonly string[], agesMs: readonly number[]];
/** Pairs, and start marks in $3, $4 and $5 (see MARK). */
type MarkedPairs = [ids: readonly string[], tokens: readonly string[], markIds: readonly string[], markTokens: readonly string[], markAgesMs: readonly number[]];
/** Pairs and each handler's run time in ms ($3, see completeToHistory). */
type RanPairs = [ids: readonly string[], tokens: readonly string[], ranMs: readonly number[]];
/** RanPairs, and start marks in $4, $5 and $6 (see MARK). */
type MarkedRanPairs = [ids: readonly string[], tokens: readonly string[], ranMs: readonly number[], markIds: readonly string[], markTokens: readonly string[], markAgesMs: readonly number[]];

/** The worker's statements of one schema: the hot path, every write fenced by the lease token. */
export function jobRunStatements(set: StatementSet) {
  return {
    // The inner SELECT walks jobs_claim in order (queue = $1, then priority, run_at, id) and skips
    // rows other workers hold. A job past its deadline is claimed only to be marked expired, in the
    // same statement, so it is never handed to a handler. The paused check is an InitPlan (run once).
    // The UPDATE finds the picked rows through `id = ANY (ARRAY(...))`, a primary-key index scan:
    // joining the CTE instead let the generic plan (which guesses the LIMIT at 10 % of the table)
    // hash-join a sequential scan of every row, finished ones included.
    // started_at records that a handler started, so the claim leaves it empty: the worker records
    // each start itself (Completer start marks, batched with completions; an at-most-once job
    // before its handler runs, jobStart). A process killed after the claim committed and before a
    // handler ran — its reply in flight, or frozen and then killed — leaves started_at NULL, and
    // the rescuer gives that attempt back (issue 11, bug 3). A job that expires in the claim
    // keeps the start it had.
    claim: set.named<ClaimedRow, [queue: string, kinds: readonly string[], limit: number, owner: string, leaseMs: number]>(
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
  started_at = CASE WHEN j.expires_at <= now() THEN j.started_at END,
  finished_at = CASE WHEN j.expires_at <= now() THEN now() END,
  reason = CASE WHEN j.expires_at <= now() THEN 'not started before its deadline ' || j.expires_at::text ELSE j.reason END
WHERE j.id = ANY (ARRAY(SELECT id FROM picked))
RETURNING j.id::text, j.kind, j.queue, j.state, j.payload, j.attempt, j.max_attempts, j.at_most_once,
          j.lease_token::text, j.trace_context, (extract(epoch FROM now() - j.run_at) * 1000)::float8 AS waited_ms, j.priority,
          (extract(epoch FROM j.expires_at - now()) * 1000)::float8 AS expires_in_ms, ${SUSPECT('j')} AS start_first`,
    ),
    // The start of at-most-once handlers (and of a job suspected of killing its process, SUSPECT),
    // recorded (and committed) before they run: from then on a lost lease means "may have acted"
    // and an at-most-once job is abandoned rather than re-run (an at-least-once one is charged).
    start: set.named<TokenRow, Pairs>(
      'job_start',
      (s) => `
UPDATE ${s}.jobs j SET started_at = now()
WHERE ${FENCED}
RETURNING j.lease_token::text AS token`,
    ),
    // A job claimed ahead of a free slot whose deadline passed before a slot freed: expired, its
    // attempt given back (it never ran).
    expireHeld: set.named<IdRow, [id: string, token: string]>(
      'job_expire_held',
      (s) => `
UPDATE ${s}.jobs SET state = 'expired', attempt = greatest(attempt - 1, 0), finished_at = now(),
  reason = 'not started before its deadline ' || expires_at::text, lease_owner = NULL, lease_expires_at = NULL
WHERE id = $1 AND lease_token = $2 AND state = 'running'
RETURNING id::text`,
    ),
    // Batched completion: (id, token) pairs; a pair whose token is stale matches nothing and is
    // reported back as refused. The row leaves `jobs` for the history (migration 0008) in the same
    // statement: the table that claims and completes work holds only unfinished jobs, however much
    // history is kept (bench/NOTES.md: retained history). A DELETE writes no new row version and no
    // index entries in `jobs`; the history insert lands at the end of today's partition, with one
    // entry in its id index. A job that started from the worker's held jobs and finishes before its
    // start mark was written gets its start here (within one batch of the truth).
    complete: set.named<TokenRow, RanPairs>('job_complete', (s) => completeToHistory(s, '')),
    // The same, carrying the start marks of other jobs ($3 ids, $4 tokens: held jobs whose handler
    // started since the last write) in the same statement, so recording starts costs no round trip.
    // The two sets are disjoint (the worker leaves a job that completes out of the marks).
    completeMarked: set.named<TokenRow, MarkedRanPairs>('job_complete_marked', (s) => completeToHistory(s, `marked AS (${MARK(s, '$4', '$5', '$6')}), `)),
    // With completed jobs kept for no time (retention.completed = 0): the completion deletes the
    // row, fenced the same way. A DELETE writes no new row version and no index entries.
    completeDelete: set.named<TokenRow, Pairs>(
      'job_complete_delete',
      (s) => `
DELETE FROM ${s}.jobs j
WHERE ${FENCED}
RETURNING j.lease_token::text AS token`,
    ),
    completeDeleteMarked: set.named<TokenRow, MarkedPairs>(
      'job_complete_delete_marked',
      (s) => `
WITH marked AS (${MARK(s, '$3', '$4', '$5')})
DELETE FROM ${s}.jobs j
WHERE ${FENCED}
RETURNING j.lease_token::text AS token`,
    ),
    // Start marks alone, when no completion carried them soon enough.
    mark: set.named<never, MarkTriples>('job_mark_started', (s) => MARK(s, '$1', '$2', '$3')),
    // One failed attempt: back to available after a delay, or held, or discarded. Fenced by token.
    fail: set.named<IdRow, [id: string, token: string, state: FailOutcome['state'], delayMs: number, error: string, reason: string | null, grantAttempt: boolean]>(
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
    fence: set.named<{ held: number }, [id: string, token: string]>('job_fence', (s) => `SELECT 1 AS held FROM ${s}.jobs WHERE id = $1 AND lease_token = $2 AND state = 'running' FOR UPDATE`),
    // When the next job of a queue is due, after a claim came back short — so a worker whose
    // listener just (re)connected, and missed the notifications that carry due times, still claims
    // a delayed job when it is due. Two answers, each from the first 100 available jobs in claim
    // order (served by jobs_claim, run_at checked in the index): the earliest not yet due, however
    // many due ones a limit holds back before it; and whether one is due now — it fell due after
    // the claim was sent, or a limit passed it over (then claiming again finds nothing, once). No
    // clock but the database's is compared. Exact for a queue of one priority; with several, a
    // lower-priority job may be left to the poll.
    nextDue: set.named<{ due_in_ms: number | null; due_now: boolean }, [queue: string, kinds: readonly string[]]>(
      'job_next_due',
      (s) => `SELECT
  (SELECT (extract(epoch FROM min(f.run_at) - now()) * 1000)::float8 FROM (
    SELECT run_at FROM ${s}.jobs WHERE state = 'available' AND queue = $1 AND kind = ANY($2::text[]) AND run_at > now()
    ORDER BY priority, run_at, id LIMIT 100
  ) f) AS due_in_ms,
  (SELECT coalesce(bool_or(d.run_at <= now()), false) FROM (
    SELECT run_at FROM ${s}.jobs WHERE state = 'available' AND queue = $1 AND kind = ANY($2::text[])
    ORDER BY priority, run_at, id LIMIT 100
  ) d) AS due_now`,
    ),
    // The latest progress a handler reported (ctx.progress), fenced like every write of the attempt.
    progress: set.named<IdRow, [id: string, token: string, json: string]>(
      'job_progress',
      (s) => `UPDATE ${s}.jobs SET progress = $3::jsonb WHERE id = $1 AND lease_token = $2 AND state = 'running' RETURNING id::text`,
    ),
    heartbeat: set.named<TokenRow, [ids: readonly string[], tokens: readonly string[], leaseMs: number]>(
      'job_heartbeat',
      (s) => `
UPDATE ${s}.jobs j SET lease_expires_at = now() + $3::float8 * interval '1 millisecond'
WHERE ${FENCED}
RETURNING j.lease_token::text AS token`,
    ),
    // Shutdown: hand jobs back at once. A job whose handler never started gets its attempt back;
    // an at-most-once job whose handler did start may have acted, so it is abandoned, not re-run.
    release: set.named<{ id: string; state: string; notified: boolean }, [ids: string[], tokens: string[], started: boolean[], errors: string[], channel: string]>(
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

/** Jobs whose handlers started, to record with the next write: ids, tokens and how long ago each started (ms), in the same order. */
export interface StartMarks {
  ids: string[];
  tokens: string[];
  agesMs: number[];
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

/** A job handed back at shutdown. */
export interface ReleaseRow {
  id: string;
  token: string;
  started: boolean;
  error: JobErrorEntry;
}

/** What {@link JobRunQueries.claim} takes. */
export interface ClaimParams {
  queue: string;
  kinds: readonly string[];
  /** Jobs to claim at most. */
  limit: number;
  /** The lease's owner (the worker). */
  owner: string;
  leaseMs: number;
}

/** Ids and lease tokens of claimed jobs, in the same order. */
export interface Leases {
  ids: readonly string[];
  tokens: readonly string[];
}

/**
 * The worker's statements bound to the schema's pool: what a claimed job's life writes, each
 * write fenced by the claim's lease token. Writes that may run in a caller's transaction take it
 * as `tx`.
 */
export class JobRunQueries {
  /** The statements themselves, for diagnostics that run them by hand (bench/). */
  readonly statements: JobRunStatements;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
    private readonly jobsChannel: string,
  ) {
    this.statements = jobRunStatements(set);
  }

  /**
   * Claims up to `limit` jobs of `kinds` from `queue` under a lease owned by `owner`. None is
   * recorded as started: the worker records each start when its handler runs.
   */
  claim(p: ClaimParams): Promise<ClaimedRow[]> {
    return run(this.db, this.statements.claim, [p.queue, p.kinds, p.limit, p.owner, p.leaseMs]);
  }

  /** Records that the handlers of these claimed jobs start now; returns the lease tokens that still held. */
  async start(p: Leases): Promise<Set<string>> {
    const rows = await run(this.db, this.statements.start, [p.ids, p.tokens]);
    return new Set(rows.map((r) => r.token));
  }

  /** Expires a claimed job that never started; false when the token was stale. */
  async expireHeld(p: { id: string; token: string }): Promise<boolean> {
    return (await run(this.db, this.statements.expireHeld, [p.id, p.token])).length === 1;
  }

  /**
   * Completes jobs (or deletes them, with `remove`), recording `marks` in the same statement;
   * `ranMs` says how long each handler ran (the start of a job no mark recorded). Returns the
   * lease tokens that still held (the others were refused).
   */
  async complete(p: Leases & { ranMs: readonly number[]; remove?: boolean; marks?: StartMarks }): Promise<Set<string>> {
    const st = this.statements;
    const m = p.marks !== undefined && p.marks.ids.length > 0 ? p.marks : undefined;
    let rows: TokenRow[];
    if (p.remove) rows = m ? await run(this.db, st.completeDeleteMarked, [p.ids, p.tokens, m.ids, m.tokens, m.agesMs]) : await run(this.db, st.completeDelete, [p.ids, p.tokens]);
    else rows = m ? await run(this.db, st.completeMarked, [p.ids, p.tokens, p.ranMs, m.ids, m.tokens, m.agesMs]) : await run(this.db, st.complete, [p.ids, p.tokens, p.ranMs]);
    return new Set(rows.map((r) => r.token));
  }

  /** Records that handlers started (no completion carried the marks soon enough). */
  async markStarted(marks: StartMarks): Promise<void> {
    await run(this.db, this.statements.mark, [marks.ids, marks.tokens, marks.agesMs]);
  }

  /** Records a failed attempt; false when the token was stale (the write was refused). */
  async fail(p: { id: string; token: string; outcome: FailOutcome }): Promise<boolean> {
    const o = p.outcome;
    const rows = await runReleasingKeys(this.db, this.statements.fail, [p.id, p.token, o.state, o.delayMs, JSON.stringify(o.error), o.reason, o.grantAttempt]);
    return rows.length === 1;
  }

  /** Inside the transaction `tx`: whether this attempt still holds the job's lease (and, if so, keeps it until the transaction ends). */
  async fence(p: { tx: Executor; id: string; token: string }): Promise<boolean> {
    return (await run(p.tx, this.statements.fence, [p.id, p.token])).length === 1;
  }

  /** Milliseconds until the next job of `queue` is due (see the statement), or null when none is known. */
  async nextDue(p: { queue: string; kinds: readonly string[] }): Promise<{ dueInMs: number | null; dueNow: boolean }> {
    const [row] = await run(this.db, this.statements.nextDue, [p.queue, p.kinds]);
    return { dueInMs: row?.due_in_ms ?? null, dueNow: row?.due_now ?? false };
  }

  /** Stores the handler's latest progress (JSON text); false when the lease was no longer held. */
  async progress(p: { id: string; token: string; json: string }): Promise<boolean> {
    return (await run(this.db, this.statements.progress, [p.id, p.token, p.json])).length === 1;
  }

  /** Extends leases by `leaseMs`; returns the lease tokens still held. */
  async heartbeat(p: Leases & { leaseMs: number }): Promise<Set<string>> {
    const rows = await run(this.db, this.statements.heartbeat, [p.ids, p.tokens, p.leaseMs]);
    return new Set(rows.map((r) => r.token));
  }

  /** Hands jobs back at shutdown and wakes other workers; returns each job's new state. */
  release(rows: readonly ReleaseRow[]): Promise<{ id: string; state: string }[]> {
    return runReleasingKeys(this.db, this.statements.release, [rows.map((r) => r.id), rows.map((r) => r.token), rows.map((r) => r.started), rows.map((r) => JSON.stringify(r.error)), this.jobsChannel]);
  }
}
