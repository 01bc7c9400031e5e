import { performance } from 'node:perf_hooks';
import type { Database } from '../db/database.js';
import { jobFail } from '../db/jobs-run.js';
import { JobTimeoutError, LeaseLostError } from '../errors.js';
import type { JobDefinition } from '../jobs/define-job.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import { decideFailure } from '../jobs/failure-policy.js';
import { isJobControl } from '../jobs/job-control.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { parsePayload } from '../jobs/payload.js';
import { workerError, type EventBus } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import type { ActiveJob, ActiveJobs } from './active-jobs.js';
import type { Completer } from './completer.js';
import { RunContext, traceIdOf, type RunContextShared } from './run-context.js';
import type { ClaimedRow } from '../db/jobs-run.js';
import type { JobEventFields } from '../telemetry/events.js';
import type { StartMarks } from './start-marks.js';
import { jobLogInsert, jobLogStatements, type JobLogStatements } from '../db/job-logs.js';
import { endConsumerSpan, startConsumerSpan, withContext } from '../telemetry/tracing.js';
import { DEFAULT_REDACT } from '../telemetry/logger.js';

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
    private readonly marks: StartMarks,
    redact: ReadonlySet<string> = new Set(DEFAULT_REDACT),
    private readonly errorMessages = false,
  ) {
    this.shared = {
      db,
      logger,
      enqueuer,
      leaseMs,
      redact,
      leaseLost: (job, why) => this.leaseLost(job, why),
      onError: (where, err) => this.events.emit(workerError(where, err)),
    };
    this.logs = jobLogStatements(db.statements);
  }

  private readonly logs: JobLogStatements;

  /** Called when an attempt was written back for a retry after `delayMs`, so the worker can claim it then. */
  onRetry: ((queue: string, delayMs: number) => void) | undefined = undefined;

  private readonly shared: RunContextShared;

  /**
   * Runs the job; `handlerDone` is called as soon as the handler has returned (or thrown), before
   * its outcome is written, so the caller can give the concurrency slot to the next job while the
   * write is batched. The job keeps its lease (and heartbeats) until the write lands.
   */
  async run(job: ActiveJob, handlerDone: () => void = () => undefined): Promise<RunEnd> {
    const row = job.row;
    const def = this.registry.get(row.kind) as JobDefinition;
    if (row.at_most_once) {
      // The start is committed before the handler runs (see StartMarks).
      const mark = await this.marks.mark(job);
      if (job.finished) {
        handlerDone();
        return 'recorded';
      }
      if (mark !== 'started') {
        handlerDone();
        if (mark === 'failed') return 'interrupted'; // handed back unrun
        job.finished = true;
        this.active.remove(job);
        this.refused(job, 'start');
        return 'recorded';
      }
    }
    job.started = true;
    job.startedAt = performance.now();
    if (this.events.wants('job.started')) {
      this.events.emit({ type: 'job.started', ...jobFields(row), waitMs: row.waited_ms + (job.startedAt - job.claimedAt) });
    }
    let timer: NodeJS.Timeout | undefined;
    if (def.timeoutMs !== undefined) {
      timer = setTimeout(() => this.onTimeout(job, def), def.timeoutMs);
    }
    let result: unknown;
    let error: unknown;
    let threw = false;
    // The consumer span continues the trace stored at enqueue, in whatever process runs the job.
    const trace = startConsumerSpan({ id: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt, traceContext: row.trace_context });
    try {
      const payload = await parsePayload(row.kind, def.schema, row.payload);
      const ctx = new RunContext(this.shared, job);
      result = await withContext(trace.context, () => def.run(payload, ctx));
    } catch (err) {
      threw = true;
      error = err;
    } finally {
      clearTimeout(timer);
      handlerDone();
    }
    if (job.log) await this.writeLog(job);
    if (job.progress) await job.progress.flush();
    if (job.finished) {
      endConsumerSpan(trace.span, job.cause ?? 'finished', threw ? error : undefined, this.errorMessages);
      return 'recorded';
    }
    if (job.cause === 'shutdown' && (threw || isJobControl(result))) {
      endConsumerSpan(trace.span, 'interrupted', threw ? error : undefined, this.errorMessages);
      return 'interrupted';
    }
    job.finished = true;
    if (threw || isJobControl(result)) {
      const outcome = await this.fail(job, def, threw ? error : result, 'error');
      endConsumerSpan(trace.span, outcome, threw && !isJobControl(error) ? error : undefined, this.errorMessages);
    } else {
      await this.complete(job);
      endConsumerSpan(trace.span, 'completed');
    }
    return 'recorded';
  }

  /** Writes what the handler logged; a failure to write costs the lines, never the job. */
  private async writeLog(job: ActiveJob): Promise<void> {
    const lines = job.log!.take();
    job.log = undefined;
    try {
      await jobLogInsert(this.db.pool.pool, this.logs, job.row.id, job.row.attempt, lines);
    } catch (err) {
      this.events.emit(workerError('job log', err));
    }
  }

  private async complete(job: ActiveJob): Promise<void> {
    const row = job.row;
    const applied = await this.completer.complete(row.id, row.lease_token);
    this.active.remove(job);
    if (applied) {
      if (this.events.wants('job.completed')) {
        this.events.emit({ type: 'job.completed', ...jobFields(row), durationMs: performance.now() - job.startedAt });
      }
    } else this.refused(job, 'complete');
  }

  /** Writes a failed attempt (handler errors and timeouts); returns the state it led to. */
  private async fail(job: ActiveJob, def: JobDefinition, err: unknown, kind: 'error' | 'timeout'): Promise<string> {
    const row = job.row;
    const outcome = decideFailure(def, row.attempt, row.max_attempts, err, kind);
    let applied = false;
    try {
      applied = await jobFail(this.db.pool.pool, this.db.run, row.id, row.lease_token, outcome);
    } catch (writeErr) {
      // The lease lapses and the rescuer takes the job back; nothing is lost.
      this.events.emit(workerError('record failure', writeErr));
      this.active.remove(job);
      return 'unrecorded';
    }
    this.active.remove(job);
    if (!applied) {
      this.refused(job, 'fail');
      return 'refused';
    }
    const state = outcome.state === 'available' ? 'retry' : outcome.state;
    if (outcome.state === 'available') this.onRetry?.(row.queue, outcome.delayMs);
    if (!this.events.active) return state;
    const base = jobFields(row);
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
      if (outcome.state === 'available') this.events.emit({ type: 'job.retried', ...base, delayMs: outcome.delayMs });
      if (outcome.state === 'discarded') this.events.emit({ type: 'job.discarded', ...base, reason: outcome.reason ?? '' });
    }
    return state;
  }

  private onTimeout(job: ActiveJob, def: JobDefinition): void {
    const err = new JobTimeoutError(def.timeoutMs ?? 0);
    if (job.abort('timeout', err)) void this.fail(job, def, err, 'timeout');
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
    if (!job.abort('lease-lost', new LeaseLostError(job.row.id, why))) return;
    this.active.remove(job);
    const row = job.row;
    if (this.events.active) this.events.emit({ type: 'job.lease-lost', jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt, why });
  }
}

/** The fields of a job's events: its ids, and its trace id when it carries one (so log lines join the trace). */
function jobFields(row: ClaimedRow): JobEventFields {
  const traceId = traceIdOf(row.trace_context);
  return { jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt, ...(traceId ? { traceId } : {}) };
}
