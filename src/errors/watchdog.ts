/** Errors of the watchdog: checks, alerts, notifiers. */
import { NightshiftError } from './base.js';
import { knownHint } from './suggest.js';

/** No check with that name is defined in this client (nor a built-in that is on). */
export class CheckNotFoundError extends NightshiftError {
  constructor(name: string, known: readonly string[]) {
    super('NS_CHECK_NOT_FOUND', `no check named "${name}"`, {
      hint: knownHint(name, known, 'checks', 'define it with defineCheck and pass it to the config’s checks', 'defined'),
    });
  }
}

/** Two check definitions share a name. */
export class DuplicateCheckError extends NightshiftError {
  constructor(name: string) {
    super('NS_DUPLICATE_CHECK', `check "${name}" is defined twice`, { hint: 'each check name names exactly one defineCheck; rename one of them' });
  }
}

/** No alert with that id. */
export class AlertNotFoundError extends NightshiftError {
  constructor(id: string) {
    super('NS_ALERT_NOT_FOUND', `no alert with id ${id}`, { hint: 'check the id with `nightshift alerts` (resolved alerts are kept 90 days)' });
  }
}

/** An action for open alerts (acknowledge) was asked of a resolved one. */
export class AlertResolvedError extends NightshiftError {
  constructor(id: string, resolvedAt: Date) {
    super('NS_ALERT_RESOLVED', `alert ${id} is resolved (at ${resolvedAt.toISOString()}): there is nothing to acknowledge`, {
      hint: 'a new alert opens if the check turns bad again; list open ones with `nightshift alerts --open`',
    });
  }
}

/** A notifier could not deliver a notification (the attempt is retried with back-off). Never quotes a URL or a secret. */
export class NotifierError extends NightshiftError {
  constructor(
    readonly notifier: string,
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super('NS_NOTIFIER_FAILED', `notifier "${notifier}": ${message}`, {
      hint: 'the notification is retried with back-off; once attempts run out it is discarded (nightshift jobs list --kind nightshift.notify --state discarded)',
      ...options,
    });
  }
}

/** (as a check's `ctx.signal.reason`, and its critical result) a check ran past its `timeoutMs`. */
export class CheckTimeoutError extends NightshiftError {
  constructor(name: string, timeoutMs: number) {
    super('NS_CHECK_TIMEOUT', `check "${name}" timed out after ${timeoutMs} ms`, { hint: 'make the check faster, or raise its timeoutMs' });
  }
}
