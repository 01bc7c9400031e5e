import { performance } from 'node:perf_hooks';
import type { Database } from '../db/database.js';
import { jobFail, jobHeartbeat } from '../db/jobs-run.js';
import { JobTimeoutError, LeaseLostError } from '../errors.js';
import type { JobContext, JobDefinition, JobLogger } from '../jobs/define-job.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import { decideFailure } from '../jobs/failure-policy.js';
import { isJobControl } from '../jobs/job-control.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { parsePayload } from '../jobs/payload.js';
import type { EventBus } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import type { ActiveJob, ActiveJobs } from './active-jobs.js';
import type { Completer } from './completer.js';

/** What became of a run, for the worker's bookkeeping. */
export type RunEnd = 'recorded' | 'interrupted';

/**
 * Runs one claimed job: validates its payload, calls the handler with its context under the
 * timeout, and writes the outcome fenced by the lease token. A job whose outcome was already
 * decided elsewhere (timeout, cancel, lost lease) has its late result ignored; a job interrupted by
 * shutdown is left for the worker to hand back.
 */
export class JobRunner {
  constructor(
    private readonly db: Database,
    private readonly registry: JobRegistry,
    private readonly active: ActiveJobs,
    private readonly completer: Completer,
    private readonly enqueuer: Enqueuer,
    private readonly events: EventBus,
    private readonly logger: Logger,
    private readonly leaseMs: number,
  ) {}

  async run(job: ActiveJob): Promise<RunEnd> {
    const row = job.row;
    const def = this.registry.get(row.kind) as JobDefinition;
    job.started = true;
    job.startedAt = performance.now();
    if (this.events.active) {
      this.events.emit({ type: 'job.started', jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt, waitMs: Date.now() - row.run_at.getTime() });
    }
    let timer: NodeJS.Timeout | undefined;
    if (def.timeoutMs !== undefined) {
      timer = setTimeout(() => this.onTimeout(job, def), def.timeoutMs);
    }
    let result: unknown;
    let error: unknown;
    let threw = false;
    try {
      const payload = await parsePayload(row.kind, def.schema, row.payload);
      result = await def.run(payload, this.context(job));
    } catch (err) {
      threw = true;
      error = err;
    } finally {
      clearTimeout(timer);
    }
    if (job.finished) return 'recorded';
    if (job.cause === 'shutdown' && (threw || isJobControl(result))) return 'interrupted';
    job.finished = true;
    if (threw || isJobControl(result)) await this.fail(job, def, threw ? error : result, 'error');
    else await this.complete(job);
    return 'recorded';
  }

  private async complete(job: ActiveJob): Promise<void> {
    const row = job.row;
    const applied = await this.completer.complete(row.id, row.lease_token);
    this.active.remove(job);
    if (applied) {
      if (this.events.active) {
        this.events.emit({ type: 'job.completed', jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt, durationMs: performance.now() - job.startedAt });
      }
    } else this.refused(job, 'complete');
  }

  /** Writes a failed attempt; used for handler errors and timeouts. */
  private async fail(job: ActiveJob, def: JobDefinition, err: unknown, kind: 'error' | 'timeout'): Promise<void> {
    const row = job.row;
    const outcome = decideFailure(def, row.attempt, row.max_attempts, err, kind);
    let applied = false;
    try {
      applied = await jobFail(this.db.pool.pool, this.db.run, row.id, row.lease_token, outcome);
    } catch (writeErr) {
      // The lease lapses and the rescuer takes the job back; nothing is lost.
      this.events.emit({ type: 'worker.error', where: 'record failure', error: String(writeErr) });
      this.active.remove(job);
      return;
    }
    this.active.remove(job);
    if (!applied) return this.refused(job, 'fail');
    if (!this.events.active) return;
    const base = { jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt };
    if (outcome.state === 'held') this.events.emit({ type: 'job.held', ...base, reason: outcome.reason ?? '' });
    else {
      this.events.emit({
        type: 'job.failed',
        ...base,
        durationMs: performance.now() - job.startedAt,
        error: outcome.error.message,
        willRetry: outcome.state === 'available',
        delayMs: outcome.delayMs,
      });
      if (outcome.state === 'discarded') this.events.emit({ type: 'job.discarded', ...base, reason: outcome.reason ?? '' });
    }
  }

  private onTimeout(job: ActiveJob, def: JobDefinition): void {
    if (job.finished) return;
    job.finished = true;
    job.cause = 'timeout';
    const err = new JobTimeoutError(def.timeoutMs ?? 0);
    job.controller.abort(err);
    void this.fail(job, def, err, 'timeout');
  }

  private refused(job: ActiveJob, operation: string): void {
    const row = job.row;
    // A cancelled job or one whose lease was lost is expected to refuse the late write.
    if (job.cause === 'cancelled') return;
    this.logger.warn(
      { jobId: row.id, kind: row.kind, token: row.lease_token, operation },
      'write refused: the lease token is stale (the job was rescued, cancelled or re-claimed); result dropped',
    );
    if (this.events.active) {
      this.events.emit({ type: 'job.refused', jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt, operation, token: row.lease_token });
    }
  }

  /** Marks a job as lost (heartbeat found its lease gone) and aborts its handler. */
  leaseLost(job: ActiveJob, why: string): void {
    if (job.finished) return;
    job.finished = true;
    job.cause = 'lease-lost';
    job.controller.abort(new LeaseLostError(job.row.id, why));
    this.active.remove(job);
    const row = job.row;
    if (this.events.active) this.events.emit({ type: 'job.lease-lost', jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt, why });
  }

  private context(job: ActiveJob): JobContext {
    const row = job.row;
    const logger = this.logger;
    const db = this.db;
    const leaseMs = this.leaseMs;
    const lost = (why: string) => this.leaseLost(job, why);
    let log: JobLogger | undefined;
    return {
      jobId: row.id,
      kind: row.kind,
      queue: row.queue,
      attempt: row.attempt,
      maxAttempts: row.max_attempts,
      leaseToken: row.lease_token,
      signal: job.controller.signal,
      db: this.db.pool.pool,
      get log() {
        log ??= logger.child({ jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt });
        return log;
      },
      async heartbeat() {
        if (job.finished) throw new LeaseLostError(row.id, job.cause ?? 'the job already finished');
        const held = await jobHeartbeat(db.pool.pool, db.run, [row.id], [row.lease_token], leaseMs);
        if (!held.has(row.id)) {
          lost('heartbeat found the lease taken');
          throw new LeaseLostError(row.id, 'heartbeat found the lease taken');
        }
      },
      enqueue: (jobOrKind, payload, options) => this.enqueuer.enqueue(jobOrKind as JobDefinition | string, payload, options),
    };
  }
}
