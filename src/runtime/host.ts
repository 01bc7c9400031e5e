import type { Database } from '../db/database.js';
import { ConfigError } from '../errors.js';
import { Listener } from '../db/listener.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { DaemonRunner } from '../leadership/daemon-runner.js';
import type { DaemonDefinition } from '../leadership/define-daemon.js';
import { LeaseElector } from '../leadership/lease-elector.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import type { JobMaintenance } from '../maintenance/job-maintenance.js';
import type { RolePlan } from '../roles/role-plan.js';
import { workerError, type EventBus } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import { Worker } from '../worker/worker.js';
import type { ResolvedOptions } from './client-options.js';
import { ProcessRegistry } from './process-registry.js';
import type { ScheduleDefinition } from '../schedules/define-schedule.js';
import { ScheduleTicker } from '../schedules/schedule-ticker.js';
import type { ConsumerDefinition } from '../streams/define-consumer.js';
import { ConsumerRunner, consumerLeaseName } from '../streams/consumer-runner.js';

/** What a host needs from its client. */
export interface HostDeps {
  database: Database;
  registry: JobRegistry;
  enqueuer: Enqueuer;
  maintenance: JobMaintenance;
  events: EventBus;
  logger: Logger;
  options: Readonly<ResolvedOptions>;
  daemons: readonly DaemonDefinition[];
  schedules: readonly ScheduleDefinition[];
  consumers: readonly ConsumerDefinition[];
}

/** How a worker hears of new jobs, and why when it only polls (see {@link Host.wakeups}). */
export interface Wakeups {
  mode: 'notify' | 'polling';
  reason?: string;
}

const UNPROVEN_WHY =
  'notifications do not reach the listener, as behind a transaction-mode pooler (PgBouncer); wake-ups fall back to polling';
const UNPROVEN_HINT =
  'give the listener a direct connection to PostgreSQL (or a session-mode pool): listenDatabaseUrl, database.listenUrl in nightshift.config.ts, or DATABASE_LISTEN_URL (docs/poolers.md)';

/** How long the listener waits for its own notification after (re)connecting. */
const PROOF_TIMEOUT_MS = 5_000;

/** The lease name of leader-only maintenance (rescue, expiry, pruning, process clean-up). */
export const MAINTENANCE_LEASE = 'nightshift:maintenance';

/** The maintenance leader's lease for a given job lease: the job lease, within 3 to 15 s. */
export function maintenanceLeaseMs(jobLeaseMs: number): number {
  return Math.min(15_000, Math.max(3_000, jobLeaseMs));
}

/**
 * The queues a process claims: those its roles plan, each with the concurrency `queues` gives it
 * (Infinity: only the process limit). `queues` never adds or drops a queue — a shared list used to
 * replace the plan, so a pod whose role ran one kind claimed another's queue and never ran it.
 */
export function withQueueLimits(planned: ReadonlyMap<string, number>, limits: ReadonlyMap<string, number> | undefined): Map<string, number> {
  return new Map([...planned.keys()].map((q) => [q, limits?.get(q) ?? planned.get(q) ?? Infinity]));
}

/**
 * The long-lived parts of one process, for the roles it was given: the worker and its listener,
 * daemons, leader-elected maintenance, and the process registry. Started in dependency order,
 * stopped in reverse; stop is safe at any point of a failed start.
 */
export class Host {
  private worker: Worker | undefined;
  private listener: Listener | undefined;
  private daemons: DaemonRunner | undefined;
  private maintenanceLeader: LeaseElector | undefined;
  private tasks: PeriodicTask[] = [];
  private registry: ProcessRegistry | undefined;
  private ticker: ScheduleTicker | undefined;
  private consumers: ConsumerRunner | undefined;

  constructor(
    private readonly d: HostDeps,
    readonly plan: RolePlan,
  ) {}

  get runningJobs(): number {
    return this.worker?.running ?? 0;
  }

  get queues(): string[] {
    return this.worker?.queues ?? [];
  }

  get stuckHandlers(): number {
    return this.worker?.stuckHandlers ?? 0;
  }

  get listening(): boolean {
    return this.listener?.connected ?? false;
  }

  /** Whether the listener proved its channel since it last connected; undefined when this process does not listen. */
  get listenerProven(): boolean | undefined {
    return this.listener ? this.listener.connected : undefined;
  }

  /**
   * How this process's worker hears of new jobs: `notify` once the listener heard its own
   * notification, else `polling` (the correctness path, every `pollIntervalMs` at the latest) with
   * the reason. Undefined when the process runs no worker.
   */
  wakeups(): Wakeups | undefined {
    if (!this.worker) return undefined;
    if (!this.listener) return { mode: 'polling', reason: 'listen is off' };
    if (this.listener.connected) return { mode: 'notify' };
    const { proven, reason } = this.listener.proof;
    if (proven === false) return { mode: 'polling', reason: `${reason}: ${UNPROVEN_WHY}` };
    return { mode: 'polling', reason: 'the listener is connecting or proving its connection (it reconnects by itself)' };
  }

  get processId(): string | undefined {
    return this.registry?.id;
  }

  /** Leader leases this process holds now (daemons, maintenance, singletons). */
  leadership(): string[] {
    const held = (this.daemons?.status() ?? []).filter((d) => d.leader).map((d) => d.leaseName);
    if (this.maintenanceLeader?.term) held.push(MAINTENANCE_LEASE);
    const active = new Set(this.consumers?.active ?? []);
    for (const c of this.d.consumers) if (c.singleton && active.has(c.name)) held.push(consumerLeaseName(c));
    return held;
  }

  dropListenerConnection(): void {
    this.listener?.dropConnection();
  }

  async start(): Promise<void> {
    const o = this.d.options;
    const queues = withQueueLimits(this.plan.queues, o.queues);
    if (this.plan.kinds.length > 0 && queues.size > 0) {
      this.worker = new Worker(
        this.d.database,
        this.d.registry,
        this.d.enqueuer,
        {
          owner: o.owner,
          concurrency: o.concurrency,
          queues,
          kinds: this.plan.kinds,
          leaseMs: o.leaseMs,
          heartbeatMs: o.heartbeatMs,
          minPollMs: Math.min(50, o.pollIntervalMs),
          maxPollMs: o.pollIntervalMs,
          prefetch: o.prefetch,
          deleteCompleted: o.retention.completed === 0,
          redact: o.redact,
          errorMessages: o.logErrorMessages,
          shutdownGraceMs: o.shutdownGraceMs,
          abortGraceMs: Math.min(5_000, Math.max(500, o.shutdownGraceMs / 5)),
        },
        this.d.events,
        this.d.logger,
      );
      if (o.listen) await this.startListener(this.worker);
      this.worker.start();
    }
    const schedules = this.d.schedules.filter((sc) => this.plan.schedules.includes(sc.name));
    if (schedules.length > 0) {
      this.ticker = new ScheduleTicker({
        database: this.d.database,
        enqueuer: this.d.enqueuer,
        registry: this.d.registry,
        schedules,
        events: this.d.events,
        logger: this.d.logger,
      });
      await this.ticker.start();
    }
    const daemons = this.d.daemons.filter((dm) => this.plan.daemons.includes(dm.name));
    if (daemons.length > 0) {
      this.daemons = new DaemonRunner({ database: this.d.database, daemons, holder: o.owner, events: this.d.events, logger: this.d.logger, logErrorMessages: o.logErrorMessages });
      await this.daemons.start();
    }
    const consumers = this.d.consumers.filter((c) => this.plan.consumers.includes(c.name));
    if (consumers.length > 0) {
      if (!o.redisUrl) {
        throw new ConfigError('nightshift options', [{ path: 'redisUrl', message: `consumers ${consumers.map((c) => c.name).join(', ')} need Redis: give redisUrl or set REDIS_URL` }]);
      }
      const d = this.d;
      this.consumers = new ConsumerRunner({
        redisUrl: o.redisUrl!,
        consumers,
        owner: o.owner,
        events: d.events,
        logger: d.logger,
        shutdownGraceMs: o.shutdownGraceMs,
        // Singleton consumers are elected through the same lease rows as daemons.
        leaderLease: (name) => new LeaseElector({ database: d.database, name, holder: o.owner, events: d.events, logger: d.logger }),
      });
      await this.consumers.start();
    }
    if (o.maintenance) await this.startMaintenance();
    if (o.registerProcess) {
      const planned = { kinds: this.plan.kinds, queues: [...queues.keys()], schedules: this.plan.schedules, daemons: this.plan.daemons, consumers: this.plan.consumers };
      this.registry = new ProcessRegistry(
        this.d.database,
        this.plan.roles,
        // Read at every heartbeat: `nightshift workers` shows what each process runs now.
        () => ({ ...planned, activeConsumers: this.consumers?.active ?? [], concurrency: o.concurrency, running: this.runningJobs, leading: this.leadership() }),
        Math.min(10_000, o.heartbeatMs),
        (err) => this.d.events.emit(workerError('process registry', err)),
      );
      await this.registry.start();
    }
    this.d.events.emit({ type: 'process.started', id: this.registry?.id ?? o.owner, roles: this.plan.roles });
  }

  /** Stops in reverse order: registry, schedule ticks (nothing new is enqueued), maintenance, daemons (their leases released), worker, listener. */
  async stop(): Promise<void> {
    this.d.events.emit({ type: 'process.stopping', id: this.registry?.id ?? this.d.options.owner });
    await this.registry?.stop();
    await this.ticker?.stop();
    // Consumers first among the workers: their handlers may use the pool or enqueue jobs.
    await this.consumers?.stop();
    await this.stopMaintenanceTasks();
    await this.maintenanceLeader?.stop();
    await this.daemons?.stop();
    await this.worker?.stop();
    await this.listener?.stop();
  }

  /** Rescue, expiry and pruning run on the elected leader only: one statement each per tick for the whole fleet. */
  private async startMaintenance(): Promise<void> {
    const o = this.d.options;
    // The leader's term is no longer than a job lease (within 3 to 15 s): when the leader dies,
    // rescue of its jobs — and of everyone's — resumes about as soon as those leases expire,
    // rather than a fixed 15 s + retry later (measured by the fault harness, docs/reliability.md).
    const ttlMs = maintenanceLeaseMs(o.leaseMs);
    const leader = new LeaseElector({ database: this.d.database, name: MAINTENANCE_LEASE, holder: o.owner, ttlMs, events: this.d.events, logger: this.d.logger });
    this.maintenanceLeader = leader;
    leader.onChange((term) => {
      if (term) this.startMaintenanceTasks();
      else void this.stopMaintenanceTasks();
    });
    await leader.start();
  }

  private startMaintenanceTasks(): void {
    if (this.tasks.length) return;
    const m = this.d.maintenance;
    const events = this.d.events;
    const onError = (task: string) => (err: unknown) => events.emit(workerError(`maintenance ${task}`, err));
    const report = (task: string) => (count: number) => {
      if (count > 0) events.emit({ type: 'maintenance.ran', task, count });
    };
    const every = this.d.options.maintenanceIntervalMs;
    this.tasks = [
      new PeriodicTask('rescue', every, () => m.rescue().then(report('rescue')), onError('rescue')),
      new PeriodicTask('expire', every, () => m.expire().then(report('expire')), onError('expire')),
      new PeriodicTask('prune', Math.max(every, 60_000), () => m.prune(this.d.options.retention), onError('prune')),
    ];
    for (const t of this.tasks) t.start({ runNow: true });
  }

  private async stopMaintenanceTasks(): Promise<void> {
    const tasks = this.tasks;
    this.tasks = [];
    await Promise.all(tasks.map((t) => t.stop()));
  }

  private async startListener(worker: Worker): Promise<void> {
    const o = this.d.options;
    const { jobs, control } = this.d.database.channels;
    const poolOptions = (this.d.database.pool.pool as unknown as { options?: Record<string, unknown> }).options;
    const url = o.listenDatabaseUrl ?? o.databaseUrl;
    this.listener = new Listener(
      {
        ...(url ? { connectionString: url } : { clientConfig: poolOptions ?? {} }),
        channels: [jobs, control],
        // Sent through the pool, as every real notification is; on a channel of its own, so no
        // worker anywhere is woken by it.
        proof: { via: this.d.database.pool.pool, timeoutMs: PROOF_TIMEOUT_MS },
        healthCheckMs: 15_000,
        maxReconnectDelayMs: 5_000,
        applicationName: `nightshift:${o.owner}`,
      },
      {
        onNotify: (channel, payload) => {
          if (channel === jobs) {
            // `queue` (work is due) or `queue <ms>` (the earliest new job is due in ms).
            const space = payload.indexOf(' ');
            const queue = space < 0 ? payload : payload.slice(0, space);
            const dueInMs = space < 0 ? undefined : Number(payload.slice(space + 1));
            worker.wake(queue, dueInMs);
            // Tells wake-ups by notification apart from polling (fault tests, metrics).
            if (this.d.events.active) this.d.events.emit({ type: 'listener.notified', queue, ...(dueInMs !== undefined ? { dueInMs } : {}) });
          }
          else if (payload.startsWith('cancel:')) worker.cancelled(payload.slice(7));
          else if (payload.startsWith('resume:')) worker.wake(payload.slice(7));
        },
        onConnected: () => {
          this.d.events.emit({ type: 'listener.connected' });
          worker.wake();
        },
        onLost: (error) => this.d.events.emit({ type: 'listener.lost', error: error.message }),
        onProof: (proven, reason) =>
          this.d.events.emit(
            proven
              ? { type: 'listener.proven' }
              : { type: 'listener.unproven', reason: `${reason ?? 'not heard'}: ${UNPROVEN_WHY}`, hint: UNPROVEN_HINT },
          ),
      },
    );
    await this.listener.start();
  }
}
