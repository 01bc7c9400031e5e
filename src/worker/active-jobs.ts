import { performance } from 'node:perf_hooks';
import type { ClaimedRow } from '../db/jobs-run.js';
import type { JobLog } from './job-log.js';
import type { JobProgress } from './job-progress.js';

/** Why a running job's signal was aborted. */
export type AbortCause = 'timeout' | 'cancelled' | 'lease-lost' | 'shutdown';

/** A job whose lease this process holds, from claim until its outcome is written. */
export class ActiveJob {
  /** The handler was called. */
  started = false;
  /** The outcome is decided (and being or already written): a late handler result is ignored. */
  finished = false;
  cause: AbortCause | undefined = undefined;
  /** `performance.now()` when the handler started. */
  startedAt = 0;
  /** `performance.now()` when the claim that took it returned (its `waited_ms` was measured just before). */
  readonly claimedAt = performance.now();
  /**
   * `performance.now()` after which the job must not start (its `expires_at`, measured from before
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

  constructor(readonly row: ClaimedRow) {}

  /** Made on first use: most handlers never look at their signal, and one per job costs (bench/NOTES.md). */
  get controller(): AbortController {
    return (this.controller_ ??= new AbortController());
  }

  /**
   * Decides the job's end without its handler (timeout, cancel, lost lease, shutdown): a late
   * result is ignored from now on, and the handler's signal aborts with `reason`. Returns false
   * when the end was already decided.
   */
  abort(cause: AbortCause, reason: unknown): boolean {
    if (this.finished) return false;
    this.finished = true;
    this.cause = cause;
    this.controller.abort(reason);
    this.onAbort?.();
    return true;
  }
}

/** The leases this process holds, by job id. */
export class ActiveJobs {
  private readonly byId = new Map<string, ActiveJob>();

  add(row: ClaimedRow): ActiveJob {
    const job = new ActiveJob(row);
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
