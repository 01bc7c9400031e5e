import { activeKeyTaken, keyRelease, runReleasingKeys } from './dedupe-sql.js';
import { run, type Executor } from './executor.js';
import { JOB_COLUMNS, toJobRecord, type JobRecord, type JobRow, type JobState } from './job-row.js';
import { HISTORY_COLUMNS } from './jobs-run.js';
import type { StatementSet } from './statements.js';

/** Filters for listing jobs; every field is optional. */
export interface JobFilter {
  kind?: string;
  queue?: string;
  states?: JobState[];
  /** Only jobs with a smaller id (the cursor of the previous page). */
  beforeId?: string;
  ids?: string[];
}

/** A manual state change: which states it applies to, and what it sets. */
export type AdminAction = 'retry' | 'cancel' | 'resolve-completed' | 'resolve-failed' | 'resolve-retry' | 'run-now';

/** The states each admin action applies to. */
export const ADMIN_FROM: Record<AdminAction, readonly JobState[]> = {
  retry: ['discarded', 'cancelled', 'expired', 'abandoned', 'held', 'completed'],
  cancel: ['available', 'running', 'held', 'abandoned'],
  'resolve-completed': ['held', 'abandoned'],
  'resolve-failed': ['held', 'abandoned'],
  'resolve-retry': ['held', 'abandoned'],
  // A pending job only: one due later (runAt, delayMs, a retry's back-off) or debounced.
  'run-now': ['available'],
};

const FILTER = `($1::text IS NULL OR kind = $1) AND ($2::text IS NULL OR queue = $2)
  AND ($3::text[] IS NULL OR state::text = ANY($3)) AND ($4::bigint IS NULL OR id < $4)
  AND ($5::bigint[] IS NULL OR id = ANY($5))`;

/** The parameters of FILTER: $1 to $5. */
type FilterParams = [kind: string | null, queue: string | null, states: readonly JobState[] | null, beforeId: string | null, ids: readonly string[] | null];

function filterValues(f: JobFilter): FilterParams {
  return [f.kind ?? null, f.queue ?? null, f.states ?? null, f.beforeId ?? null, f.ids ?? null];
}

/** The parameters of an admin action's statement (see `change`). */
type ChangeParams = [...FilterParams, actor: string, reason: string | null, limit: number, jobsChannel: string, from: readonly JobState[], controlChannel: string];

/** Admin statements of one schema. Each state change writes its audit row in the same statement. */
export function jobAdminStatements(set: StatementSet) {
  // One statement per action: pick the matching jobs, change them, write one audit row per job,
  // and wake workers when jobs became available, or tell the holder of a job taken from it to abort.
  // $6 actor, $7 reason, $8 limit, $9 jobs channel, $10 states the action applies to, $11 control channel.
  // A retry makes jobs available again: a pending-scope key taken meanwhile is given up (both run),
  // an active-scope one taken meanwhile leaves the job where it is (see dedupe-sql.ts).
  const change = (action: AdminAction, assignments: string, toAvailable = false) =>
    set.plain<ChangedRow, ChangeParams>(
      (s) => `
WITH target AS (
  SELECT id, state AS old_state, lease_owner FROM ${s}.jobs t
  WHERE ${FILTER} AND state::text = ANY($10::text[])${toAvailable ? ` AND NOT ${activeKeyTaken(s, 't')}` : ''}
  ORDER BY id LIMIT $8 FOR UPDATE
), upd AS (
  UPDATE ${s}.jobs j SET ${assignments}${toAvailable ? `, ${keyRelease(s, 'j', 'true')}` : ''}
  FROM target WHERE j.id = target.id
  RETURNING ${JOB_COLUMNS.split(', ')
    .map((c) => `j.${c}`)
    .join(', ')}, target.old_state
), audit AS (
  INSERT INTO ${s}.audit_log (actor, action, target, reason, details)
  SELECT $6, '${action}', 'job:' || upd.id, $7, jsonb_build_object('kind', upd.kind, 'from', upd.old_state, 'to', upd.state)
  FROM upd
)
SELECT upd.*,
       CASE WHEN upd.state = 'available' THEN pg_notify($9, upd.queue)
            WHEN upd.old_state = 'running' THEN pg_notify($11, 'cancel:' || upd.id) END AS notified
FROM upd ORDER BY upd.id`,
    );
  return {
    // Live jobs and the history (migration 0008), newest first: each side gives its newest matches
    // (the history's by its id index, partitions pruned by the state filter), then the merge.
    list: set.plain<JobRow, [...FilterParams, limit: number]>(
      (s) => `SELECT * FROM (
  (SELECT ${JOB_COLUMNS} FROM ${s}.jobs WHERE ${FILTER} ORDER BY id DESC LIMIT $6)
  UNION ALL
  (SELECT ${JOB_COLUMNS} FROM ${s}.jobs_history WHERE ${FILTER} ORDER BY id DESC LIMIT $6)
) a ORDER BY id DESC LIMIT $6`,
    ),
    count: set.plain<{ n: number }, [...FilterParams, states: readonly string[]]>(
      (s) => `SELECT ((SELECT count(*) FROM ${s}.jobs WHERE ${FILTER} AND state::text = ANY($6::text[]))
        + (SELECT count(*) FROM ${s}.jobs_history WHERE ${FILTER} AND state::text = ANY($6::text[])))::int AS n`,
    ),
    get: set.plain<JobRow, [id: string]>((s) => `(SELECT ${JOB_COLUMNS} FROM ${s}.jobs WHERE id = $1) UNION ALL (SELECT ${JOB_COLUMNS} FROM ${s}.jobs_history WHERE id = $1) LIMIT 1`),
    // A retry of finished jobs brings them back from the history into `jobs` first (where the
    // retry statement then finds them), up to $7, lowest ids first like the retry itself.
    restore: set.plain<{ n: number }, [...FilterParams, states: readonly string[], limit: number]>(
      (s) => `
WITH pick AS (
  SELECT id, state, finished_at FROM ${s}.jobs_history WHERE ${FILTER} AND state::text = ANY($6::text[]) ORDER BY id LIMIT $7
), back AS (
  DELETE FROM ${s}.jobs_history h USING pick WHERE h.id = pick.id AND h.state = pick.state AND h.finished_at = pick.finished_at
  RETURNING h.*
), restored AS (
  INSERT INTO ${s}.jobs (${HISTORY_COLUMNS}) SELECT ${HISTORY_COLUMNS} FROM back
)
SELECT count(*)::int AS n FROM back`,
    ),
    retry: change(
      'retry',
      `state = 'available', run_at = now(), finished_at = NULL, reason = NULL,
       max_attempts = greatest(j.max_attempts, j.attempt + 1)`,
      true,
    ),
    cancel: change(
      'cancel',
      `state = 'cancelled', finished_at = now(), reason = coalesce('cancelled: ' || $7, 'cancelled'),
       lease_owner = NULL, lease_expires_at = NULL`,
    ),
    'resolve-completed': change('resolve-completed', `state = 'completed', finished_at = now(), reason = coalesce('resolved as completed: ' || $7, 'resolved as completed')`),
    'resolve-failed': change('resolve-failed', `state = 'discarded', finished_at = now(), reason = coalesce('resolved as failed: ' || $7, 'resolved as failed')`),
    'resolve-retry': change(
      'resolve-retry',
      `state = 'available', run_at = now(), finished_at = NULL, reason = NULL,
       max_attempts = greatest(j.max_attempts, j.attempt + 1)`,
      true,
    ),
    // The job holding an active-scope key that `$1` also has, if any.
    keyHolder: set.plain<{ id: string }, [id: string]>(
      (s) => `SELECT o.id::text FROM ${s}.jobs j JOIN ${s}.jobs o ON o.kind = j.kind AND o.dedupe_key = j.dedupe_key
        AND o.state IN ('available', 'running') AND o.id <> j.id
        WHERE j.id = $1 AND j.dedupe_scope = 'active' LIMIT 1`,
    ),
    // Never later than it was: a job already due keeps its place in the queue's order.
    'run-now': change('run-now', `run_at = least(j.run_at, now())`),
    // The CLI's enqueue: who enqueued which job of which kind — never the payload.
    auditEnqueue: set.plain<never, [actor: string, jobId: string, reason: string | null, kind: string, deduped: boolean]>(
      (s) => `INSERT INTO ${s}.audit_log (actor, action, target, reason, details)
        VALUES ($1, 'enqueue', 'job:' || $2::bigint, $3, jsonb_build_object('kind', $4::text, 'deduped', $5::boolean))`,
    ),
    // Unfinished jobs only: the partial indexes serve it, and it stays cheap however many finished
    // jobs are kept (metrics scrape it every few seconds).
    depth: set.plain<DepthRow, []>(
      (s) => `SELECT queue, CASE WHEN state = 'available' AND run_at > now() THEN 'scheduled' ELSE state::text END AS state,
        count(*)::int AS count,
        extract(epoch FROM now() - min(run_at) FILTER (WHERE state = 'available' AND run_at <= now()))::float8 AS oldest_available_seconds
      FROM ${s}.jobs WHERE state IN ('available', 'running', 'held', 'abandoned') GROUP BY 1, 2`,
    ),
    stats: set.plain<StatsRow, []>(
      (s) => `SELECT queue, kind, state::text AS state, count(*)::int AS count,
        min(run_at) FILTER (WHERE state = 'available' AND run_at <= now()) AS oldest_available
      FROM (SELECT queue, kind, state, run_at FROM ${s}.jobs UNION ALL SELECT queue, kind, state, run_at FROM ${s}.jobs_history) j
      GROUP BY queue, kind, state ORDER BY queue, kind, state`,
    ),
  };
}
export type JobAdminStatements = ReturnType<typeof jobAdminStatements>;

/** A job changed by an admin action, as it was right after the change. */
export interface ChangedRow extends JobRow {
  old_state: JobState;
}

/** Counts per queue, kind and state, as stored. */
interface StatsRow {
  queue: string;
  kind: string;
  state: JobState;
  count: number;
  oldest_available: Date | null;
}

/** Job counts per queue, kind and state, as `stats()` and `nightshift stats` show them. */
export interface StatsRecord {
  queue: string;
  kind: string;
  state: JobState;
  count: number;
  /** When the job of this queue and kind waiting longest became due (available jobs only), or null. */
  oldestAvailable: Date | null;
}

/** Unfinished jobs per queue and state, as stored. */
interface DepthRow {
  queue: string;
  state: string;
  count: number;
  oldest_available_seconds: number | null;
}

/** Unfinished jobs per queue and state (`scheduled` for available jobs due later), for the metrics. */
export interface QueueDepth {
  queue: string;
  state: string;
  count: number;
  /** How long the job waiting longest has been due, in seconds; null when none is due. */
  oldestAvailableSeconds: number | null;
}

/** Who does an admin action and why. */
export interface Who {
  actor: string;
  reason: string | null;
}

/**
 * The operator's statements bound to the schema's pool. Every state change writes its audit row
 * in the same statement; `db` runs one in the caller's transaction (onResolve, the CLI's audited
 * enqueue).
 */
export class JobAdminQueries {
  private readonly st: JobAdminStatements;

  constructor(
    private readonly pool: Executor,
    set: StatementSet,
    private readonly channels: { jobs: string; control: string },
  ) {
    this.st = jobAdminStatements(set);
  }

  /** Lists jobs, newest first; `db` reads through the caller's transaction. */
  async list(p: { filter: JobFilter; limit: number; db?: Executor }): Promise<JobRecord[]> {
    const rows = await run(p.db ?? this.pool, this.st.list, [...filterValues(p.filter), p.limit]);
    return rows.map(toJobRecord);
  }

  /** Counts jobs matching a filter and in one of `states`. */
  async count(p: { filter: JobFilter; states: readonly string[] }): Promise<number> {
    const [row] = await run(this.pool, this.st.count, [...filterValues(p.filter), p.states]);
    return row?.n ?? 0;
  }

  /** One job, or undefined. */
  async get(id: string): Promise<JobRecord | undefined> {
    const [row] = await run(this.pool, this.st.get, [id]);
    return row ? toJobRecord(row) : undefined;
  }

  /** Brings up to `limit` jobs matching `filter` and in one of `states` back from the history into `jobs`; returns how many. */
  async restore(p: { filter: JobFilter; states: readonly JobState[]; limit: number; db?: Executor }): Promise<number> {
    const [row] = await run(p.db ?? this.pool, this.st.restore, [...filterValues(p.filter), p.states, p.limit]);
    return row?.n ?? 0;
  }

  /** Applies an admin action to the jobs matching `filter` (at most `limit`), with one audit row each. */
  change(p: { action: AdminAction; filter: JobFilter; who: Who; limit: number; db?: Executor }): Promise<ChangedRow[]> {
    return runReleasingKeys(p.db ?? this.pool, this.st[p.action], [...filterValues(p.filter), p.who.actor, p.who.reason, p.limit, this.channels.jobs, ADMIN_FROM[p.action], this.channels.control]);
  }

  /** The job holding the active-scope dedupe key of job `id`, if another one does. */
  async keyHolder(id: string): Promise<string | undefined> {
    const [row] = await run(this.pool, this.st.keyHolder, [id]);
    return row?.id;
  }

  /** Writes the audit entry of an enqueue (actor, job, kind, whether it was deduped; no payload), in `db`'s transaction when given. */
  async auditEnqueue(p: { who: Who; job: { id: string; kind: string; deduped: boolean }; db?: Executor }): Promise<void> {
    await run(p.db ?? this.pool, this.st.auditEnqueue, [p.who.actor, p.job.id, p.who.reason, p.job.kind, p.job.deduped]);
  }

  /** Job counts per queue, kind and state, with the oldest runnable job's time. */
  async stats(): Promise<StatsRecord[]> {
    const rows = await run(this.pool, this.st.stats, []);
    return rows.map((r) => ({ queue: r.queue, kind: r.kind, state: r.state, count: r.count, oldestAvailable: r.oldest_available }));
  }

  /** Unfinished jobs per queue and state (cheap: served by the partial indexes). */
  async depth(): Promise<QueueDepth[]> {
    const rows = await run(this.pool, this.st.depth, []);
    return rows.map((r) => ({ queue: r.queue, state: r.state, count: r.count, oldestAvailableSeconds: r.oldest_available_seconds }));
  }
}
