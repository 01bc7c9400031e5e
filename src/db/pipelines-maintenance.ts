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

/** A run whose deadline passed, as the sweep marks it. */
export interface MissedDeadlineRow {
  id: string;
  pipeline: string;
  deadline_at: Date;
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
    deadlines: set.plain<MissedDeadlineRow, []>(
      (s) => `UPDATE ${s}.pipeline_runs SET deadline_missed_at = now()
        WHERE state IN ('running', 'held') AND deadline_at < now() AND deadline_missed_at IS NULL
        RETURNING id::text, pipeline, deadline_at`,
    ),
    // Steps that wait on a job that finished without recording them, or is gone. Job states that
    // will still record (available, running) or wait for a person (held) are left alone.
    stale: set.plain<StaleStepRow, [limit: number]>(
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
    jobState: set.plain<{ state: string; reason: string | null }, [jobId: string]>(
      (s) => `WITH live AS (SELECT state, reason FROM ${s}.jobs WHERE id = $1 FOR UPDATE)
SELECT state::text AS state, reason FROM live
UNION ALL SELECT state::text, reason FROM ${s}.jobs_history WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM live)`,
    ),
    waiting: set.plain<WaitingStepRow, [graceMs: number, limit: number]>(
      (s) => `
SELECT s.run_id::text, r.pipeline, s.step, s.item, s.job_id::text, j.kind
FROM ${s}.pipeline_steps s
JOIN ${s}.pipeline_runs r ON r.id = s.run_id AND r.state = 'running'
JOIN ${s}.jobs j ON j.id = s.job_id AND j.state = 'available' AND j.run_at <= now() - $1::float8 * interval '1 millisecond'
WHERE s.state = 'ready'
LIMIT $2`,
    ),
    // Which of these kinds some live process hosts (from the process registry).
    hostedKinds: set.plain<{ kind: string }, [kinds: readonly string[], liveMs: number]>(
      (s) => `SELECT DISTINCT k AS kind FROM ${s}.processes p, jsonb_array_elements_text(coalesce(p.info->'kinds', '[]'::jsonb)) AS k
        WHERE p.last_seen_at > now() - $2::float8 * interval '1 millisecond' AND k = ANY($1::text[])`,
    ),
    // Inside the holding transaction: cancels the job of a step nobody can run, if still unclaimed.
    cancelJob: set.plain<{ id: string }, [jobId: string, reason: string]>(
      (s) => `UPDATE ${s}.jobs SET state = 'cancelled', finished_at = now(), reason = $2 WHERE id = $1 AND state = 'available' RETURNING id::text`,
    ),
    unpublished: set.plain<{ id: string }, [graceMs: number, limit: number]>(
      (s) => `SELECT id::text FROM ${s}.pipeline_runs WHERE finished_at IS NOT NULL AND artifacts_published_at IS NULL
        AND finished_at < now() - $1::float8 * interval '1 millisecond' ORDER BY finished_at LIMIT $2`,
    ),
    prunable: set.plain<{ id: string }, [pipeline: string, retentionMs: number, limit: number]>(
      (s) => `SELECT id::text FROM ${s}.pipeline_runs WHERE pipeline = $1 AND finished_at < now() - $2::float8 * interval '1 millisecond'
        AND state IN ('succeeded', 'failed', 'cancelled') ORDER BY finished_at LIMIT $3`,
    ),
    followUpClaim: set.plain<{ name: string }, [runId: string, generation: number, name: string]>(
      (s) => `INSERT INTO ${s}.pipeline_followups (run_id, generation, name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING name`,
    ),
    followUpSet: set.plain<never, [runId: string, generation: number, name: string, jobId: string | null, error: string | null]>(
      (s) => `UPDATE ${s}.pipeline_followups SET job_id = $4, error = $5 WHERE run_id = $1 AND generation = $2 AND name = $3`,
    ),
    followUps: set.plain<FollowUpRow, [runId: string]>(
      (s) => `SELECT generation, name, job_id::text AS job_id, error, created_at FROM ${s}.pipeline_followups WHERE run_id = $1 ORDER BY generation, created_at, name`,
    ),
  };
}
export type PipelineMaintenanceStatements = ReturnType<typeof pipelineMaintenanceStatements>;

/** A follow-up's row: (run, generation, name). */
export interface FollowUpRef {
  runId: string;
  generation: number;
  name: string;
}

const SAVEPOINT = /^[a-z_]{1,40}$/;

/**
 * The statements of the pipeline sweep and of follow-ups bound to the schema's pool. The sweep's
 * reads run on the pool; what a reconciling, holding or ending transaction does takes it as `tx`.
 */
export class PipelineMaintenanceQueries {
  private readonly st: PipelineMaintenanceStatements;

  constructor(
    private readonly pool: Executor,
    set: StatementSet,
  ) {
    this.st = pipelineMaintenanceStatements(set);
  }

  /** Marks runs past their deadline (once each) and returns them. */
  deadlinesMissed(): Promise<MissedDeadlineRow[]> {
    return run(this.pool, this.st.deadlines, []);
  }

  /** Steps whose job finished without recording them, or is gone. */
  stepsStale(p: { limit: number }): Promise<StaleStepRow[]> {
    return run(this.pool, this.st.stale, [p.limit]);
  }

  /** A job's state and reason, locked for the rest of `tx`; undefined when it is gone. */
  async jobStateLocked(p: { tx: Executor; jobId: string }): Promise<{ state: string; reason: string | null } | undefined> {
    return (await run(p.tx, this.st.jobState, [p.jobId]))[0];
  }

  /** Ready steps of running runs whose job has waited unclaimed for `graceMs`. */
  stepsWaiting(p: { graceMs: number; limit: number }): Promise<WaitingStepRow[]> {
    return run(this.pool, this.st.waiting, [p.graceMs, p.limit]);
  }

  /** The subset of `kinds` that a process seen within `liveMs` hosts. */
  async kindsHosted(p: { kinds: readonly string[]; liveMs: number; db?: Executor }): Promise<Set<string>> {
    if (p.kinds.length === 0) return new Set();
    return new Set((await run(p.db ?? this.pool, this.st.hostedKinds, [p.kinds, p.liveMs])).map((r) => r.kind));
  }

  /** Cancels a step's job in `tx` if no worker has claimed it; true when it did. */
  async jobCancelUnclaimed(p: { tx: Executor; jobId: string; reason: string }): Promise<boolean> {
    return (await run(p.tx, this.st.cancelJob, [p.jobId, p.reason])).length === 1;
  }

  /** Finished runs whose artifacts were not published within `graceMs` of their end. */
  async runsUnpublished(p: { graceMs: number; limit: number }): Promise<string[]> {
    return (await run(this.pool, this.st.unpublished, [p.graceMs, p.limit])).map((r) => r.id);
  }

  /** Finished runs of `pipeline` older than its retention. */
  async runsPrunable(p: { pipeline: string; retentionMs: number; limit: number }): Promise<string[]> {
    return (await run(this.pool, this.st.prunable, [p.pipeline, p.retentionMs, p.limit])).map((r) => r.id);
  }

  /** Takes a follow-up's row in `tx`; false when it was taken before (enqueued already). */
  async followUpClaim(p: { tx: Executor; ref: FollowUpRef }): Promise<boolean> {
    const r = p.ref;
    return (await run(p.tx, this.st.followUpClaim, [r.runId, r.generation, r.name])).length === 1;
  }

  /** Records a follow-up's job, or why it could not be enqueued, in `tx`. */
  async followUpSet(p: { tx: Executor; ref: FollowUpRef; jobId: string | null; error: string | null }): Promise<void> {
    const r = p.ref;
    await run(p.tx, this.st.followUpSet, [r.runId, r.generation, r.name, p.jobId, p.error]);
  }

  /** A run's follow-ups. */
  followUps(p: { runId: string }): Promise<FollowUpRow[]> {
    return run(this.pool, this.st.followUps, [p.runId]);
  }

  /** Sets a savepoint in the caller's transaction `tx` (its name: a fixed word of the caller's). */
  async savepoint(p: { tx: Executor; name: string }): Promise<void> {
    await run(p.tx, { text: `SAVEPOINT ${savepointName(p.name)}` }, []);
  }

  /** Releases a savepoint of `tx`. */
  async savepointRelease(p: { tx: Executor; name: string }): Promise<void> {
    await run(p.tx, { text: `RELEASE SAVEPOINT ${savepointName(p.name)}` }, []);
  }

  /** Rolls `tx` back to a savepoint: the transaction goes on without what followed it. */
  async savepointRollback(p: { tx: Executor; name: string }): Promise<void> {
    await run(p.tx, { text: `ROLLBACK TO SAVEPOINT ${savepointName(p.name)}` }, []);
  }
}

function savepointName(name: string): string {
  if (!SAVEPOINT.test(name)) throw new Error(`not a savepoint name: ${name}`);
  return name;
}
