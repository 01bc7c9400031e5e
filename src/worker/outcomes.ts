import type { Database } from '../db/database.js';
import type { ClaimedRow } from '../db/jobs-run.js';
import { JobCancelledError, LeaseLostError, type JobTimeoutError } from '../errors.js';
import type { JobDefinition } from '../jobs/define-job.js';
import { decideFailure } from '../jobs/failure-policy.js';
import type { Clock } from '../lifecycle/clock.js';
import type { EventBus, JobEventFields } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import type { ActiveJob, ActiveJobs } from './active-jobs.js';
import type { Completer } from './completer.js';
import { traceIdOf } from './run-context.js';

/**
 * How a claimed job ends, as decided in this process. `failed` covers a handler that threw and
 * one that returned `retryAfter`, `discard` or `hold` (`error` is what it threw or returned).
 */
export type JobEnd =
  | { cause: 'completed' }
  | { cause: 'failed'; def: JobDefinition; error: unknown }
  | { cause: 'timeout'; def: JobDefinition; error: JobTimeoutError }
  | { cause: 'expired' }
  | { cause: 'start-refused' }
  | { cause: 'cancelled' }
  | { cause: 'lease-lost'; why: string };

/** Every cause of a job's end, with the shutdown hand-back ({@link Outcomes.handBack}) and a write that failed ({@link Outcomes.unrecorded}). */
export type EndCause = JobEnd['cause'] | 'handed-back' | 'unrecorded';

/** What {@link Outcomes.finish} came to: the job's new state as written, or why nothing was. */
export type FinishResult = 'completed' | 'retry' | 'discarded' | 'held' | 'expired' | 'refused' | 'unrecorded' | 'not-written' | 'already-decided';

/** What the outcome writer is built from (one per worker, or per inline test run). */
export interface OutcomesOptions {
  database: Database;
  /** The leases this process holds: a job leaves it once its end is written (or given up). */
  active: ActiveJobs;
  /** Batches completions. */
  completer: Completer;
  events: EventBus;
  logger: Logger;
  /** The worker's name, in the error entry of a job handed back. */
  owner: string;
  clock: Clock;
  /** A write that failed (or an event that could not be sent): `where` says which. */
  onError: (where: string, err: unknown) => void;
  /** An attempt was written back for a retry after `delayMs`: the worker claims it then. */
  onRetry?: (queue: string, delayMs: number) => void;
}

/**
 * The one place that decides how a claimed job ends and writes it. Every write is fenced by the
 * claim's lease token (`WHERE id = … AND lease_token = … AND state = 'running'`), so a write by a
 * claim that is no longer current changes nothing; the first cause to arrive decides
 * (`ActiveJob.settle`), and a later one — a handler returning after its timeout, a heartbeat
 * finding the lease gone while the completion is in flight — is ignored.
 *
 * | cause           | decided when                                          | statement                              | a stale token means                                    |
 * | --------------- | ----------------------------------------------------- | -------------------------------------- | ------------------------------------------------------ |
 * | `completed`     | the handler returned                                  | `job_complete` (batched; `_marked`, `_delete`) | rescued, cancelled or re-claimed meanwhile: the result is dropped, `job.refused` |
 * | `failed`        | it threw, or returned `retryAfter` / `discard` / `hold` | `job_fail`                           | the same: the attempt is not recorded here, `job.refused` |
 * | `timeout`       | `timeoutMs` passed (the handler's signal aborts; it may run on) | `job_fail` (error kind `timeout`) | the same                                        |
 * | `expired`       | a held job's deadline passed before a slot freed      | `job_expire_held`                      | someone else has it: nothing to do                     |
 * | `handed-back`   | shutdown: not finished within the grace, or held unstarted | `job_release` (batched)           | someone else has it: nothing to do                     |
 * | `start-refused` | the at-most-once start mark was refused               | none (`job_start` found it stale)      | it was already someone else's: `job.refused`           |
 * | `cancelled`     | an operator cancelled it (a control notification)     | none: the cancel statement wrote `cancelled` | —                                                |
 * | `lease-lost`    | a heartbeat found the token stale                     | none: the rescuer or a cancel wrote the state | —                                               |
 * | `unrecorded`    | writing the outcome failed                            | none: the lease lapses and the rescuer takes the job back | —                                   |
 *
 * A job the claim itself found past its deadline never becomes an ActiveJob: the claim statement
 * wrote `expired` ({@link expiredAtClaim} only reports it).
 */
export class Outcomes {
  constructor(private readonly o: OutcomesOptions) {}

  /** Decides `job`'s end as `end` (unless it was decided already) and writes it. */
  async finish(job: ActiveJob, end: JobEnd): Promise<FinishResult> {
    if (!job.settle(end.cause)) return 'already-decided';
    switch (end.cause) {
      case 'completed':
        return this.complete(job);
      case 'failed':
        return this.fail(job, end.def, end.error, 'error');
      case 'timeout':
        job.abortSignal('timeout', end.error);
        return this.fail(job, end.def, end.error, 'timeout');
      case 'expired':
        return this.expire(job);
      case 'start-refused':
        this.o.active.remove(job);
        this.refused(job, 'start');
        return 'refused';
      case 'cancelled':
        job.abortSignal('cancelled', new JobCancelledError(job.row.id));
        this.o.active.remove(job);
        // The process that cancelled emitted job.cancelled; here the holder lets go of it.
        this.leaseLostEvent(job, 'cancelled');
        return 'not-written';
      case 'lease-lost':
        job.abortSignal('lease-lost', new LeaseLostError(job.row.id, end.why));
        this.o.active.remove(job);
        this.leaseLostEvent(job, end.why);
        return 'not-written';
    }
  }

  /**
   * The outcome could not be written (the run failed outside the handler): stop renewing the
   * lease, so it lapses and the rescuer takes the job back, rather than holding it while this
   * process lives. Also for a job whose end was decided but whose write then failed.
   */
  unrecorded(job: ActiveJob, err: unknown): void {
    job.settle('unrecorded');
    this.o.onError('run', err);
    this.o.active.remove(job);
  }

  /**
   * Shutdown: hands jobs back at once, in one statement. A job whose handler never started gets
   * its attempt back; an at-most-once job whose handler did start is abandoned (it may have
   * acted). Jobs whose end was already decided are left out.
   */
  async handBack(jobs: readonly ActiveJob[]): Promise<void> {
    const mine = jobs.filter((j) => j.settle('handed-back'));
    if (mine.length === 0) return;
    const at = new Date(this.o.clock.wall()).toISOString();
    try {
      const rows = await this.o.database.jobs.release(
        mine.map((j) => ({
          id: j.row.id,
          token: j.row.lease_token,
          started: j.started,
          error: { attempt: j.row.attempt, at, kind: 'shutdown', message: `interrupted by shutdown of ${this.o.owner}` },
        })),
      );
      const state = new Map(rows.map((r) => [r.id, r.state]));
      for (const j of mine) {
        this.o.active.remove(j);
        const s = state.get(j.row.id);
        if (s) this.o.events.emit({ type: 'job.released', jobId: j.row.id, kind: j.row.kind, queue: j.row.queue, attempt: j.row.attempt, state: s });
      }
    } catch (err) {
      // Not handed back: the leases lapse and the rescuer takes the jobs within leaseMs.
      this.o.onError('release', err);
      for (const j of mine) this.o.active.remove(j);
    }
  }

  /** A job the claim found past its deadline: the claim statement itself wrote `expired`. */
  expiredAtClaim(row: ClaimedRow): void {
    this.o.events.emit({ type: 'job.expired', jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt });
  }

  private async complete(job: ActiveJob): Promise<FinishResult> {
    const row = job.row;
    const applied = await this.o.completer.complete(row.id, row.lease_token, job.startedAt);
    this.o.active.remove(job);
    if (!applied) {
      this.refused(job, 'complete');
      return 'refused';
    }
    if (this.o.events.wants('job.completed')) {
      this.o.events.emit({ type: 'job.completed', ...jobFields(row), durationMs: this.o.clock.monotonic() - job.startedAt });
    }
    return 'completed';
  }

  /** A failed attempt (handler errors, control results, timeouts): the failure policy decides what it leads to. */
  private async fail(job: ActiveJob, def: JobDefinition, err: unknown, kind: 'error' | 'timeout'): Promise<FinishResult> {
    const row = job.row;
    const outcome = decideFailure(def, row.attempt, row.max_attempts, err, kind);
    let applied = false;
    try {
      applied = await this.o.database.jobs.fail({ id: row.id, token: row.lease_token, outcome });
    } catch (writeErr) {
      // The lease lapses and the rescuer takes the job back; nothing is lost.
      this.o.onError('record failure', writeErr);
      this.o.active.remove(job);
      return 'unrecorded';
    }
    this.o.active.remove(job);
    if (!applied) {
      this.refused(job, 'fail');
      return 'refused';
    }
    const state = outcome.state === 'available' ? 'retry' : outcome.state;
    if (outcome.state === 'available') this.o.onRetry?.(row.queue, outcome.delayMs);
    const events = this.o.events;
    if (!events.active) return state;
    const base = jobFields(row);
    if (outcome.state === 'held') events.emit({ type: 'job.held', ...base, reason: outcome.reason ?? '' });
    else {
      events.emit({
        type: 'job.failed',
        ...base,
        durationMs: this.o.clock.monotonic() - job.startedAt,
        error: outcome.error.message,
        willRetry: outcome.state === 'available',
        delayMs: outcome.delayMs,
      });
      if (outcome.state === 'available') events.emit({ type: 'job.retried', ...base, delayMs: outcome.delayMs });
      if (outcome.state === 'discarded') events.emit({ type: 'job.discarded', ...base, reason: outcome.reason ?? '' });
    }
    return state;
  }

  /** A held job's deadline passed before a slot freed: expired (fenced) instead of run. */
  private async expire(job: ActiveJob): Promise<FinishResult> {
    try {
      const applied = await this.o.database.jobs.expireHeld({ id: job.row.id, token: job.row.lease_token });
      if (!applied) return 'not-written';
      this.expiredAtClaim(job.row);
      return 'expired';
    } catch (err) {
      // Not written: the lease lapses and the rescuer returns the job; expiry then catches it.
      this.o.onError('expire', err);
      return 'unrecorded';
    } finally {
      this.o.active.remove(job);
    }
  }

  private leaseLostEvent(job: ActiveJob, why: string): void {
    const r = job.row;
    if (this.o.events.active) this.o.events.emit({ type: 'job.lease-lost', jobId: r.id, kind: r.kind, queue: r.queue, attempt: r.attempt, why });
  }

  private refused(job: ActiveJob, operation: string): void {
    const row = job.row;
    // A cancelled job or one whose lease was lost is expected to refuse the late write.
    if (job.cause === 'cancelled') return;
    this.o.logger.warn({ jobId: row.id, kind: row.kind, token: row.lease_token, operation }, 'write refused: the lease token is stale (the job was rescued, cancelled or re-claimed); result dropped');
    if (this.o.events.active) {
      this.o.events.emit({ type: 'job.refused', jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt, operation, token: row.lease_token });
    }
  }
}

/** The fields of a job's events: its ids, and its trace id when it carries one (so log lines join the trace). */
export function jobFields(row: ClaimedRow): JobEventFields {
  const traceId = traceIdOf(row.trace_context);
  return { jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt, ...(traceId ? { traceId } : {}) };
}
