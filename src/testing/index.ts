/**
 * nightshift/testing: helpers for your own tests, against a real PostgreSQL — an embedded server,
 * a fresh schema per test file, a job run with a real context, a drain of everything due, checks
 * of what was enqueued (also inside your transaction), and a clock for schedules. See
 * docs/testing.md. Pipelines and checks will get their helpers here when they land.
 */
export { liveResources } from '../lifecycle/resources.js';
export { startEmbeddedPostgres, type EmbeddedPostgresHandle, type EmbeddedPostgresOptions } from '../dev/embedded-postgres.js';
export { createTestSchema, type TestSchema, type TestSchemaOptions } from './test-schema.js';
export { runJob, type RunJobOptions } from './run-job.js';
export type { JobOutcome, JobOutcomeStatus } from './inline-runner.js';
export { drain, type DrainOptions, type DrainResult } from './drain.js';
export { enqueued, assertEnqueued, refuteEnqueued, type JobMatch, type EnqueuedOptions } from './enqueued.js';
export { tick, type TickOptions } from './tick.js';
