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

/** The delay in ms before retrying after failed attempt number `attempt` (1-based). */
export function backoffDelay(backoff: Backoff | undefined, attempt: number, error: unknown, random = Math.random): number {
  if (typeof backoff === 'function') {
    const ms = backoff(attempt, error);
    return Number.isFinite(ms) && ms >= 0 ? ms : 0;
  }
  const initial = backoff?.initialMs ?? 1_000;
  const factor = backoff?.factor ?? 2;
  const max = backoff?.maxMs ?? 3_600_000;
  const jitter = backoff?.jitter ?? 0.25;
  const base = Math.min(max, initial * factor ** Math.max(0, attempt - 1));
  // Equal jitter: keep (1 - jitter) of the delay, randomise the rest, so retries of many jobs
  // that failed together spread out without any waiting less than most of its delay.
  return Math.round(base * (1 - jitter) + base * jitter * random());
}
