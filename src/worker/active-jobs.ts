import type { ClaimedRow } from '../db/jobs-run.js';
import { systemClock, type Clock } from '../lifecycle/clock.js';
import type { JobLog } from './job-log.js';
import type { JobProgress } from './job-progress.js';
import type { EndCause } from './outcomes.js';

/** Why a running job's signal was aborted. */
export type AbortCause = 'timeout' | 'cancelled' | 'lease-lost' | 'shutdown';

/** A job whose lease this process holds, from claim until its outcome is written. */
export class ActiveJob {
  /** The handler was called. */
  started = false;
  /** Why the handler's signal was aborted, if it was. */
  cause: AbortCause | undefined = undefined;
  private ended: EndCause | undefined = undefined;
  /** The monotonic clock's time when the handler started. */
  startedAt = 0;
  /**
   * The monotonic clock's time after which the job must not start (its `expires_at`, measured from before
   * the claim was sent, so never later than the database's deadline); undefined without one.
   */
  deadline: number | undefined = undefined;
  /** What the handler logged with `ctx.log` (made on first use), written with the job when the attempt ends. */
  log: JobLog | undefined = undefined;
  /** What the handler reported with `ctx.progress` (made on first use). */
  progress: JobProgress | undefined = undefined;
  /** Set by the worker while the handler runs: called when the job's outcome is decided without it (see `abort`). */
  onAbort: (() => void) | undefined = undefined;
  private controller_: AbortController | undefined;

  /**
   * @param row the claim's row.
   * @param claimedAt the monotonic clock's time when the claim that took it returned (its `waited_ms` was measured just before).
   */
  constructor(
    readonly row: ClaimedRow,
    readonly claimedAt: number,
  ) {}

  /** Made on first use: most handlers never look at their signal, and one per job costs (bench/NOTES.md). */
  get controller(): AbortController {
    return (this.controller_ ??= new AbortController());
  }

  /** The outcome is decided (and being or already written): a late handler result is ignored. */
  get finished(): boolean {
    return this.ended !== undefined;
  }

  /** How the job's end was decided, once it was. */
  get end(): EndCause | undefined {
    return this.ended;
  }

  /**
   * Records that the job's end is decided, by `cause`; false when it already was (the first cause
   * wins). Only the outcome writer (Outcomes) calls it: it is where an end is decided and written.
   */
  settle(cause: EndCause): boolean {
    if (this.ended !== undefined) return false;
    this.ended = cause;
    return true;
  }

  /**
   * Aborts the handler's signal with `reason`; for a job whose end was decided without its
   * handler (timeout, cancel, lost lease), the worker's `onAbort` then starts the handler's grace.
   */
  abortSignal(cause: Exclude<AbortCause, 'shutdown'>, reason: unknown): void {
    this.cause = cause;
    this.controller.abort(reason);
    this.onAbort?.();
  }

  /**
   * Shutdown, past its grace period: the handler's signal aborts with `reason`, but nothing is
   * decided — a handler that returns now still has its result written; one that does not is
   * handed back.
   */
  interrupt(reason: unknown): void {
    if (this.finished) return;
    this.cause = 'shutdown';
    this.controller.abort(reason);
  }
}

/** The leases this process holds, by job id. */
export class ActiveJobs {
  private readonly byId = new Map<string, ActiveJob>();

  constructor(private readonly clock: Clock = systemClock) {}

  add(row: ClaimedRow): ActiveJob {
    const job = new ActiveJob(row, this.clock.monotonic());
    this.byId.set(row.id, job);
    return job;
  }

  get(id: string): ActiveJob | undefined {
    return this.byId.get(id);
  }

  /** Forgets a job, but only the claim given (a newer claim of the same id stays). */
  remove(job: ActiveJob): void {
    if (this.byId.get(job.row.id) === job) this.byId.delete(job.row.id);
  }

  get size(): number {
    return this.byId.size;
  }

  all(): ActiveJob[] {
    return [...this.byId.values()];
  }
}
