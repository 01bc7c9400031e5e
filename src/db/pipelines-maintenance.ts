import { run, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** A step waiting on a job that will not record it (finished, gone), as the sweep finds it. */
export interface StaleStepRow {
  run_id: string;
  pipeline: string;
  step: string;
  item: string;
  job_id: string | null;
  job_state: string | null;
  job_reason: string | null;
}

/** A ready step whose job nobody has claimed for a while. */
export interface WaitingStepRow {
  run_id: string;
  pipeline: string;
  step: string;
  item: string;
  job_id: string;
  kind: string;
}

/** A follow-up of a run. */
export interface FollowUpRow {
  generation: number;
  name: string;
  job_id: string | null;
  error: string | null;
  created_at: Date;
}

/** Statements of the pipeline sweep and of follow-ups. */
export function pipelineMaintenanceStatements(set: StatementSet) {
  return {
    // Exactly once per run across the fleet: only the UPDATE that sets the mark returns the row.
    deadlines: set.plain<{ id: string; pipeline: string; deadline_at: Date }>(
      (s) => `UPDATE ${s}.pipeline_runs SET deadline_missed_at = now()
        WHERE state IN ('running', 'held') AND deadline_at < now() AND deadline_missed_at IS NULL
        RETURNING id::text, pipeline, deadline_at`,
    ),
    // Steps that wait on a job that finished without recording them, or is gone. Job states that
    // will still record (available, running) or wait for a person (held) are left alone.
    stale: set.plain<StaleStepRow>(
      (s) => `
SELECT s.run_id::text, r.pipeline, s.step, s.item, s.job_id::text, j.state::text AS job_state, j.reason AS job_reason
FROM ${s}.pipeline_steps s
JOIN ${s}.pipeline_runs r ON r.id = s.run_id
LEFT JOIN ${s}.jobs_all j ON j.id = s.job_id
WHERE s.state IN ('ready', 'running') AND (j.id IS NULL OR j.state NOT IN ('available', 'running', 'held'))
  -- A fan-out's own row runs on while its items do: its job (which created them) has completed.
  AND NOT (s.item = '' AND s.state = 'running' AND s.items IS NOT NULL)
LIMIT $1`,
    ),
    // Inside the reconciling transaction: the job's state again, locked, so a worker cannot record
    // the step meanwhile (its fence waits on this lock, then sees the job as it is).
    // A finished job may be in the history already (migration 0008): no lock needed there, it does not change.
    jobState: set.plain<{ state: string; reason: string | null }>(
      (s) => `WITH live AS (SELECT state, reason FROM ${s}.jobs WHERE id = $1 FOR UPDATE)
SELECT state::text AS state, reason FROM live
UNION ALL SELECT state::text, reason FROM ${s}.jobs_history WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM live)`,
    ),
    waiting: set.plain<WaitingStepRow>(
      (s) => `
SELECT s.run_id::text, r.pipeline, s.step, s.item, s.job_id::text, j.kind
FROM ${s}.pipeline_steps s
JOIN ${s}.pipeline_runs r ON r.id = s.run_id AND r.state = 'running'
JOIN ${s}.jobs j ON j.id = s.job_id AND j.state = 'available' AND j.run_at <= now() - $1::float8 * interval '1 millisecond'
WHERE s.state = 'ready'
LIMIT $2`,
    ),
    // Which of these kinds some live process hosts (from the process registry).
    hostedKinds: set.plain<{ kind: string }>(
      (s) => `SELECT DISTINCT k AS kind FROM ${s}.processes p, jsonb_array_elements_text(coalesce(p.info->'kinds', '[]'::jsonb)) AS k
        WHERE p.last_seen_at > now() - $2::float8 * interval '1 millisecond' AND k = ANY($1::text[])`,
    ),
    // Inside the holding transaction: cancels the job of a step nobody can run, if still unclaimed.
    cancelJob: set.plain(
      (s) => `UPDATE ${s}.jobs SET state = 'cancelled', finished_at = now(), reason = $2 WHERE id = $1 AND state = 'available' RETURNING id::text`,
    ),
    unpublished: set.plain<{ id: string }>(
      (s) => `SELECT id::text FROM ${s}.pipeline_runs WHERE finished_at IS NOT NULL AND artifacts_published_at IS NULL
        AND finished_at < now() - $1::float8 * interval '1 millisecond' ORDER BY finished_at LIMIT $2`,
    ),
    prunable: set.plain<{ id: string }>(
      (s) => `SELECT id::text FROM ${s}.pipeline_runs WHERE pipeline = $1 AND finished_at < now() - $2::float8 * interval '1 millisecond'
        AND state IN ('succeeded', 'failed', 'cancelled') ORDER BY finished_at LIMIT $3`,
    ),
    followUpClaim: set.plain(
      (s) => `INSERT INTO ${s}.pipeline_followups (run_id, generation, name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING name`,
    ),
    followUpSet: set.plain(
      (s) => `UPDATE ${s}.pipeline_followups SET job_id = $4, error = $5 WHERE run_id = $1 AND generation = $2 AND name = $3`,
    ),
    followUps: set.plain<FollowUpRow>(
      (s) => `SELECT generation, name, job_id::text AS job_id, error, created_at FROM ${s}.pipeline_followups WHERE run_id = $1 ORDER BY generation, created_at, name`,
    ),
  };
}
export type PipelineMaintenanceStatements = ReturnType<typeof pipelineMaintenanceStatements>;

/** Marks runs past their deadline (once each) and returns them. */
export function runDeadlinesMissed(db: Executor, st: PipelineMaintenanceStatements): Promise<{ id: string; pipeline: string; deadline_at: Date }[]> {
  return run(db, st.deadlines, []);
}

/** Steps whose job finished without recording them, or is gone. */
export function stepsStale(db: Executor, st: PipelineMaintenanceStatements, limit: number): Promise<StaleStepRow[]> {
  return run(db, st.stale, [limit]);
}

/** A job's state and reason, locked for the transaction; undefined when it is gone. */
export async function jobStateLocked(tx: Executor, st: PipelineMaintenanceStatements, jobId: string): Promise<{ state: string; reason: string | null } | undefined> {
  return (await run(tx, st.jobState, [jobId]))[0];
}

/** Ready steps of running runs whose job has waited unclaimed for `graceMs`. */
export function stepsWaiting(db: Executor, st: PipelineMaintenanceStatements, graceMs: number, limit: number): Promise<WaitingStepRow[]> {
  return run(db, st.waiting, [graceMs, limit]);
}

/** The subset of `kinds` that a process seen within `liveMs` hosts. */
export async function kindsHosted(db: Executor, st: PipelineMaintenanceStatements, kinds: readonly string[], liveMs: number): Promise<Set<string>> {
  if (kinds.length === 0) return new Set();
  return new Set((await run(db, st.hostedKinds, [kinds, liveMs])).map((r) => r.kind));
}

/** Cancels a step's job if no worker has claimed it; true when it did. */
export async function jobCancelUnclaimed(tx: Executor, st: PipelineMaintenanceStatements, jobId: string, reason: string): Promise<boolean> {
  return (await run(tx, st.cancelJob, [jobId, reason])).length === 1;
}

/** Finished runs whose artifacts were not published within `graceMs` of their end. */
export async function runsUnpublished(db: Executor, st: PipelineMaintenanceStatements, graceMs: number, limit: number): Promise<string[]> {
  return (await run(db, st.unpublished, [graceMs, limit])).map((r) => r.id);
}

/** Finished runs of `pipeline` older than its retention. */
export async function runsPrunable(db: Executor, st: PipelineMaintenanceStatements, pipeline: string, retentionMs: number, limit: number): Promise<string[]> {
  return (await run(db, st.prunable, [pipeline, retentionMs, limit])).map((r) => r.id);
}

/** Takes a follow-up's row for (run, generation, name); false when it was taken before (enqueued already). */
export async function followUpClaim(tx: Executor, st: PipelineMaintenanceStatements, runId: string, generation: number, name: string): Promise<boolean> {
  return (await run(tx, st.followUpClaim, [runId, generation, name])).length === 1;
}

/** Records a follow-up's job, or why it could not be enqueued. */
export async function followUpSet(tx: Executor, st: PipelineMaintenanceStatements, runId: string, generation: number, name: string, jobId: string | null, error: string | null): Promise<void> {
  await run(tx, st.followUpSet, [runId, generation, name, jobId, error]);
}

/** A run's follow-ups. */
export function followUpList(db: Executor, st: PipelineMaintenanceStatements, runId: string): Promise<FollowUpRow[]> {
  return run(db, st.followUps, [runId]);
}

const SAVEPOINT = /^[a-z_]{1,40}$/;

/** Sets a savepoint in the caller's transaction (its name: a fixed word of the caller's). */
export async function savepoint(tx: Executor, name: string): Promise<void> {
  if (!SAVEPOINT.test(name)) throw new Error(`not a savepoint name: ${name}`);
  await run(tx, { text: `SAVEPOINT ${name}` }, []);
}

/** Releases a savepoint. */
export async function savepointRelease(tx: Executor, name: string): Promise<void> {
  if (!SAVEPOINT.test(name)) throw new Error(`not a savepoint name: ${name}`);
  await run(tx, { text: `RELEASE SAVEPOINT ${name}` }, []);
}

/** Rolls back to a savepoint: the transaction goes on without what followed it. */
export async function savepointRollback(tx: Executor, name: string): Promise<void> {
  if (!SAVEPOINT.test(name)) throw new Error(`not a savepoint name: ${name}`);
  await run(tx, { text: `ROLLBACK TO SAVEPOINT ${name}` }, []);
}
