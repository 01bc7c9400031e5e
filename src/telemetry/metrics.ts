import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { EventBus } from './events.js';

/** Read on each scrape: the values the event stream cannot give (the database's view, the pool). */
export interface MetricSources {
  /** Jobs per queue and state, and the oldest runnable job's age per queue (cached by the caller). */
  queues(): Promise<{ queue: string; state: string; count: number; oldestAvailableSeconds: number | null }[]>;
  pool(): { total: number; idle: number; waiting: number; max: number };
  /** Leader leases this process holds right now, by lease name. */
  leadership(): string[];
  /** Whether the LISTEN connection heard its own proof notification; undefined when the process does not listen. */
  listenerProven?(): boolean | undefined;
  /** Open watchdog alerts per check and level; absent when the watchdog is off. */
  alerts?(): Promise<{ check: string; level: string; count: number }[]>;
}

const DURATION_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];

/**
 * Prometheus metrics fed by the event stream (counters and histograms per kind and queue) and by
 * sources read at scrape time (queue depth and age, pool, leadership). Labels are bounded — kind,
 * queue, state, schedule, lease — never a job id or a dedupe key. Pass your own registry to merge
 * them into yours.
 */
export class NightshiftMetrics {
  readonly registry: Registry;
  private readonly unsubscribe: () => void;

  constructor(events: EventBus, sources: MetricSources, options: { registry?: Registry; prefix?: string } = {}) {
    const registry = options.registry ?? new Registry();
    this.registry = registry;
    const p = options.prefix ?? 'nightshift_';
    const byJob = ['kind', 'queue'] as const;
    const counter = (name: string, help: string) => new Counter({ name: `${p}${name}`, help, labelNames: byJob, registers: [registry] });
    const enqueued = counter('jobs_enqueued_total', 'Jobs enqueued (a deduplicated enqueue counts as not enqueued).');
    const started = counter('jobs_started_total', 'Attempts started.');
    const completed = counter('jobs_completed_total', 'Jobs completed.');
    const failed = counter('jobs_failed_total', 'Attempts that failed (threw, timed out, or asked for a retry).');
    const retried = counter('jobs_retried_total', 'Failed attempts that will be retried.');
    const discarded = counter('jobs_discarded_total', 'Jobs discarded (attempts exhausted, discarded by the handler, invalid payload).');
    const held = counter('jobs_held_total', 'Jobs held for manual review.');
    const expired = counter('jobs_expired_total', 'Jobs expired before they started.');
    const cancelled = counter('jobs_cancelled_total', 'Jobs cancelled through this client (API, CLI, dashboard).');
    const rescued = counter('jobs_rescued_total', 'Jobs taken back from a worker whose lease expired.');
    const abandoned = counter('jobs_abandoned_total', 'At-most-once jobs abandoned after their worker died or stopped while they ran.');
    const refused = counter('jobs_refused_writes_total', 'Writes refused because the lease token was stale.');
    const duration = new Histogram({ name: `${p}job_run_duration_seconds`, help: 'Run time of an attempt.', labelNames: byJob, buckets: DURATION_BUCKETS, registers: [registry] });
    const wait = new Histogram({ name: `${p}job_wait_seconds`, help: 'Time from a job becoming runnable to its start.', labelNames: byJob, buckets: WAIT_BUCKETS, registers: [registry] });
    const scheduleLag = new Histogram({ name: `${p}schedule_lag_seconds`, help: 'Time from a tick to its job being enqueued.', labelNames: ['schedule'], buckets: WAIT_BUCKETS, registers: [registry] });
    const scheduleSkipped = new Counter({ name: `${p}schedule_ticks_skipped_total`, help: 'Ticks skipped (overlap or catch-up).', labelNames: ['schedule', 'reason'], registers: [registry] });
    const listenerLost = new Counter({ name: `${p}listener_disconnects_total`, help: 'Times the LISTEN connection was lost.', registers: [registry] });
    const errors = new Counter({ name: `${p}worker_errors_total`, help: 'Errors outside jobs (claims, heartbeats, maintenance).', labelNames: ['where'], registers: [registry] });
    // Pipelines: labels are the pipeline, step and state (never a key). Step attempts are the job
    // metrics above, with kind="pipeline:<pipeline>:<step>".
    const runsStarted = new Counter({ name: `${p}pipeline_runs_started_total`, help: 'Pipeline runs started (dry runs included).', labelNames: ['pipeline'], registers: [registry] });
    const runsFinished = new Counter({
      name: `${p}pipeline_runs_finished_total`,
      help: 'Pipeline runs that ended, by state (succeeded, failed, cancelled).',
      labelNames: ['pipeline', 'state'],
      registers: [registry],
    });
    const stepsFinished = new Counter({
      name: `${p}pipeline_steps_finished_total`,
      help: 'Pipeline steps and fan-out items that ended, by state.',
      labelNames: ['pipeline', 'step', 'state'],
      registers: [registry],
    });
    const runsHeld = new Counter({ name: `${p}pipeline_runs_held_total`, help: 'Pipeline runs held because a due step has no handler in any live process.', labelNames: ['pipeline'], registers: [registry] });
    const deadlines = new Counter({ name: `${p}pipeline_deadlines_missed_total`, help: 'Pipeline runs still open past their deadline (each counted once).', labelNames: ['pipeline'], registers: [registry] });
    new Gauge({
      name: `${p}queue_jobs`,
      help: 'Jobs per queue and state (scheduled: available with a future run time).',
      labelNames: ['queue', 'state'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const q of await sources.queues()) this.set({ queue: q.queue, state: q.state }, q.count);
      },
    });
    new Gauge({
      name: `${p}queue_oldest_available_age_seconds`,
      help: 'Age of the oldest job waiting to run, per queue (0 when none).',
      labelNames: ['queue'],
      registers: [registry],
      async collect() {
        this.reset();
        const seen = new Map<string, number>();
        for (const q of await sources.queues()) seen.set(q.queue, Math.max(seen.get(q.queue) ?? 0, q.oldestAvailableSeconds ?? 0));
        for (const [queue, age] of seen) this.set({ queue }, age);
      },
    });
    new Gauge({
      name: `${p}pool_connections`,
      help: 'Connections of the shared pool by state (total, idle, waiting clients, max).',
      labelNames: ['state'],
      registers: [registry],
      collect() {
        const s = sources.pool();
        this.set({ state: 'total' }, s.total);
        this.set({ state: 'idle' }, s.idle);
        this.set({ state: 'waiting' }, s.waiting);
        this.set({ state: 'max' }, s.max);
      },
    });
    new Gauge({
      name: `${p}leader_leases_held`,
      help: 'Leader leases (daemons, maintenance, singletons) this process holds: 1 per lease.',
      labelNames: ['lease'],
      registers: [registry],
      collect() {
        this.reset();
        for (const name of sources.leadership()) this.set({ lease: name }, 1);
      },
    });
    new Gauge({
      name: `${p}listener_proven`,
      help: 'Whether the LISTEN connection heard its own notification since it (re)connected: 1 wake-ups by NOTIFY, 0 polling only (a transaction-mode pooler, a lost connection, or not proven yet). Absent when the process does not listen.',
      registers: [registry],
      collect() {
        this.reset();
        const proven = sources.listenerProven?.();
        if (proven !== undefined) this.set(proven ? 1 : 0);
      },
    });
    new Gauge({
      name: `${p}alerts_open`,
      help: 'Open watchdog alerts per check and level (acknowledged ones included).',
      labelNames: ['check', 'level'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const a of (await sources.alerts?.()) ?? []) this.set({ check: a.check, level: a.level }, a.count);
      },
    });
    const checkRuns = new Counter({ name: `${p}check_runs_total`, help: 'Watchdog check runs by their worst status.', labelNames: ['check', 'status'], registers: [registry] });
    const alertChanges = new Counter({ name: `${p}alert_changes_total`, help: 'Watchdog alert changes: opened, changed, reminder, resolved.', labelNames: ['check', 'event'], registers: [registry] });
    const limited = new Gauge({
      name: `${p}jobs_limited`,
      help: 'Due jobs the last claim of this process passed over because a fleet-wide limit (concurrency or rate) was full: waiting for a limit, not stuck.',
      labelNames: ['queue'],
      registers: [registry],
    });
    this.unsubscribe = events.on((e) => {
      switch (e.type) {
        case 'job.enqueued':
          if (!e.deduped) enqueued.inc({ kind: e.kind, queue: e.queue });
          break;
        case 'job.started':
          started.inc({ kind: e.kind, queue: e.queue });
          wait.observe({ kind: e.kind, queue: e.queue }, Math.max(0, e.waitMs) / 1000);
          break;
        case 'job.completed':
          completed.inc({ kind: e.kind, queue: e.queue });
          duration.observe({ kind: e.kind, queue: e.queue }, e.durationMs / 1000);
          break;
        case 'job.failed':
          failed.inc({ kind: e.kind, queue: e.queue });
          duration.observe({ kind: e.kind, queue: e.queue }, e.durationMs / 1000);
          if (e.willRetry) retried.inc({ kind: e.kind, queue: e.queue });
          break;
        case 'job.discarded':
          discarded.inc({ kind: e.kind, queue: e.queue });
          break;
        case 'job.held':
          held.inc({ kind: e.kind, queue: e.queue });
          break;
        case 'job.expired':
          expired.inc({ kind: e.kind, queue: e.queue });
          break;
        case 'job.cancelled':
          cancelled.inc({ kind: e.kind, queue: e.queue });
          break;
        case 'job.rescued':
          rescued.inc({ kind: e.kind, queue: e.queue });
          if (e.state === 'abandoned') abandoned.inc({ kind: e.kind, queue: e.queue });
          break;
        case 'job.released':
          if (e.state === 'abandoned') abandoned.inc({ kind: e.kind, queue: e.queue });
          break;
        case 'job.refused':
          refused.inc({ kind: e.kind, queue: e.queue });
          break;
        case 'schedule.fired':
          if (!e.manual) scheduleLag.observe({ schedule: e.schedule }, Math.max(0, e.at - e.tickAt.getTime()) / 1000);
          break;
        case 'schedule.skipped':
          scheduleSkipped.inc({ schedule: e.schedule, reason: e.reason }, Math.max(1, e.missed));
          break;
        case 'listener.lost':
          listenerLost.inc();
          break;
        case 'worker.limited':
          limited.set({ queue: e.queue }, e.waiting);
          break;
        case 'worker.error':
          errors.inc({ where: e.where.split(' ')[0] ?? 'unknown' });
          break;
        case 'check.ran':
          checkRuns.inc({ check: e.check, status: e.status });
          break;
        case 'alert.opened':
        case 'alert.changed':
        case 'alert.reminded':
        case 'alert.resolved':
          alertChanges.inc({ check: e.check, event: { 'alert.opened': 'opened', 'alert.changed': 'changed', 'alert.reminded': 'reminder', 'alert.resolved': 'resolved' }[e.type] });
          break;
        case 'pipeline.started':
          runsStarted.inc({ pipeline: e.pipeline });
          break;
        case 'pipeline.finished':
          runsFinished.inc({ pipeline: e.pipeline, state: e.state });
          break;
        case 'pipeline.step-finished':
          stepsFinished.inc({ pipeline: e.pipeline, step: e.step, state: e.state });
          break;
        case 'pipeline.held':
          runsHeld.inc({ pipeline: e.pipeline });
          break;
        case 'pipeline.deadline-missed':
          deadlines.inc({ pipeline: e.pipeline });
          break;
        default:
          break;
      }
    });
  }

  /** The metrics in Prometheus' text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** Stops following events. */
  close(): void {
    this.unsubscribe();
  }
}
