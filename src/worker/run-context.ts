import type { Database } from '../db/database.js';
import type { Executor } from '../db/executor.js';
import { LeaseLostError } from '../errors.js';
import type { JobContext, JobDefinition, JobLogger } from '../jobs/define-job.js';
import type { EnqueueOptions, EnqueueResult } from '../jobs/enqueue-options.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import type { PayloadSchema, SchemaInput } from '../jobs/standard-schema.js';
import type { Logger } from '../telemetry/logger.js';
import type { ActiveJob } from './active-jobs.js';
import { JobLog } from './job-log.js';
import { JobProgress, progressJson } from './job-progress.js';

/** What every job's context shares: one per worker. */
export interface RunContextShared {
  db: Database;
  logger: Logger;
  enqueuer: Enqueuer;
  leaseMs: number;
  /** Keys redacted from the fields of lines kept with the job. */
  redact: ReadonlySet<string>;
  leaseLost(job: ActiveJob, why: string): void;
  onError(where: string, err: unknown): void;
}

/** The trace id of a stored W3C trace context (`traceparent` = version-traceid-spanid-flags). */
export function traceIdOf(tc: Record<string, string> | null): string | undefined {
  const tp = tc?.traceparent;
  return typeof tp === 'string' && tp.length === 55 ? tp.slice(3, 35) : undefined;
}

/**
 * The context a handler receives. A class rather than an object of closures: one small object per
 * job, with the signal and the logger made only when the handler asks for them.
 */
export class RunContext implements JobContext {
  constructor(
    private readonly shared: RunContextShared,
    private readonly job: ActiveJob,
  ) {}

  get jobId(): string {
    return this.job.row.id;
  }
  get kind(): string {
    return this.job.row.kind;
  }
  get queue(): string {
    return this.job.row.queue;
  }
  get attempt(): number {
    return this.job.row.attempt;
  }
  get maxAttempts(): number {
    return this.job.row.max_attempts;
  }
  get leaseToken(): string {
    return this.job.row.lease_token;
  }
  get signal(): AbortSignal {
    return this.job.controller.signal;
  }
  get db(): Executor {
    return this.shared.db.executor;
  }
  get traceId(): string | undefined {
    return traceIdOf(this.job.row.trace_context);
  }
  /** Logs through the process logger and keeps the lines with the job (bounded; see JobLog). */
  get log(): JobLogger {
    const r = this.job.row;
    const traceId = this.traceId;
    return (this.job.log ??= new JobLog(this.shared.logger, { jobId: r.id, kind: r.kind, queue: r.queue, attempt: r.attempt, ...(traceId ? { traceId } : {}) }, this.shared.redact));
  }

  async transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    const { job, shared } = this;
    const row = job.row;
    if (job.finished) throw new LeaseLostError(row.id, job.cause ?? 'the job already finished');
    return shared.db.transaction(async (tx) => {
      const result = await fn(tx);
      if (!(await shared.db.jobs.fence({ tx, id: row.id, token: row.lease_token }))) {
        throw new LeaseLostError(row.id, 'the lease was no longer held when the transaction was to commit; it was rolled back');
      }
      return result;
    });
  }

  progress(value: unknown): void {
    const json = progressJson(value);
    const { job, shared } = this;
    job.progress ??= new JobProgress(shared.db, job.row.id, job.row.lease_token, (err) => shared.onError('progress', err));
    job.progress.set(json);
  }

  async heartbeat(): Promise<void> {
    const { job, shared } = this;
    const row = job.row;
    if (job.finished) throw new LeaseLostError(row.id, job.cause ?? 'the job already finished');
    const held = await shared.db.jobs.heartbeat({ ids: [row.id], tokens: [row.lease_token], leaseMs: shared.leaseMs });
    if (!held.has(row.lease_token)) {
      shared.leaseLost(job, 'heartbeat found the lease taken');
      throw new LeaseLostError(row.id, 'heartbeat found the lease taken');
    }
  }

  enqueue<S extends PayloadSchema>(job: JobDefinition<S> | string, payload: SchemaInput<S>, options?: EnqueueOptions): Promise<EnqueueResult> {
    return this.shared.enqueuer.enqueue(job as JobDefinition | string, payload, options);
  }
}
