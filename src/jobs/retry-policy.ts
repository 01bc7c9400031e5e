/** How long to wait before the next attempt, by exponential back-off with jitter or by your own rule. */
export type Backoff =
  | {
      /** Delay before the second attempt. Default 1000 ms. */
      initialMs?: number;
      /** Growth per attempt. Default 2. */
      factor?: number;
      /** Upper bound of the delay. Default 1 hour. */
      maxMs?: number;
      /** Fraction of the delay that is randomised, 0 to 1. Default 0.25. */
      jitter?: number;
    }
  | ((attempt: number, error: unknown) => number);

/**
 * The longest delay before a retry: 100 years, like the longest enqueue delay. A larger one (a
 * custom back-off gone wild, `retryAfter(Infinity)`) is cut to it: the database's time arithmetic
 * would overflow, the write fail, and the job be re-run at once (issue 11, bug 7).
 */
export const MAX_RETRY_DELAY_MS = 100 * 365 * 24 * 3_600_000;

/** A delay as the database can store it: NaN and negatives are 0, anything above the maximum is the maximum. */
export function clampDelay(ms: number): number {
  if (Number.isNaN(ms) || ms <= 0) return 0;
  return Math.min(ms, MAX_RETRY_DELAY_MS);
}

/** The delay in ms before retrying after failed attempt number `attempt` (1-based). */
export function backoffDelay(backoff: Backoff | undefined, attempt: number, error: unknown, random = Math.random): number {
  if (typeof backoff === 'function') return clampDelay(Number(backoff(attempt, error)));
  const initial = backoff?.initialMs ?? 1_000;
  const factor = backoff?.factor ?? 2;
  const max = backoff?.maxMs ?? 3_600_000;
  const jitter = backoff?.jitter ?? 0.25;
  const base = Math.min(max, initial * factor ** Math.max(0, attempt - 1));
  // Equal jitter: keep (1 - jitter) of the delay, randomise the rest, so retries of many jobs
  // that failed together spread out without any waiting less than most of its delay.
  return clampDelay(Math.round(base * (1 - jitter) + base * jitter * random()));
}
