import { isNightshiftError, NightshiftError } from '../errors.js';

/** Exit codes: 0 success, 1 a failed operation, 2 a usage or configuration error. */
export const EXIT = { ok: 0, failed: 1, usage: 2 } as const;

const USAGE_CODES = new Set([
  'NS_CONFIG_INVALID',
  'NS_OPTIONS_INVALID',
  'NS_PAYLOAD_INVALID',
  'NS_PAYLOAD_TOO_LARGE',
  'NS_UNKNOWN_KIND',
  'NS_UNKNOWN_ROLE',
  'NS_MISSING_ENV',
  'NS_BUDGET_EXCEEDED',
  'NS_USAGE',
  'NS_PORT_UNAVAILABLE',
  'NS_UNKNOWN_PIPELINE',
  'NS_DASHBOARD_NO_AUTH',
]);

/** A usage error raised by the CLI itself (bad flag value, missing database URL, …). */
export class UsageError extends NightshiftError {
  constructor(message: string, hint?: string) {
    super('NS_USAGE', message, hint ? { hint } : {});
  }
}

/** The exit code for an error. */
export function exitCodeFor(err: unknown): number {
  return isNightshiftError(err) && USAGE_CODES.has(err.code) ? EXIT.usage : EXIT.failed;
}
