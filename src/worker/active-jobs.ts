import type { ClaimedRow } from '../db/jobs-run.js';

/** Why a running job's signal was aborted. */
export type AbortCause = 'timeout' | 'cancelled' | 'lease-lost' | 'shutdown';

/** A job whose lease this process holds, from claim until its outcome is written. */
export interface ActiveJob {
  readonly row: ClaimedRow;
  readonly controller: AbortController;
  /** The handler was called. */
  started: boolean;
  /** The outcome is decided (and being or already written): a late handler result is ignored. */
  finished: boolean;
  cause: AbortCause | undefined;
  /** `performance.now()` when the handler started. */
  startedAt: number;
  /**
   * `performance.now()` after which the job must not start (its `expires_at`, measured from before
   * the claim was sent, so never later than the database's deadline); undefined without one.
   */
  deadline: number | undefined;
}

/** The leases this process holds, by job id. */
export class ActiveJobs {
  private readonly byId = new Map<string, ActiveJob>();

  add(row: ClaimedRow): ActiveJob {
    const job: ActiveJob = { row, controller: new AbortController(), started: false, finished: false, cause: undefined, startedAt: 0, deadline: undefined };
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
