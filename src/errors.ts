/**
 * The error catalogue. Every error nightshift throws is a {@link NightshiftError} with a stable
 * `code` (NS_…, {@link NightshiftErrorCode}) that is never reused for another meaning;
 * `docs/errors.md` lists them all with what to do about each. The classes live in `errors/`, by
 * area; this module is the one to import them from.
 */
export { NIGHTSHIFT_ERROR_CODES, type NightshiftErrorCode } from './errors/codes.js';
export { NightshiftError, isNightshiftError, type Issue } from './errors/base.js';
export { editDistance, closest, unknownKey } from './errors/suggest.js';
export * from './errors/input.js';
export * from './errors/database.js';
export * from './errors/jobs.js';
export * from './errors/leadership.js';
export * from './errors/watchdog.js';
export * from './errors/streams.js';
export * from './errors/runtime.js';
export * from './errors/pipelines.js';
