import type { Database } from '../db/database.js';
import type { LimitRow } from '../db/limits.js';
import { Listener } from '../db/listener.js';
import { ConfigError, MissingEnvError } from '../errors.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { limitRow } from '../jobs/limits.js';
import { DaemonRunner } from '../leadership/daemon-runner.js';
import type { DaemonDefinition } from '../leadership/define-daemon.js';
import { LeaseElector } from '../leadership/lease-elector.js';
import type { Clock } from '../lifecycle/clock.js';
import { BaseService, ServiceGroup, type Service } from '../lifecycle/service.js';
import type { JobMaintenance } from '../maintenance/job-maintenance.js';
import { MAINTENANCE_LEASE, MaintenanceService } from '../maintenance/maintenance-service.js';
import { missingEnv, type RolePlan } from '../roles/role-plan.js';
import type { ScheduleDefinition } from '../schedules/define-schedule.js';
import { ScheduleTicker } from '../schedules/schedule-ticker.js';
import { consumerLeaseName, ConsumerRunner } from '../streams/consumer-runner.js';
import type { ConsumerDefinition } from '../streams/define-consumer.js';
import { workerError, type EventBus } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import { limitPlan, type LimitPlan } from '../worker/limit-plan.js';
import { Worker } from '../worker/worker.js';
import { assertBudget, poolSize } from './budget.js';
import type { ResolvedOptions } from './client-options.js';
import { JobStatsRecorder } from './job-stats-recorder.js';
import { ProcessRegistry } from './process-registry.js';

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
  /** Where every service reads time and sets timers. Default: the system clock. */
  clock?: Clock;
  /** More checks of the plan (after the environment's, before the schema's): throws to refuse the start. */
  preflight?: (plan: RolePlan) => void;
}

/** How a worker hears of new jobs, and why when it only polls (see {@link Host.wakeups}). */
export interface Wakeups {
  mode: 'notify' | 'polling';
  reason?: string;
}

const UNPROVEN_WHY = 'notifications do not reach the listener, as behind a transaction-mode pooler (PgBouncer); wake-ups fall back to polling';
const UNPROVEN_HINT = 'give the listener a direct connection to PostgreSQL (or a session-mode pool): listenDatabaseUrl, database.listenUrl in nightshift.config.ts, or DATABASE_LISTEN_URL (docs/poolers.md)';

/** The notification of a freed limit slot: `<queue> freed <limit>,<limit>`, or `<queue> freed *` for any limit (0011's jobs_limit_freed). */
const FREED = 'freed ';

/** How long the listener waits for its own notification after (re)connecting. */
const PROOF_TIMEOUT_MS = 5_000;

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
 * schedule ticks, daemons, stream consumers, leader-elected maintenance, and the process
 * registry. They are one ordered list of services: started in that order, stopped in reverse
 * (registry first, then maintenance, consumers — their handlers may use the pool or enqueue —
 * daemons, which release their leases, ticks, the worker, its listener last); a start that fails
 * part-way stops what had started.
 */
export class Host extends BaseService {
  private worker: Worker | undefined;
  private listener: Listener | undefined;
  private daemons: DaemonRunner | undefined;
  private maintenance: MaintenanceService | undefined;
  private registry: ProcessRegistry | undefined;
  private consumers: ConsumerRunner | undefined;
  private parts: ServiceGroup | undefined;

  constructor(
    private readonly d: HostDeps,
    readonly plan: RolePlan,
  ) {
    super({ name: `host ${d.options.owner}`, kind: 'host', logger: d.logger, clock: d.clock });
  }

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
    if (this.maintenance?.leading) held.push(MAINTENANCE_LEASE);
    const active = new Set(this.consumers?.active ?? []);
    for (const c of this.d.consumers) if (c.singleton && active.has(c.name)) held.push(consumerLeaseName(c));
    return held;
  }

  dropListenerConnection(): void {
    this.listener?.dropConnection();
  }

  /**
   * Checks what the roles need — their environment, the schema, the connection budget — and
   * registers the kinds (nothing starts when a check fails), then starts the services in order.
   */
  protected async onStart(): Promise<void> {
    const o = this.d.options;
    const missing = missingEnv(this.plan, process.env);
    if (missing.length) throw new MissingEnvError(missing);
    this.d.preflight?.(this.plan);
    const { newer } = await this.d.database.checkMigrated();
    // A newer version migrated the schema with migrations this code may run beside (rolling deploy).
    if (newer.length) this.d.events.emit({ type: 'schema.newer', schema: this.d.database.schema, versions: newer });
    if (o.budget) {
      await assertBudget(this.d.database, {
        pool: poolSize(o),
        listener: o.listen,
        replicas: o.budget.replicas ?? 1,
        ...(o.budget.maxConnectionsPerProcess !== undefined ? { maxPerProcess: o.budget.maxConnectionsPerProcess } : {}),
      });
    }
    await this.d.database.queues.registerKinds(this.d.registry.kindRows());
    await this.d.database.limits.register(this.limitRows());
    await this.d.database.queues.setPayloadLimit(o.maxPayloadBytes);
    this.parts = new ServiceGroup(`services ${this.d.options.owner}`, this.build(), { logger: this.logger, clock: this.clock });
    await this.parts.start();
    this.d.events.emit({ type: 'process.started', id: this.registry?.id ?? this.d.options.owner, roles: this.plan.roles });
  }

  protected async onStop(): Promise<void> {
    if (this.state === 'stopping') this.d.events.emit({ type: 'process.stopping', id: this.registry?.id ?? this.d.options.owner });
    await this.parts?.stop();
  }

  /** The limits this process's kinds and queues declare, for the limits table (the claim reads them there). */
  private limitRows(): LimitRow[] {
    const kinds = this.plan.kinds.map((k) => this.d.registry.get(k)?.limits ?? []);
    const queues = this.d.options.queueDefinitions.map((q) => q.limits);
    const rows = new Map<string, LimitRow>();
    for (const l of [...kinds, ...queues].flat()) rows.set(l.name, limitRow(l));
    return [...rows.values()];
  }

  /** Queue → what its claim enforces, for the queues with limits (the others keep the plain claim). */
  private limitPlans(queues: Iterable<string>): Map<string, LimitPlan> {
    const defs = this.plan.kinds.flatMap((k) => this.d.registry.get(k) ?? []);
    const plans = new Map<string, LimitPlan>();
    for (const q of queues) {
      const plan = limitPlan(defs, this.d.options.queueDefinitions.find((x) => x.name === q)?.limits ?? []);
      if (plan) plans.set(q, plan);
    }
    return plans;
  }

  /** The services of this process's roles, in start order; a configuration they cannot run with fails here, before any starts. */
  private build(): Service[] {
    const o = this.d.options;
    const d = this.d;
    const services: Service[] = [];
    const queues = withQueueLimits(this.plan.queues, o.queues);
    if (this.plan.kinds.length > 0 && queues.size > 0) {
      this.worker = new Worker({
        database: d.database,
        registry: d.registry,
        enqueuer: d.enqueuer,
        settings: {
          owner: o.owner,
          concurrency: o.concurrency,
          queues,
          kinds: this.plan.kinds,
          limits: this.limitPlans(queues.keys()),
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
        events: d.events,
        logger: d.logger,
        clock: this.clock,
      });
      // Before the worker, so it stops after it and its last flush has the last completions.
      services.push(new JobStatsRecorder({ database: d.database, events: d.events, writer: o.owner, onError: (err) => d.events.emit(workerError('job stats', err)), logger: d.logger, clock: this.clock }));
      // The listener first: the worker's first claim follows its (re)connect.
      if (o.listen) services.push((this.listener = this.makeListener(this.worker)));
      services.push(this.worker);
    }
    const schedules = d.schedules.filter((sc) => this.plan.schedules.includes(sc.name));
    if (schedules.length > 0) {
      services.push(new ScheduleTicker({ database: d.database, enqueuer: d.enqueuer, registry: d.registry, schedules, events: d.events, logger: d.logger, clock: this.clock }));
    }
    const daemons = d.daemons.filter((dm) => this.plan.daemons.includes(dm.name));
    if (daemons.length > 0) {
      this.daemons = new DaemonRunner({ database: d.database, daemons, holder: o.owner, events: d.events, logger: d.logger, logErrorMessages: o.logErrorMessages, clock: this.clock });
      services.push(this.daemons);
    }
    const consumers = d.consumers.filter((c) => this.plan.consumers.includes(c.name));
    if (consumers.length > 0) {
      if (!o.redisUrl) {
        throw new ConfigError('nightshift options', [{ path: 'redisUrl', message: `consumers ${consumers.map((c) => c.name).join(', ')} need Redis: give redisUrl or set REDIS_URL` }]);
      }
      this.consumers = new ConsumerRunner({
        redisUrl: o.redisUrl,
        consumers,
        owner: o.owner,
        events: d.events,
        logger: d.logger,
        shutdownGraceMs: o.shutdownGraceMs,
        // Singleton consumers are elected through the same lease rows as daemons.
        leaderLease: (name) => new LeaseElector({ database: d.database, name, holder: o.owner, events: d.events, logger: d.logger, clock: this.clock }),
      });
      services.push(this.consumers);
    }
    if (o.maintenance) {
      this.maintenance = new MaintenanceService({
        database: d.database,
        maintenance: d.maintenance,
        events: d.events,
        holder: o.owner,
        jobLeaseMs: o.leaseMs,
        intervalMs: o.maintenanceIntervalMs,
        retention: o.retention,
        logger: d.logger,
        clock: this.clock,
      });
      services.push(this.maintenance);
    }
    if (o.registerProcess) {
      const planned = { kinds: this.plan.kinds, queues: [...queues.keys()], schedules: this.plan.schedules, daemons: this.plan.daemons, consumers: this.plan.consumers };
      this.registry = new ProcessRegistry({
        database: d.database,
        roles: this.plan.roles,
        // Read at every heartbeat: `nightshift workers` shows what each process runs now.
        info: () => ({ ...planned, activeConsumers: this.consumers?.active ?? [], concurrency: o.concurrency, running: this.runningJobs, leading: this.leadership() }),
        heartbeatMs: Math.min(10_000, o.heartbeatMs),
        onError: (err) => d.events.emit(workerError('process registry', err)),
        clock: this.clock,
      });
      services.push(this.registry);
    }
    return services;
  }

  private makeListener(worker: Worker): Listener {
    const o = this.d.options;
    const { jobs, control } = this.d.database.channels;
    const url = o.listenDatabaseUrl ?? o.databaseUrl;
    return new Listener(
      {
        ...(url ? { connectionString: url } : { clientConfig: this.d.database.pool.clientConfig() }),
        channels: [jobs, control],
        // Sent through the pool, as every real notification is; on a channel of its own, so no
        // worker anywhere is woken by it.
        proof: { via: this.d.database.executor, timeoutMs: PROOF_TIMEOUT_MS },
        healthCheckMs: 15_000,
        maxReconnectDelayMs: 5_000,
        applicationName: `nightshift:${o.owner}`,
        clock: this.clock,
      },
      {
        onNotify: (channel, payload) => {
          if (channel === jobs) {
            // `queue` (work is due), `queue <ms>` (the earliest new job is due in ms) or
            // `queue freed <limit>,…` (a job a claim waited for left running: jobs_limit_freed).
            const space = payload.indexOf(' ');
            const queue = space < 0 ? payload : payload.slice(0, space);
            const rest = space < 0 ? '' : payload.slice(space + 1);
            if (rest.startsWith(FREED)) {
              worker.limitFreed(rest.slice(FREED.length).split(','));
              if (this.d.events.active) this.d.events.emit({ type: 'listener.notified', queue });
              return;
            }
            const dueInMs = space < 0 ? undefined : Number(rest);
            worker.wake(queue, dueInMs);
            // Tells wake-ups by notification apart from polling (fault tests, metrics).
            if (this.d.events.active) this.d.events.emit({ type: 'listener.notified', queue, ...(dueInMs !== undefined ? { dueInMs } : {}) });
          } else if (payload.startsWith('cancel:')) worker.cancelled(payload.slice(7));
          else if (payload.startsWith('resume:')) worker.wake(payload.slice(7));
        },
        onConnected: () => {
          this.d.events.emit({ type: 'listener.connected' });
          worker.wake();
        },
        onLost: (error) => this.d.events.emit({ type: 'listener.lost', error: error.message }),
        onProof: (proven, reason) => this.d.events.emit(proven ? { type: 'listener.proven' } : { type: 'listener.unproven', reason: `${reason ?? 'not heard'}: ${UNPROVEN_WHY}`, hint: UNPROVEN_HINT }),
      },
    );
  }
}
