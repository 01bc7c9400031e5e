import { run, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** A run's state. */
export type PipelineRunState = 'running' | 'succeeded' | 'failed' | 'cancelled' | 'held';

/** A pipeline run as stored. */
export interface RunRow {
  id: string;
  pipeline: string;
  key: string;
  dry_run: boolean;
  state: PipelineRunState;
  generation: number;
  input: unknown;
  graph: unknown;
  reason: string | null;
  error: Record<string, unknown> | null;
  warnings: number;
  trace_context: Record<string, string> | null;
  started_by: string | null;
  deadline_at: Date | null;
  deadline_missed_at: Date | null;
  created_at: Date;
  updated_at: Date;
  finished_at: Date | null;
  artifacts_published_at: Date | null;
}

/** A run as listed, with its steps' progress. */
export interface RunListRow extends Omit<RunRow, 'graph' | 'input' | 'trace_context'> {
  steps_total: number;
  steps_done: number;
}

const COLUMNS = `r.id::text, r.pipeline, r.key, r.dry_run, r.state, r.generation, r.input, r.graph, r.reason, r.error, r.warnings,
  r.trace_context, r.started_by, r.deadline_at, r.deadline_missed_at, r.created_at, r.updated_at, r.finished_at, r.artifacts_published_at`;

/** What a new run is started with. */
export interface RunInsert {
  pipeline: string;
  key: string;
  dryRun: boolean;
  /** The input as JSON text, or null. */
  input: string | null;
  /** The frozen graph as JSON text. */
  graph: string;
  traceContext: string | null;
  startedBy: string | null;
  /** ms from now (database clock), or null for no deadline. */
  deadlineMs: number | null;
}

/** Statements of `pipeline_runs`. */
export function pipelineRunStatements(set: StatementSet) {
  // ON CONFLICT … DO UPDATE (a no-op assignment) rather than DO NOTHING: DO NOTHING returns no row
  // when the conflicting run was committed after this statement's snapshot (two starts racing),
  // and a follow-up SELECT in the same snapshot would not see it either. DO UPDATE locks and
  // returns the row that holds the key, whoever committed it. xmax = 0 only on a row this
  // statement inserted.
  const insert = (conflict: string) =>
    set.plain<RunRow & { created: boolean }>(
      (s) => `
INSERT INTO ${s}.pipeline_runs AS r (pipeline, key, dry_run, input, graph, trace_context, started_by, deadline_at)
VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, $6::jsonb, $7, now() + $8::float8 * interval '1 millisecond')
ON CONFLICT ${conflict} DO UPDATE SET key = EXCLUDED.key
RETURNING ${COLUMNS}, (r.xmax = 0) AS created`,
    );
  return {
    startLive: insert(`(pipeline, key) WHERE NOT dry_run`),
    startDry: insert(`(pipeline, key) WHERE dry_run AND state IN ('running', 'held')`),
    // Every transition of a run or its steps takes this lock first (then job rows): transitions of
    // one run are serialised, and readiness can be decided from the steps' states.
    lock: set.plain<RunRow>((s) => `SELECT ${COLUMNS} FROM ${s}.pipeline_runs r WHERE r.id = $1 FOR UPDATE`),
    get: set.plain<RunRow>((s) => `SELECT ${COLUMNS} FROM ${s}.pipeline_runs r WHERE r.id = $1`),
    // A reader that must not see a publication half-done (verify) waits for its lock.
    share: set.plain<RunRow>((s) => `SELECT ${COLUMNS} FROM ${s}.pipeline_runs r WHERE r.id = $1 FOR SHARE`),
    // The live run of a key, else (or with $3) its newest dry run.
    find: set.plain<RunRow>(
      (s) => `SELECT ${COLUMNS} FROM ${s}.pipeline_runs r WHERE r.pipeline = $1 AND r.key = $2 AND ($3::boolean IS NULL OR r.dry_run = $3)
        ORDER BY r.dry_run, r.id DESC LIMIT 1`,
    ),
    list: set.plain<RunListRow>(
      (s) => `
SELECT r.id::text, r.pipeline, r.key, r.dry_run, r.state, r.generation, r.reason, r.error, r.warnings, r.started_by,
  r.deadline_at, r.deadline_missed_at, r.created_at, r.updated_at, r.finished_at, r.artifacts_published_at,
  (SELECT count(*)::int FROM ${s}.pipeline_steps s WHERE s.run_id = r.id AND s.item = '') AS steps_total,
  (SELECT count(*)::int FROM ${s}.pipeline_steps s WHERE s.run_id = r.id AND s.item = '' AND s.state IN ('succeeded', 'failed', 'skipped', 'cancelled')) AS steps_done
FROM ${s}.pipeline_runs r
WHERE ($1::text IS NULL OR r.pipeline = $1) AND ($2::text[] IS NULL OR r.state = ANY($2)) AND ($3::text IS NULL OR r.key = $3)
  AND ($4::boolean IS NULL OR r.dry_run = $4) AND ($5::bigint IS NULL OR r.id < $5) AND ($7::bigint IS NULL OR r.id = $7)
ORDER BY r.id DESC LIMIT $6`,
    ),
    // A run's end: state, reason and error, warnings counted from its failed optional steps ($5).
    finish: set.plain(
      (s) => `UPDATE ${s}.pipeline_runs SET state = $2, reason = $3, error = $4::jsonb, warnings = $5, finished_at = now(), updated_at = now()
        WHERE id = $1 AND state IN ('running', 'held') RETURNING id::text, finished_at`,
    ),
    hold: set.plain(
      (s) => `UPDATE ${s}.pipeline_runs SET state = 'held', reason = $2, updated_at = now() WHERE id = $1 AND state = 'running' RETURNING id::text`,
    ),
    // Rerun and restart: back to running ($2 the new generation, $3 whether the deadline restarts).
    resume: set.plain(
      (s) => `
UPDATE ${s}.pipeline_runs SET state = 'running', generation = $2, reason = NULL, error = NULL, warnings = 0, finished_at = NULL,
  artifacts_published_at = NULL, updated_at = now(),
  deadline_at = CASE WHEN $3::float8 IS NULL THEN deadline_at ELSE now() + $3::float8 * interval '1 millisecond' END,
  deadline_missed_at = CASE WHEN $3::float8 IS NULL THEN deadline_missed_at END
WHERE id = $1 RETURNING id::text`,
    ),
    published: set.plain((s) => `UPDATE ${s}.pipeline_runs SET artifacts_published_at = now() WHERE id = $1 AND finished_at IS NOT NULL AND artifacts_published_at IS NULL`),
    remove: set.plain((s) => `DELETE FROM ${s}.pipeline_runs WHERE id = ANY($1::bigint[])`),
    audit: set.plain(
      (s) => `INSERT INTO ${s}.audit_log (actor, action, target, reason, details) VALUES ($1, $2, 'pipeline:' || $3 || ':' || $4, $5, $6::jsonb)`,
    ),
  };
}
export type PipelineRunStatements = ReturnType<typeof pipelineRunStatements>;

/** Starts a run, or returns the one that holds the key (`created` false). */
export async function pipelineRunStart(db: Executor, st: PipelineRunStatements, r: RunInsert): Promise<RunRow & { created: boolean }> {
  const [row] = await run(db, r.dryRun ? st.startDry : st.startLive, [
    r.pipeline,
    r.key,
    r.dryRun,
    r.input,
    r.graph,
    r.traceContext,
    r.startedBy,
    r.deadlineMs,
  ]);
  return row!;
}

/** Locks a run for a transition (inside a transaction); undefined when it is gone. */
export async function pipelineRunLock(tx: Executor, st: PipelineRunStatements, id: string): Promise<RunRow | undefined> {
  return (await run(tx, st.lock, [id]))[0];
}

/** A run by id, share-locked for the transaction (a publication in progress is waited for). */
export async function pipelineRunShare(tx: Executor, st: PipelineRunStatements, id: string): Promise<RunRow | undefined> {
  return (await run(tx, st.share, [id]))[0];
}

/** A run by id. */
export async function pipelineRunGet(db: Executor, st: PipelineRunStatements, id: string): Promise<RunRow | undefined> {
  return (await run(db, st.get, [id]))[0];
}

/** The live run of a key, else its newest dry run (`dryRun` narrows it to one of them). */
export async function pipelineRunFind(db: Executor, st: PipelineRunStatements, pipeline: string, key: string, dryRun: boolean | null): Promise<RunRow | undefined> {
  return (await run(db, st.find, [pipeline, key, dryRun]))[0];
}

/** Filters of a run listing. */
export interface RunFilter {
  pipeline: string | null;
  states: string[] | null;
  key: string | null;
  dryRun: boolean | null;
  beforeId: string | null;
  /** One run by id. */
  id?: string | null;
}

/** Runs, newest first. */
export function pipelineRunList(db: Executor, st: PipelineRunStatements, f: RunFilter, limit: number): Promise<RunListRow[]> {
  return run(db, st.list, [f.pipeline, f.states, f.key, f.dryRun, f.beforeId, limit, f.id ?? null]);
}

/** Ends a running (or held) run; false when it had ended already. */
export async function pipelineRunFinish(
  tx: Executor,
  st: PipelineRunStatements,
  id: string,
  end: { state: 'succeeded' | 'failed' | 'cancelled'; reason: string | null; error: unknown; warnings: number },
): Promise<boolean> {
  const rows = await run(tx, st.finish, [id, end.state, end.reason, end.error === null || end.error === undefined ? null : JSON.stringify(end.error), end.warnings]);
  return rows.length === 1;
}

/** Holds a running run with its reason; false when it was not running. */
export async function pipelineRunHold(tx: Executor, st: PipelineRunStatements, id: string, reason: string): Promise<boolean> {
  return (await run(tx, st.hold, [id, reason])).length === 1;
}

/** Puts a run back to running, at `generation`; `deadlineMs` restarts its deadline (restart), null keeps it (rerun). */
export async function pipelineRunResume(tx: Executor, st: PipelineRunStatements, id: string, generation: number, deadlineMs: number | null): Promise<void> {
  await run(tx, st.resume, [id, generation, deadlineMs]);
}

/** Records that a finished run's artifacts are published. */
export async function pipelineRunPublished(db: Executor, st: PipelineRunStatements, id: string): Promise<void> {
  await run(db, st.published, [id]);
}

/** Deletes runs (their steps, history, artifacts, blobs and follow-ups go with them). */
export async function pipelineRunRemove(db: Executor, st: PipelineRunStatements, ids: readonly string[]): Promise<void> {
  if (ids.length) await run(db, st.remove, [ids]);
}

/** Writes the audit entry of a manual action on a run (`target` pipeline:<name>:<key>). */
export async function pipelineAudit(
  db: Executor,
  st: PipelineRunStatements,
  entry: { actor: string; action: string; pipeline: string; key: string; reason: string | null; details: Record<string, unknown> },
): Promise<void> {
  await run(db, st.audit, [entry.actor, entry.action, entry.pipeline, entry.key, entry.reason, JSON.stringify(entry.details)]);
}
