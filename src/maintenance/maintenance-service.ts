import type { Database } from '../db/database.js';
import { LeaseElector } from '../leadership/lease-elector.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { BaseService, type ServiceOptions } from '../lifecycle/service.js';
import { workerError, type EventBus } from '../telemetry/events.js';
import type { JobMaintenance, Retention } from './job-maintenance.js';

/** The lease name of leader-only maintenance (rescue, expiry, pruning, process clean-up). */
export const MAINTENANCE_LEASE = 'nightshift:maintenance';

/** The maintenance leader's lease for a given job lease: the job lease, within 3 to 15 s. */
export function maintenanceLeaseMs(jobLeaseMs: number): number {
  return Math.min(15_000, Math.max(3_000, jobLeaseMs));
}

/** How long the dashboard's aggregates are kept: writers' rows merged after 5 minutes, minute rows 2 days, hour rows 35 days. */
export const JOB_STATS_KEEP = { compactAfterS: 300, minuteDays: 2, hourDays: 35 } as const;

/** What the maintenance service is built from. */
export interface MaintenanceServiceOptions extends ServiceOptions {
  database: Database;
  maintenance: JobMaintenance;
  events: EventBus;
  /** Who this process is, as the holder of the lease. */
  holder: string;
  /** The job lease (ms): the leader's term follows it (see {@link maintenanceLeaseMs}). */
  jobLeaseMs: number;
  /** How often rescue and expiry run on the leader (pruning: at most once a minute). */
  intervalMs: number;
  retention: Retention;
}

/**
 * Rescue, expiry and pruning, run on the elected leader only: one statement each per tick for the
 * whole fleet. Every statement is safe on many processes at once (SKIP LOCKED); the election only
 * saves work. The tasks start when this process is elected and stop when it is deposed.
 */
export class MaintenanceService extends BaseService {
  private readonly leader: LeaseElector;
  private tasks: PeriodicTask[] = [];
  private unsubscribe: (() => void) | undefined;

  constructor(private readonly o: MaintenanceServiceOptions) {
    super({ name: 'maintenance', kind: 'maintenance', logger: o.logger, clock: o.clock });
    // The leader's term is no longer than a job lease (within 3 to 15 s): when the leader dies,
    // rescue of its jobs — and of everyone's — resumes about as soon as those leases expire,
    // rather than a fixed 15 s + retry later (measured by the fault harness, docs/reliability.md).
    this.leader = new LeaseElector({
      database: o.database,
      name: MAINTENANCE_LEASE,
      holder: o.holder,
      ttlMs: maintenanceLeaseMs(o.jobLeaseMs),
      events: o.events,
      logger: this.logger,
      clock: this.clock,
    });
  }

  /** Whether this process leads maintenance now. */
  get leading(): boolean {
    return this.leader.term !== undefined;
  }

  protected async onStart(): Promise<void> {
    this.unsubscribe = this.leader.onChange((term) => {
      if (term) this.startTasks();
      else void this.stopTasks();
    });
    await this.leader.start();
  }

  protected async onStop(): Promise<void> {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    await this.stopTasks();
    await this.leader.stop();
  }

  private startTasks(): void {
    if (this.tasks.length || !this.live) return;
    const { maintenance: m, events } = this.o;
    const onError = (task: string) => (err: unknown) => events.emit(workerError(`maintenance ${task}`, err));
    const report = (task: string) => (count: number) => {
      if (count > 0) events.emit({ type: 'maintenance.ran', task, count });
    };
    const every = this.o.intervalMs;
    const task = (name: string, intervalMs: number, run: () => Promise<unknown>) =>
      new PeriodicTask({ name, intervalMs, task: run, onError: onError(name), runFirst: true, clock: this.clock, logger: this.logger });
    this.tasks = [
      task('rescue', every, () => m.rescue().then(report('rescue'))),
      task('expire', every, () => m.expire().then(report('expire'))),
      task('archive', every, () => m.archive().then(report('archive'))),
      task('prune', Math.max(every, 60_000), () => m.prune(this.o.retention)),
      // The dashboard's aggregates: merged per minute, rolled up per hour, pruned (docs/dashboard.md).
      task('job stats', Math.max(every, 60_000), () => this.o.database.stats.maintain(JOB_STATS_KEEP)),
    ];
    for (const t of this.tasks) void t.start();
  }

  private async stopTasks(): Promise<void> {
    const tasks = this.tasks;
    this.tasks = [];
    await Promise.all(tasks.map((t) => t.stop()));
  }
}
