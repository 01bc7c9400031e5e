import type { AlertLevelValue, CheckStatusValue } from '../db/watchdog.js';

/** A subject's state before a result is applied. */
export interface SubjectState {
  status: CheckStatusValue;
  /** Bad results in a row. */
  streak: number;
  /** The open alert, if any. */
  alert?: { level: AlertLevelValue; lastNotifiedAt: Date | null; acked: boolean };
}

/** How a check's alerts behave. */
export interface AlertPolicy {
  /** Bad results in a row before an alert opens. */
  failAfter: number;
  /** Remind this often while open and unacknowledged; undefined: never. */
  renotifyMs: number | undefined;
}

/** What a result does to the subject's alert. */
export type AlertStep =
  /** No alert is open, and none opens (ok, or bad fewer than `failAfter` times in a row). */
  | { kind: 'none' }
  /** An alert opens at this level (notified). */
  | { kind: 'open'; level: AlertLevelValue }
  /** The open alert's level changes (notified). */
  | { kind: 'change'; from: AlertLevelValue; to: AlertLevelValue }
  /** The open alert stays; a reminder is due (notified). */
  | { kind: 'remind' }
  /** The open alert stays; its message follows the result (nothing sent). */
  | { kind: 'update' }
  /** The open alert resolves (notified). */
  | { kind: 'resolve' };

/** The subject's state after the result, and the step of its alert. */
export interface Transition {
  status: CheckStatusValue;
  streak: number;
  step: AlertStep;
  /** Whether the subject keeps a state row: it is bad, or its alert stays open. */
  keep: boolean;
}

/**
 * The alert state machine of one subject (docs/watchdog.md): pure, so every rule is tested with
 * fixed inputs. `now` is the database clock.
 *
 * - ok: the streak ends; an open alert resolves.
 * - bad: the streak grows (warning and critical alike); without an open alert one opens once the
 *   streak reaches `failAfter`; with one, a different level changes it, otherwise a reminder is
 *   due when `renotifyMs` has passed since the last notification and nobody acknowledged it.
 */
export function nextState(prev: SubjectState | undefined, status: CheckStatusValue, policy: AlertPolicy, now: Date): Transition {
  const alert = prev?.alert;
  if (status === 'ok') {
    return { status, streak: 0, step: alert ? { kind: 'resolve' } : { kind: 'none' }, keep: false };
  }
  const streak = prev && prev.status !== 'ok' ? prev.streak + 1 : 1;
  if (!alert) {
    return { status, streak, step: streak >= policy.failAfter ? { kind: 'open', level: status } : { kind: 'none' }, keep: true };
  }
  if (alert.level !== status) return { status, streak, step: { kind: 'change', from: alert.level, to: status }, keep: true };
  const due = policy.renotifyMs !== undefined && !alert.acked && alert.lastNotifiedAt !== null && now.getTime() - alert.lastNotifiedAt.getTime() >= policy.renotifyMs;
  return { status, streak, step: due ? { kind: 'remind' } : { kind: 'update' }, keep: true };
}
