import { performance } from 'node:perf_hooks';

/** A pending timer of a {@link Clock}: opaque, given back to `clearTimeout`. */
export type Timer = { readonly __timer: unique symbol };

/**
 * Where a service reads time and sets its timers. Production uses {@link systemClock}; a test may
 * pass a clock it moves by hand, so timing logic (back-off, deadlines, poll intervals) can be
 * tested without waiting for real time to pass. Time written to the database is never taken from
 * here: a job's times are the database clock's.
 */
export interface Clock {
  /** Milliseconds on a monotonic clock (`performance.now()`): for durations and deadlines; never jumps. */
  monotonic(): number;
  /** Milliseconds since the epoch on the wall clock (`Date.now()`): for timestamps and rate limits shown to people. */
  wall(): number;
  /**
   * Calls `fn` once `ms` have passed on the monotonic clock. With `unref`, the timer does not keep
   * the process alive by itself (a hint that can wait for the next real event).
   */
  setTimeout(fn: () => void, ms: number, options?: { unref?: boolean }): Timer;
  /** Cancels a timer; safe with undefined, twice, and after it fired. */
  clearTimeout(timer: Timer | undefined): void;
}

/** The real clock: `performance.now()`, `Date.now()` and Node's timers (no wrapper object per timer). */
export const systemClock: Clock = Object.freeze({
  monotonic: () => performance.now(),
  wall: () => Date.now(),
  setTimeout(fn: () => void, ms: number, options?: { unref?: boolean }): Timer {
    const t = setTimeout(fn, ms);
    if (options?.unref) t.unref();
    return t as unknown as Timer;
  },
  clearTimeout(timer: Timer | undefined): void {
    if (timer !== undefined) clearTimeout(timer as unknown as NodeJS.Timeout);
  },
});

/** Resolves after `ms` on `clock`, or at once when `signal` aborts (a sleep that shutdown can cut short). */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (ms <= 0 || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clock.clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
