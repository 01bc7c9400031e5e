import type { FailOutcome } from '../db/jobs-run.js';
import { PayloadInvalidError } from '../errors.js';
import type { JobDefinition } from './define-job.js';
import { describeError } from './error-text.js';
import { isJobControl } from './job-control.js';
import { backoffDelay, clampDelay } from './retry-policy.js';

/**
 * Decides what a failed attempt leads to. Explicit results win (retry after, discard, hold); an
 * invalid payload is discarded (retrying cannot fix it); an at-most-once job is not retried after it
 * threw, since it may have acted; otherwise the attempt is retried with back-off until
 * `maxAttempts`, then discarded with its history.
 */
export function decideFailure(def: JobDefinition, attempt: number, maxAttempts: number, err: unknown, errorKind: 'error' | 'timeout' = 'error'): FailOutcome {
  const at = new Date().toISOString();
  const d = describeError(err);
  if (isJobControl(err) && err.action === 'retry') {
    return { state: 'available', delayMs: clampDelay(Number(err.delayMs)), grantAttempt: true, reason: null, error: { attempt, at, kind: 'retry', message: d.message } };
  }
  if (isJobControl(err) && err.action === 'discard') {
    return { state: 'discarded', delayMs: 0, grantAttempt: false, reason: d.message, error: { attempt, at, kind: 'discard', message: d.message } };
  }
  if (isJobControl(err) && err.action === 'hold') {
    return { state: 'held', delayMs: 0, grantAttempt: false, reason: d.message, error: { attempt, at, kind: 'hold', message: d.message } };
  }
  const error = { attempt, at, kind: errorKind, ...d };
  if (isPayloadInvalid(err)) {
    return { state: 'discarded', delayMs: 0, grantAttempt: false, reason: 'payload does not match the schema; retrying cannot fix it', error };
  }
  if (def.delivery === 'at-most-once') {
    return { state: 'discarded', delayMs: 0, grantAttempt: false, reason: 'at-most-once job failed; it is not retried (it may have acted)', error };
  }
  if (attempt >= maxAttempts) {
    return { state: 'discarded', delayMs: 0, grantAttempt: false, reason: `attempts exhausted (${attempt} of ${maxAttempts})`, error };
  }
  return { state: 'available', delayMs: backoffDelay(def.backoff, attempt, err), grantAttempt: false, reason: null, error };
}

/** Whether `err` is an invalid payload (from any copy of nightshift); false for values that throw on access. */
function isPayloadInvalid(err: unknown): boolean {
  try {
    return err instanceof PayloadInvalidError || (err as { code?: unknown } | null)?.code === 'NS_PAYLOAD_INVALID';
  } catch {
    return false;
  }
}
