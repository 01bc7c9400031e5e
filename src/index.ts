/**
 * nightshift: background work on PostgreSQL — jobs, schedules, elected daemons — and Redis Streams.
 * This is the public API; nothing else is imported by users.
 */
export { createNightshift, Nightshift } from './runtime/nightshift.js';
export type { NightshiftOptions } from './runtime/client-options.js';
export { defineJob } from './jobs/define-job.js';
export type { JobDefinition, JobOptions, JobContext, JobLogger, Delivery, DedupeScope, ResolveInfo } from './jobs/define-job.js';
export type { EnqueueOptions, EnqueueResult } from './jobs/enqueue-options.js';
export type { EnqueueManyOptions } from './jobs/enqueuer.js';
export type { ActorOptions, ListJobsOptions, BulkOptions, Resolution } from './jobs/job-admin.js';
export type { Backoff } from './jobs/retry-policy.js';
export type { PayloadSchema } from './jobs/standard-schema.js';
export { retryAfter, discard, hold, RetryAfter, Discard, Hold, JobControl, isJobControl } from './jobs/job-control.js';
export type { JobRecord, JobState, JobErrorEntry } from './db/job-row.js';
export { JOB_STATES } from './db/job-row.js';
export type { QueueRow, AuditRow } from './db/queues.js';
export type { StatsRow } from './db/jobs-admin.js';
export type { MigrateResult } from './db/migrator.js';
export type { Executor } from './db/executor.js';
export type { Retention } from './maintenance/job-maintenance.js';
export { DEFAULT_RETENTION } from './maintenance/job-maintenance.js';
export type { NightshiftEvent, NightshiftEventType, EventListener } from './telemetry/events.js';
export { defineDaemon } from './leadership/define-daemon.js';
export type { DaemonDefinition, DaemonOptions, DaemonContext } from './leadership/define-daemon.js';
export { DaemonRunner, type DaemonStatus, type DaemonRunnerOptions } from './leadership/daemon-runner.js';
export { LeaseElector, type LeaseElectorOptions } from './leadership/lease-elector.js';
export type { LeaderLease, LeaderTerm } from './leadership/leader-lease.js';
export { listLeases, type LeaseInfo } from './leadership/lease-listing.js';
export { daemonLeaseName } from './leadership/daemon-supervisor.js';
export { defineSchedule } from './schedules/define-schedule.js';
export type { ScheduleOptions, ScheduleDefinition, ScheduleTick, CatchUp, CatchUpPolicy, Overlap, ScheduleEnqueueOptions } from './schedules/define-schedule.js';
export type { ScheduleInfo, ScheduleTickRecord, TriggerResult, ScheduleActorOptions } from './schedules/schedule-admin.js';
export type { TickerReport } from './schedules/schedule-ticker.js';
export type { TickOutcome } from './db/schedules.js';
export { defineStream, type StreamDefinition, type StreamOptions } from './streams/define-stream.js';
export { defineConsumer, type ConsumerDefinition, type ConsumerOptions, type ConsumerContext, type ConsumerHandler } from './streams/define-consumer.js';
export { StreamClient, diagnoseStreams, type StreamClientOptions } from './streams/stream-client.js';
export { ConsumerRunner, consumerLeaseName, type ConsumerRunnerOptions } from './streams/consumer-runner.js';
export type { StreamsDiagnosis, StreamDiagnosis, GroupDiagnosis, ConsumerDiagnosis, GroupStatus } from './streams/diagnose-streams.js';
export { defineStatusOrder } from './streams/status-order.js';
export { NightshiftMetrics, type MetricSources } from './telemetry/metrics.js';
export { createLogger, DEFAULT_REDACT, type LoggerOptions } from './telemetry/logger.js';
export { defineConfig, type NightshiftConfig } from './config/define-config.js';
export type { RoleDefinition, RolePlan } from './roles/role-plan.js';
export type { ProcessRow } from './db/processes.js';
export type { JobLogLine } from './db/job-logs.js';
export type { BudgetReport } from './runtime/budget.js';
export * from './errors.js';
