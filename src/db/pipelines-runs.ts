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
    set.plain<
      RunRow & { created: boolean },
      [pipeline: string, key: string, dryRun: boolean, input: string | null, graph: string, traceContext: string | null, startedBy: string | null, deadlineMs: number | null]
    >(
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
    lock: set.plain<RunRow, [id: string]>((s) => `SELECT ${COLUMNS} FROM ${s}.pipeline_runs r WHERE r.id = $1 FOR UPDATE`),
    get: set.plain<RunRow, [id: string]>((s) => `SELECT ${COLUMNS} FROM ${s}.pipeline_runs r WHERE r.id = $1`),
    // A reader that must not see a publication half-done (verify) waits for its lock.
    share: set.plain<RunRow, [id: string]>((s) => `SELECT ${COLUMNS} FROM ${s}.pipeline_runs r WHERE r.id = $1 FOR SHARE`),
    // The live run of a key, else (or with $3) its newest dry run.
    find: set.plain<RunRow, [pipeline: string, key: string, dryRun: boolean | null]>(
      (s) => `SELECT ${COLUMNS} FROM ${s}.pipeline_runs r WHERE r.pipeline = $1 AND r.key = $2 AND ($3::boolean IS NULL OR r.dry_run = $3)
        ORDER BY r.dry_run, r.id DESC LIMIT 1`,
    ),
    list: set.plain<RunListRow, [pipeline: string | null, states: readonly string[] | null, key: string | null, dryRun: boolean | null, beforeId: string | null, limit: number, id: string | null]>(
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
    finish: set.plain<{ id: string; finished_at: Date }, [id: string, state: RunEnd['state'], reason: string | null, error: string | null, warnings: number]>(
      (s) => `UPDATE ${s}.pipeline_runs SET state = $2, reason = $3, error = $4::jsonb, warnings = $5, finished_at = now(), updated_at = now()
        WHERE id = $1 AND state IN ('running', 'held') RETURNING id::text, finished_at`,
    ),
    hold: set.plain<{ id: string }, [id: string, reason: string]>((s) => `UPDATE ${s}.pipeline_runs SET state = 'held', reason = $2, updated_at = now() WHERE id = $1 AND state = 'running' RETURNING id::text`),
    // Rerun and restart: back to running ($2 the new generation, $3 whether the deadline restarts).
    resume: set.plain<{ id: string }, [id: string, generation: number, deadlineMs: number | null]>(
      (s) => `
UPDATE ${s}.pipeline_runs SET state = 'running', generation = $2, reason = NULL, error = NULL, warnings = 0, finished_at = NULL,
  artifacts_published_at = NULL, updated_at = now(),
  deadline_at = CASE WHEN $3::float8 IS NULL THEN deadline_at ELSE now() + $3::float8 * interval '1 millisecond' END,
  deadline_missed_at = CASE WHEN $3::float8 IS NULL THEN deadline_missed_at END
WHERE id = $1 RETURNING id::text`,
    ),
    published: set.plain<never, [id: string]>((s) => `UPDATE ${s}.pipeline_runs SET artifacts_published_at = now() WHERE id = $1 AND finished_at IS NOT NULL AND artifacts_published_at IS NULL`),
    remove: set.plain<never, [ids: readonly string[]]>((s) => `DELETE FROM ${s}.pipeline_runs WHERE id = ANY($1::bigint[])`),
    audit: set.plain<never, [actor: string, action: string, pipeline: string, key: string, reason: string | null, details: string]>(
      (s) => `INSERT INTO ${s}.audit_log (actor, action, target, reason, details) VALUES ($1, $2, 'pipeline:' || $3 || ':' || $4, $5, $6::jsonb)`,
    ),
  };
}
export type PipelineRunStatements = ReturnType<typeof pipelineRunStatements>;

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

/** How a run ends. */
export interface RunEnd {
  state: 'succeeded' | 'failed' | 'cancelled';
  reason: string | null;
  error: unknown;
  warnings: number;
}

/** The audit entry of a manual action on a run. */
export interface PipelineAuditEntry {
  actor: string;
  action: string;
  pipeline: string;
  key: string;
  reason: string | null;
  details: Record<string, unknown>;
}

/**
 * The statements of `pipeline_runs` bound to the schema's pool. Transitions run inside the
 * caller's transaction (which holds the run's lock) and take it as `tx`; a read or write that may
 * run either way takes it as an optional `db`.
 */
export class PipelineRunQueries {
  private readonly st: PipelineRunStatements;

  constructor(
    private readonly pool: Executor,
    set: StatementSet,
  ) {
    this.st = pipelineRunStatements(set);
  }

  /** Starts a run in `tx`, or returns the one that holds the key (`created` false). */
  async start(p: { tx: Executor; run: RunInsert }): Promise<RunRow & { created: boolean }> {
    const r = p.run;
    const [row] = await run(p.tx, r.dryRun ? this.st.startDry : this.st.startLive, [r.pipeline, r.key, r.dryRun, r.input, r.graph, r.traceContext, r.startedBy, r.deadlineMs]);
    return row!;
  }

  /** Locks a run for a transition (for the rest of `tx`); undefined when it is gone. */
  async lock(p: { tx: Executor; id: string }): Promise<RunRow | undefined> {
    return (await run(p.tx, this.st.lock, [p.id]))[0];
  }

  /** A run by id, share-locked for the rest of `tx` (a publication in progress is waited for). */
  async share(p: { tx: Executor; id: string }): Promise<RunRow | undefined> {
    return (await run(p.tx, this.st.share, [p.id]))[0];
  }

  /** A run by id. */
  async get(p: { id: string }): Promise<RunRow | undefined> {
    return (await run(this.pool, this.st.get, [p.id]))[0];
  }

  /** The live run of a key, else its newest dry run (`dryRun` narrows it to one of them). */
  async find(p: { pipeline: string; key: string; dryRun: boolean | null }): Promise<RunRow | undefined> {
    return (await run(this.pool, this.st.find, [p.pipeline, p.key, p.dryRun]))[0];
  }

  /** Runs, newest first. */
  list(p: { filter: RunFilter; limit: number; db?: Executor }): Promise<RunListRow[]> {
    const f = p.filter;
    return run(p.db ?? this.pool, this.st.list, [f.pipeline, f.states, f.key, f.dryRun, f.beforeId, p.limit, f.id ?? null]);
  }

  /** Ends a running (or held) run in `tx`; false when it had ended already. */
  async finish(p: { tx: Executor; id: string; end: RunEnd }): Promise<boolean> {
    const e = p.end;
    const rows = await run(p.tx, this.st.finish, [p.id, e.state, e.reason, e.error === null || e.error === undefined ? null : JSON.stringify(e.error), e.warnings]);
    return rows.length === 1;
  }

  /** Holds a running run with its reason, in `tx`; false when it was not running. */
  async hold(p: { tx: Executor; id: string; reason: string }): Promise<boolean> {
    return (await run(p.tx, this.st.hold, [p.id, p.reason])).length === 1;
  }

  /** Puts a run back to running at `generation`, in `tx`; `deadlineMs` restarts its deadline (restart), null keeps it (rerun). */
  async resume(p: { tx: Executor; id: string; generation: number; deadlineMs: number | null }): Promise<void> {
    await run(p.tx, this.st.resume, [p.id, p.generation, p.deadlineMs]);
  }

  /** Records in `tx` that a finished run's artifacts are published. */
  async published(p: { tx: Executor; id: string }): Promise<void> {
    await run(p.tx, this.st.published, [p.id]);
  }

  /** Deletes runs (their steps, history, artifacts, blobs and follow-ups go with them). */
  async remove(p: { ids: readonly string[]; db?: Executor }): Promise<void> {
    if (p.ids.length) await run(p.db ?? this.pool, this.st.remove, [p.ids]);
  }

  /** Writes the audit entry of a manual action on a run (`target` pipeline:<name>:<key>). */
  async audit(p: { entry: PipelineAuditEntry; db?: Executor }): Promise<void> {
    const e = p.entry;
    await run(p.db ?? this.pool, this.st.audit, [e.actor, e.action, e.pipeline, e.key, e.reason, JSON.stringify(e.details)]);
  }
}
