/**
 * Every error code nightshift uses, in the order of docs/errors.md (a test holds the two to each
 * other, and to the codes the sources throw). A code is never reused for another meaning; a new
 * one is added here, with its row in docs/errors.md.
 */
export const NIGHTSHIFT_ERROR_CODES = [
  'NS_CONFIG_INVALID',
  'NS_PAYLOAD_INVALID',
  'NS_PAYLOAD_TOO_LARGE',
  'NS_UNKNOWN_KIND',
  'NS_OPTIONS_INVALID',
  'NS_NOT_MIGRATED',
  'NS_SCHEMA_TOO_NEW',
  'NS_JOB_NOT_FOUND',
  'NS_INVALID_TRANSITION',
  'NS_DEDUPE_CONFLICT',
  'NS_PREPARED_STATEMENTS',
  'NS_DATABASE',
  'NS_STOPPED',
  'NS_DUPLICATE_KIND',
  'NS_JOB_TIMEOUT',
  'NS_LEASE_LOST',
  'NS_JOB_CANCELLED',
  'NS_SHUTDOWN',
  'NS_FENCED',
  'NS_LEADERSHIP_LOST',
  'NS_EMBEDDED_POSTGRES_MISSING',
  'NS_EMBEDDED_POSTGRES_FAILED',
  'NS_DEV_BUSY',
  'NS_DRAIN_LIMIT',
  'NS_SCHEDULE_NOT_FOUND',
  'NS_DUPLICATE_SCHEDULE',
  'NS_REDIS_UNAVAILABLE',
  'NS_REDIS_VERSION',
  'NS_REDIS_COMMAND',
  'NS_UNKNOWN_STREAM',
  'NS_UNKNOWN_STATUS',
  'NS_CONSUMER_STOPPED',
  'NS_STREAM_HANDLER_TIMEOUT',
  'NS_UNKNOWN_ROLE',
  'NS_MISSING_ENV',
  'NS_BUDGET_EXCEEDED',
  'NS_USAGE',
  'NS_MIGRATION_FAILED',
  'NS_PORT_UNAVAILABLE',
  'NS_DASHBOARD_NO_AUTH',
] as const;

/** A nightshift error's stable code: one of {@link NIGHTSHIFT_ERROR_CODES}. */
export type NightshiftErrorCode = (typeof NIGHTSHIFT_ERROR_CODES)[number];
