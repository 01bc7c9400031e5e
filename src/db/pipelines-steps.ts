import { run, runCount, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** A step's (or an item's) state. */
export type StepState = 'blocked' | 'ready' | 'running' | 'succeeded' | 'failed' | 'skipped' | 'cancelled';

/** The states a step ends in. */
export const STEP_DONE: readonly StepState[] = ['succeeded', 'failed', 'skipped', 'cancelled'];

/** A step or item row as stored. */
export interface StepRow {
  step: string;
  item: string;
  item_index: number;
  state: StepState;
  job_id: string | null;
  attempts: number;
  item_value: unknown;
  items: number | null;
  output: unknown;
  output_bytes: number | null;
  error: Record<string, unknown> | null;
  started_at: Date | null;
  finished_at: Date | null;
  /** The state of the step's job, when it still exists (a listing's join). */
  job_state?: string | null;
  job_attempt?: number | null;
}

/** One line of a run's state summary: a step's own row (`main`) or its items in one state, counted. */
export interface StepSummaryRow {
  step: string;
  main: boolean;
  state: StepState;
  n: number;
  items: number | null;
}

/** A step attempt's view of its step and run when it begins. */
export interface StepBeginRow {
  run_state: string;
  key: string;
  input: unknown;
  generation: number;
  dry_run: boolean;
  graph: unknown;
  trace_context: Record<string, string> | null;
  state: StepState;
  job_id: string | null;
  item_value: unknown;
  items: number | null;
  error: Record<string, unknown> | null;
}

/** Statements of `pipeline_steps` and `pipeline_step_history`. */
export function pipelineStepStatements(set: StatementSet) {
  const ROW = `s.step, s.item, s.item_index, s.state, s.job_id::text AS job_id, s.attempts, s.item_value, s.items, s.output, s.output_bytes,
    s.error, s.started_at, s.finished_at`;
  return {
    insertMain: set.plain<never, [runId: string, steps: readonly string[]]>((s) => `INSERT INTO ${s}.pipeline_steps (run_id, step) SELECT $1, u FROM unnest($2::text[]) AS u ON CONFLICT DO NOTHING`),
    insertItems: set.plain<never, [runId: string, step: string, items: readonly string[], indexes: readonly number[], values: readonly string[]]>(
      (s) => `INSERT INTO ${s}.pipeline_steps (run_id, step, item, item_index, item_value)
        SELECT $1, $2, u.item, u.idx, u.value::jsonb FROM unnest($3::text[], $4::int[], $5::text[]) AS u(item, idx, value)`,
    ),
    // Small whatever the fan-out: one row per step, plus one per step and item state.
    summary: set.plain<StepSummaryRow, [runId: string]>(
      (s) => `SELECT step, item = '' AS main, state, count(*)::int AS n, max(items) AS items FROM ${s}.pipeline_steps
        WHERE run_id = $1 GROUP BY step, item = '', state`,
    ),
    blockedItems: set.plain<{ item: string; item_index: number }, [runId: string, step: string]>(
      (s) => `SELECT item, item_index FROM ${s}.pipeline_steps WHERE run_id = $1 AND step = $2 AND item <> '' AND state = 'blocked' ORDER BY item_index`,
    ),
    setReady: set.plain<never, [runId: string, steps: readonly string[], items: readonly string[], jobIds: readonly string[]]>(
      (s) => `UPDATE ${s}.pipeline_steps t SET state = 'ready', job_id = u.job, error = NULL, finished_at = NULL
        FROM unnest($2::text[], $3::text[], $4::bigint[]) AS u(step, item, job)
        WHERE t.run_id = $1 AND t.step = u.step AND t.item = u.item AND t.state = 'blocked'`,
    ),
    // A step's own row ends without running (skipped, cancelled), or a map's row once its items ended.
    setMain: set.plain<never, [runId: string, step: string, state: StepState, error: string | null, from: readonly StepState[]]>(
      (s) => `UPDATE ${s}.pipeline_steps SET state = $3, error = $4::jsonb, finished_at = now()
        WHERE run_id = $1 AND step = $2 AND item = '' AND state = ANY($5::text[])`,
    ),
    // A map whose items exist already (a rerun) runs again without a new materialising job.
    mainRunning: set.plain<never, [runId: string, step: string]>(
      (s) => `UPDATE ${s}.pipeline_steps SET state = 'running', error = NULL, finished_at = NULL WHERE run_id = $1 AND step = $2 AND item = '' AND state = 'blocked'`,
    ),
    begin: set.plain<StepBeginRow, [runId: string, step: string, item: string]>(
      (s) => `SELECT r.state AS run_state, r.key, r.input, r.generation, r.dry_run, r.graph, r.trace_context,
          s.state, s.job_id::text AS job_id, s.item_value, s.items, s.error
        FROM ${s}.pipeline_steps s JOIN ${s}.pipeline_runs r ON r.id = s.run_id
        WHERE s.run_id = $1 AND s.step = $2 AND s.item = $3`,
    ),
    // An attempt starts: informational (the recording transaction is what the fence guards).
    started: set.plain<never, [runId: string, step: string, item: string, jobId: string]>(
      (s) => `UPDATE ${s}.pipeline_steps SET state = 'running', attempts = attempts + 1, started_at = coalesce(started_at, now())
        WHERE run_id = $1 AND step = $2 AND item = $3 AND job_id = $4 AND state IN ('ready', 'running')`,
    ),
    // The recording writes name the step's current job: another job (an earlier one of a rerun
    // step) or a second recording of the same attempt matches nothing.
    succeed: set.plain<{ step: string }, [runId: string, step: string, item: string, jobId: string, output: string, bytes: number, items: number | null]>(
      (s) => `UPDATE ${s}.pipeline_steps SET state = 'succeeded', output = $5::jsonb, output_bytes = $6, error = NULL, finished_at = now(),
          items = coalesce($7, items)
        WHERE run_id = $1 AND step = $2 AND item = $3 AND job_id = $4 AND state IN ('ready', 'running') RETURNING step`,
    ),
    // A map's materialising job: the step's row runs (its items carry the work).
    expand: set.plain<{ step: string }, [runId: string, step: string, item: string, jobId: string, items: number]>(
      (s) => `UPDATE ${s}.pipeline_steps SET state = 'running', items = $5, started_at = coalesce(started_at, now())
        WHERE run_id = $1 AND step = $2 AND item = $3 AND job_id = $4 AND state IN ('ready', 'running') RETURNING step`,
    ),
    fail: set.plain<{ step: string }, [runId: string, step: string, item: string, jobId: string, state: 'failed' | 'cancelled', error: string]>(
      (s) => `UPDATE ${s}.pipeline_steps SET state = $5, error = $6::jsonb, finished_at = now()
        WHERE run_id = $1 AND step = $2 AND item = $3 AND job_id = $4 AND state IN ('ready', 'running') RETURNING step`,
    ),
    // Whether a fan-out still has an item to end (the primary key's order finds one at once when so).
    openItems: set.plain<{ open: boolean }, [runId: string, step: string]>(
      (s) => `SELECT EXISTS (SELECT 1 FROM ${s}.pipeline_steps WHERE run_id = $1 AND step = $2 AND item <> '' AND state IN ('blocked', 'ready', 'running')) AS open`,
    ),
    // A ready step whose job was cancelled unclaimed (held: nobody can run it) waits again.
    unready: set.plain<never, [runId: string, step: string, item: string, jobId: string]>(
      (s) => `UPDATE ${s}.pipeline_steps SET state = 'blocked', job_id = NULL WHERE run_id = $1 AND step = $2 AND item = $3 AND job_id = $4 AND state = 'ready'`,
    ),
    // Outputs (and outcomes) of the steps a step needs, items in order.
    needs: set.plain<StepNeedRow, [runId: string, steps: readonly string[]]>(
      (s) => `SELECT step, item, state, output, error FROM ${s}.pipeline_steps WHERE run_id = $1 AND step = ANY($2::text[]) ORDER BY step, item_index`,
    ),
    outputs: set.plain<{ step: string; output: unknown }, [runId: string]>((s) => `SELECT step, output FROM ${s}.pipeline_steps WHERE run_id = $1 AND item = '' AND state = 'succeeded'`),
    // A fatal failure: jobs of ready steps no worker has claimed are cancelled (they never start),
    // and steps not started end as cancelled. Ready steps whose job a worker claimed drain.
    cancelUnstarted: set.plain<{ step: string; item: string }, [runId: string, reason: string]>(
      (s) => `
WITH j AS (
  UPDATE ${s}.jobs SET state = 'cancelled', finished_at = now(), reason = $2
  WHERE id IN (SELECT job_id FROM ${s}.pipeline_steps WHERE run_id = $1 AND state = 'ready') AND state = 'available'
  RETURNING id
)
UPDATE ${s}.pipeline_steps SET state = 'cancelled', finished_at = now()
WHERE run_id = $1 AND (state = 'blocked' OR (state = 'ready' AND job_id IN (SELECT id FROM j)))
RETURNING step, item`,
    ),
    // Cancel: the jobs of ready and running steps (cancelled through the job core by the caller).
    openJobs: set.plain<{ job_id: string }, [runId: string]>((s) => `SELECT job_id::text AS job_id FROM ${s}.pipeline_steps WHERE run_id = $1 AND state IN ('ready', 'running') AND job_id IS NOT NULL`),
    cancelOpen: set.plain<never, [runId: string]>((s) => `UPDATE ${s}.pipeline_steps SET state = 'cancelled', finished_at = now() WHERE run_id = $1 AND state IN ('blocked', 'ready', 'running')`),
    // Rerun: what did not succeed goes back to blocked (a map's items keep their values).
    reset: set.plain<never, [runId: string]>(
      (s) => `UPDATE ${s}.pipeline_steps SET state = 'blocked', job_id = NULL, error = NULL, finished_at = NULL
        WHERE run_id = $1 AND state IN ('failed', 'cancelled', 'skipped')`,
    ),
    // Restart: the steps from `from` on are copied to history, their items dropped, their rows reset.
    toHistory: set.plain<never, [runId: string, steps: readonly string[], generation: number]>(
      (s) => `INSERT INTO ${s}.pipeline_step_history (run_id, generation, step, item, item_index, state, job_id, attempts, output, output_bytes, error, started_at, finished_at)
        SELECT run_id, $3, step, item, item_index, state, job_id, attempts, output, output_bytes, error, started_at, finished_at
        FROM ${s}.pipeline_steps WHERE run_id = $1 AND step = ANY($2::text[]) ON CONFLICT DO NOTHING`,
    ),
    dropItems: set.plain<never, [runId: string, steps: readonly string[]]>((s) => `DELETE FROM ${s}.pipeline_steps WHERE run_id = $1 AND step = ANY($2::text[]) AND item <> ''`),
    clear: set.plain<never, [runId: string, steps: readonly string[]]>(
      (s) => `UPDATE ${s}.pipeline_steps SET state = 'blocked', job_id = NULL, attempts = 0, items = NULL, output = NULL, output_bytes = NULL,
          error = NULL, started_at = NULL, finished_at = NULL
        WHERE run_id = $1 AND step = ANY($2::text[])`,
    ),
    failedOptional: set.plain<{ n: number }, [runId: string, steps: readonly string[]]>(
      // A fan-out counts its failed items, not its own row as well.
      (s) => `SELECT count(*)::int AS n FROM ${s}.pipeline_steps WHERE run_id = $1 AND state = 'failed' AND step = ANY($2::text[])
        AND NOT (item = '' AND items IS NOT NULL)`,
    ),
    // A run's rows for `show`, with their jobs' state.
    list: set.plain<StepRow, [runId: string, limit: number]>(
      (s) => `SELECT ${ROW}, j.state::text AS job_state, j.attempt AS job_attempt FROM ${s}.pipeline_steps s LEFT JOIN ${s}.jobs_all j ON j.id = s.job_id
        WHERE s.run_id = $1 ORDER BY s.item <> '', s.step, s.item_index LIMIT $2`,
    ),
    history: set.plain<StepHistoryRow, [runId: string, limit: number]>(
      (s) => `SELECT generation, step, item, item_index, state, job_id::text AS job_id, attempts, output_bytes, error, started_at, finished_at
        FROM ${s}.pipeline_step_history WHERE run_id = $1 ORDER BY generation, item <> '', step, item_index LIMIT $2`,
    ),
    logs: set.plain<StepLogRow, [runId: string, limit: number]>(
      (s) => `SELECT s.step, s.item, l.attempt, l.seq, l.at, l.level, l.msg, l.fields
        FROM ${s}.pipeline_steps s JOIN ${s}.job_logs l ON l.job_id = s.job_id
        WHERE s.run_id = $1 ORDER BY l.at, l.job_id, l.attempt, l.seq LIMIT $2`,
    ),
  };
}
export type PipelineStepStatements = ReturnType<typeof pipelineStepStatements>;

/** Which row a recording write names: the step (or item) and the job allowed to record it. */
export interface StepRef {
  runId: string;
  step: string;
  item: string;
  jobId: string;
}

/** A row of an earlier generation. */
export interface StepHistoryRow extends Omit<StepRow, 'item_value' | 'items' | 'output' | 'job_state' | 'job_attempt'> {
  generation: number;
}

/** A line a step's handler logged, with its step. */
export interface StepLogRow {
  step: string;
  item: string;
  attempt: number;
  seq: number;
  at: Date;
  level: string;
  msg: string;
  fields: Record<string, unknown> | null;
}

/** A row a step needs: its state and output (or error). */
export type StepNeedRow = { step: string; item: string; state: StepState; output: unknown; error: Record<string, unknown> | null };

/**
 * The statements of `pipeline_steps` and `pipeline_step_history` bound to the schema's pool. The
 * transitions of a run run inside the caller's transaction (holding the run's lock) and take it
 * as `tx`; a read that may run either way takes it as an optional `db`.
 */
export class PipelineStepQueries {
  private readonly st: PipelineStepStatements;

  constructor(
    private readonly pool: Executor,
    set: StatementSet,
  ) {
    this.st = pipelineStepStatements(set);
  }

  /** Creates the rows of a run's steps (blocked), in `tx`. */
  async insertMain(p: { tx: Executor; runId: string; steps: readonly string[] }): Promise<void> {
    await run(p.tx, this.st.insertMain, [p.runId, p.steps]);
  }

  /** Creates a map step's item rows (blocked), in `tx`. */
  async insertItems(p: { tx: Executor; runId: string; step: string; items: readonly { key: string; value: string }[] }): Promise<void> {
    if (p.items.length === 0) return;
    await run(p.tx, this.st.insertItems, [p.runId, p.step, p.items.map((i) => i.key), p.items.map((_, i) => i), p.items.map((i) => i.value)]);
  }

  /** The run's steps by state (a map's items counted per state). */
  summary(p: { tx: Executor; runId: string }): Promise<StepSummaryRow[]> {
    return run(p.tx, this.st.summary, [p.runId]);
  }

  /** A map step's blocked items, in order. */
  blockedItems(p: { tx: Executor; runId: string; step: string }): Promise<{ item: string; item_index: number }[]> {
    return run(p.tx, this.st.blockedItems, [p.runId, p.step]);
  }

  /** Marks blocked rows ready with their jobs, in `tx`. */
  async setReady(p: { tx: Executor; runId: string; rows: readonly { step: string; item: string; jobId: string }[] }): Promise<void> {
    if (p.rows.length === 0) return;
    await run(p.tx, this.st.setReady, [p.runId, p.rows.map((r) => r.step), p.rows.map((r) => r.item), p.rows.map((r) => r.jobId)]);
  }

  /** Ends a step's own row in `state` if it is in one of `from`, in `tx`; true when it changed. */
  async setMain(p: { tx: Executor; runId: string; step: string; state: StepState; error: unknown; from: readonly StepState[] }): Promise<boolean> {
    const error = p.error === null || p.error === undefined ? null : JSON.stringify(p.error);
    return (await runCount(p.tx, this.st.setMain, [p.runId, p.step, p.state, error, p.from])) === 1;
  }

  /** A map step whose items exist runs again (rerun), in `tx`. */
  async mainRunning(p: { tx: Executor; runId: string; step: string }): Promise<void> {
    await run(p.tx, this.st.mainRunning, [p.runId, p.step]);
  }

  /** What an attempt needs to know when it begins; undefined when the run or step is gone. */
  async begin(p: { runId: string; step: string; item: string; db?: Executor }): Promise<StepBeginRow | undefined> {
    return (await run(p.db ?? this.pool, this.st.begin, [p.runId, p.step, p.item]))[0];
  }

  /** Records that an attempt of the step's current job started. */
  async started(p: StepRef): Promise<void> {
    await run(this.pool, this.st.started, [p.runId, p.step, p.item, p.jobId]);
  }

  /** Records a success in `tx`; false when this job may no longer record the step (recorded already, or not its job). */
  async succeed(p: { tx: Executor; ref: StepRef; output: string; bytes: number; items?: number | null }): Promise<boolean> {
    const r = p.ref;
    return (await run(p.tx, this.st.succeed, [r.runId, r.step, r.item, r.jobId, p.output, p.bytes, p.items ?? null])).length === 1;
  }

  /** Records in `tx` that a map's materialising job created its `items` item rows. */
  async expand(p: { tx: Executor; ref: StepRef; items: number }): Promise<boolean> {
    const r = p.ref;
    return (await run(p.tx, this.st.expand, [r.runId, r.step, r.item, r.jobId, p.items])).length === 1;
  }

  /** Records a failure for good (or a cancellation) in `tx`; false as for {@link succeed}. */
  async fail(p: { tx: Executor; ref: StepRef; state: 'failed' | 'cancelled'; error: unknown }): Promise<boolean> {
    const r = p.ref;
    return (await run(p.tx, this.st.fail, [r.runId, r.step, r.item, r.jobId, p.state, JSON.stringify(p.error ?? null)])).length === 1;
  }

  /** Whether a fan-out step has items that have not ended. */
  async hasOpenItems(p: { tx: Executor; runId: string; step: string }): Promise<boolean> {
    return (await run(p.tx, this.st.openItems, [p.runId, p.step]))[0]?.open === true;
  }

  /** Puts a ready row whose job was cancelled unclaimed back to blocked, in `tx`. */
  async unready(p: { tx: Executor; ref: StepRef }): Promise<void> {
    const r = p.ref;
    await run(p.tx, this.st.unready, [r.runId, r.step, r.item, r.jobId]);
  }

  /** The rows of the steps named (their items in order). */
  needs(p: { runId: string; steps: readonly string[] }): Promise<StepNeedRow[]> {
    return run(this.pool, this.st.needs, [p.runId, p.steps]);
  }

  /** The outputs of a run's succeeded plain steps, by step. */
  async outputs(p: { tx: Executor; runId: string }): Promise<Record<string, unknown>> {
    const rows = await run(p.tx, this.st.outputs, [p.runId]);
    return Object.fromEntries(rows.map((r) => [r.step, r.output]));
  }

  /** After a fatal failure, in `tx`: cancels the jobs nobody claimed and the steps not started; returns those steps. */
  cancelUnstarted(p: { tx: Executor; runId: string; reason: string }): Promise<{ step: string; item: string }[]> {
    return run(p.tx, this.st.cancelUnstarted, [p.runId, p.reason]);
  }

  /** Jobs of a run's ready and running steps. */
  async openJobs(p: { tx: Executor; runId: string }): Promise<string[]> {
    return (await run(p.tx, this.st.openJobs, [p.runId])).map((r) => r.job_id);
  }

  /** Ends every unfinished row of a run as cancelled, in `tx`. */
  cancelOpen(p: { tx: Executor; runId: string }): Promise<number> {
    return runCount(p.tx, this.st.cancelOpen, [p.runId]);
  }

  /** Rerun, in `tx`: failed, cancelled and skipped rows back to blocked. */
  reset(p: { tx: Executor; runId: string }): Promise<number> {
    return runCount(p.tx, this.st.reset, [p.runId]);
  }

  /** Restart, in `tx`: copies the steps' rows to history under `generation`, drops their items, resets them. */
  async restart(p: { tx: Executor; runId: string; steps: readonly string[]; generation: number }): Promise<void> {
    await run(p.tx, this.st.toHistory, [p.runId, p.steps, p.generation]);
    await run(p.tx, this.st.dropItems, [p.runId, p.steps]);
    await run(p.tx, this.st.clear, [p.runId, p.steps]);
  }

  /** How many rows of these (optional) steps failed. */
  async failedCount(p: { tx: Executor; runId: string; steps: readonly string[] }): Promise<number> {
    if (p.steps.length === 0) return 0;
    return (await run(p.tx, this.st.failedOptional, [p.runId, p.steps]))[0]?.n ?? 0;
  }

  /** A run's rows with their jobs' states, steps first, then items. */
  list(p: { runId: string; limit: number }): Promise<StepRow[]> {
    return run(this.pool, this.st.list, [p.runId, p.limit]);
  }

  /** A run's earlier generations. */
  history(p: { runId: string; limit: number }): Promise<StepHistoryRow[]> {
    return run(this.pool, this.st.history, [p.runId, p.limit]);
  }

  /** What the steps of a run logged (their current jobs), in time order. */
  logs(p: { runId: string; limit: number }): Promise<StepLogRow[]> {
    return run(this.pool, this.st.logs, [p.runId, p.limit]);
  }
}
