/** Errors of jobs and their runs, and of a stopped client. */
import { NightshiftError } from './base.js';

/** No job with that id. */
export class JobNotFoundError extends NightshiftError {
  constructor(id: string) {
    super('NS_JOB_NOT_FOUND', `no job with id ${id}`, { hint: 'check the id with `nightshift jobs list`' });
  }
}

/** An admin action does not apply to the job's current state (retrying a running job, …). */
export class InvalidTransitionError extends NightshiftError {
  constructor(id: string, action: string, state: string, allowed: readonly string[]) {
    super('NS_INVALID_TRANSITION', `cannot ${action} job ${id}: it is ${state}`, {
      hint: `${action} applies to jobs that are ${allowed.join(', ')}`,
    });
  }
}

/** An operator's retry would make a job available while another job holds its `active`-scope dedupe key. */
export class DedupeConflictError extends NightshiftError {
  readonly holder: string;
  constructor(id: string, holder: string) {
    super('NS_DEDUPE_CONFLICT', `cannot retry job ${id}: job ${holder} is pending or running with the same dedupe key (scope 'active')`, {
      hint: `let job ${holder} finish (or cancel it), then retry; the 'active' scope allows one pending or running job per key`,
    });
    this.holder = holder;
  }
}

/** The client was stopped; it takes no more work. */
export class StoppedError extends NightshiftError {
  constructor(what: string) {
    super('NS_STOPPED', `${what}: the nightshift client is stopped`, {
      hint: 'create a new client, or do the work before calling stop()',
    });
  }
}

/** A job ran past its `timeoutMs`; stored in the job's error history. */
export class JobTimeoutError extends NightshiftError {
  constructor(timeoutMs: number) {
    super('NS_JOB_TIMEOUT', `job ran past its timeout of ${timeoutMs} ms and was aborted`);
  }
}

/** The worker lost a job's lease (rescued, cancelled or taken by a newer claim). */
export class LeaseLostError extends NightshiftError {
  constructor(id: string, why: string) {
    super('NS_LEASE_LOST', `lease on job ${id} lost: ${why}`);
  }
}

/** The job was cancelled while it ran; its abort signal carries this reason. */
export class JobCancelledError extends NightshiftError {
  constructor(id: string) {
    super('NS_JOB_CANCELLED', `job ${id} was cancelled while it ran`);
  }
}

/** The worker is shutting down and its grace period is over; its abort signal carries this reason. */
export class ShutdownError extends NightshiftError {
  constructor(graceMs: number) {
    super('NS_SHUTDOWN', `worker shutting down: the job did not finish within the ${graceMs} ms grace period`);
  }
}

/** `drain` (nightshift/testing) ran its `maxJobs` and jobs were still due. */
export class DrainLimitError extends NightshiftError {
  constructor(
    readonly maxJobs: number,
    /** What ran before the limit, in order. */
    readonly ran: readonly { jobId: string; kind: string; status: string }[],
  ) {
    const byKind = new Map<string, number>();
    for (const r of ran) byKind.set(r.kind, (byKind.get(r.kind) ?? 0) + 1);
    const kinds = [...byKind]
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} × ${n}`)
      .join(', ');
    super('NS_DRAIN_LIMIT', `drain ran ${maxJobs} jobs and more were still due (ran: ${kinds})`, {
      hint: 'a job that enqueues itself without end never drains: fix the job, or pass a larger maxJobs for a long chain',
    });
  }
}
