const CONTROL = Symbol.for('nightshift.job-control');

/**
 * Explicit results a handler returns (or throws) to steer its job, instead of magic strings:
 * retry after a delay, discard with a reason, or hold for an operator's decision.
 */
export abstract class JobControl extends Error {
  abstract readonly action: 'retry' | 'discard' | 'hold';
  /** A brand recognised across copies of nightshift (a config file loaded through tsx gets its own copy). */
  readonly [CONTROL] = true;
}

/** Whether a handler's result (or what it threw) is an explicit control result, from any copy of nightshift. */
export function isJobControl(value: unknown): value is RetryAfter | Discard | Hold {
  if (typeof value !== 'object' || value === null) return false;
  try {
    return (value as { [CONTROL]?: unknown })[CONTROL] === true;
  } catch {
    // A proxy whose traps throw is no control result; it must not break the job's bookkeeping.
    return false;
  }
}

/** Retry the job after `delayMs` (the attempt counts, but an extra one is granted if none is left). */
export class RetryAfter extends JobControl {
  readonly action = 'retry' as const;
  constructor(
    readonly delayMs: number,
    reason = `retry requested in ${delayMs} ms`,
  ) {
    super(reason);
    this.name = 'RetryAfter';
  }
}

/** Discard the job now, with a reason; it is not retried. */
export class Discard extends JobControl {
  readonly action = 'discard' as const;
  constructor(reason: string) {
    super(reason);
    this.name = 'Discard';
  }
}

/** Hold the job for manual review (seed 002's MANUAL_REVIEW); an operator resolves it. */
export class Hold extends JobControl {
  readonly action = 'hold' as const;
  constructor(reason: string) {
    super(reason);
    this.name = 'Hold';
  }
}

/** Ask for a retry after `delayMs`. Return or throw the result. */
export function retryAfter(delayMs: number, reason?: string): RetryAfter {
  return new RetryAfter(delayMs, reason);
}

/** Discard the job with a reason. Return or throw the result. */
export function discard(reason: string): Discard {
  return new Discard(reason);
}

/** Hold the job for manual review. Return or throw the result. */
export function hold(reason: string): Hold {
  return new Hold(reason);
}
