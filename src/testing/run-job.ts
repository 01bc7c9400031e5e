import { OptionsInvalidError } from '../errors.js';
import type { JobDefinition } from '../jobs/define-job.js';
import type { EnqueueOptions } from '../jobs/enqueue-options.js';
import type { PayloadSchema, SchemaInput } from '../jobs/standard-schema.js';
import type { Nightshift } from '../runtime/nightshift.js';
import { InlineRunner, type JobOutcome } from './inline-runner.js';

/** Options of {@link runJob}: how the job is enqueued (queue, priority, maxAttempts, …) and run. */
export interface RunJobOptions extends Omit<EnqueueOptions, 'db' | 'runAt' | 'delayMs' | 'dedupeKey' | 'debounceMs'> {
  /**
   * The attempt to run, 1 for the first. Default 1. `attempt: job.maxAttempts` runs the last
   * attempt, where a thrown error discards the job instead of scheduling a retry.
   */
  attempt?: number;
  /** Aborting it aborts the handler's `ctx.signal` with its reason (as a cancel or a shutdown would). */
  signal?: AbortSignal;
}

/**
 * Runs one job's handler now, in this process, with the context a worker gives it — a real job
 * row and lease (so `ctx.jobId`, `ctx.leaseToken` and `ctx.heartbeat()` are real), the client's
 * pool as `ctx.db`, a real `ctx.enqueue`, `ctx.log` kept with the job, `ctx.signal` aborted on
 * timeout — and returns how it ended, as the worker records it. The job is enqueued first
 * (its payload validated as any enqueue's), then claimed by id, whatever is due before it;
 * jobs it enqueues stay in the queue for {@link drain} or {@link enqueued}. `job` may be a
 * definition the client does not define. The client need not be started.
 */
export async function runJob<S extends PayloadSchema>(ns: Nightshift, job: JobDefinition<S> | string, payload: SchemaInput<S>, options: RunJobOptions = {}): Promise<JobOutcome> {
  const { attempt, signal, ...enqueue } = options;
  if (attempt !== undefined && !(Number.isInteger(attempt) && attempt >= 1 && attempt <= 1_000)) {
    throw new OptionsInvalidError('runJob options', [{ path: 'attempt', message: 'must be an integer from 1 to 1000' }]);
  }
  const runner = new InlineRunner(ns, typeof job === 'string' ? [] : [job as JobDefinition]);
  try {
    const { id } = await runner.kit.enqueuer.enqueue(job as JobDefinition | string, payload, enqueue);
    const db = runner.kit.database;
    const row = await db.testJobs.claimById({ id, owner: runner.owner, leaseMs: ns.options.leaseMs, attempt });
    if (!row) throw new Error(`runJob: job ${id} was not available to run (taken by a running worker of the same schema?)`);
    return await runner.run(row, signal);
  } finally {
    await runner.close();
  }
}
