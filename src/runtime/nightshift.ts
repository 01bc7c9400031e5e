import type { Registry } from 'prom-client';
import { Database } from '../db/database.js';
import type { Executor } from '../db/executor.js';
import type { JobLogLine } from '../db/job-logs.js';
import type { JobLimitState, LimitRecord } from '../db/limits.js';
import type { MigrateResult } from '../db/migrator.js';
import { createPool, type PoolHandle } from '../db/pool.js';
import type { ProcessRecord } from '../db/processes.js';
import { preparedStatementsOffHint } from '../db/statements.js';
import { ConfigError, StoppedError } from '../errors.js';
import { CheckNotFoundError } from '../errors.js';
import type { JobDefinition } from '../jobs/define-job.js';
import type { EnqueueOptions, EnqueueResult } from '../jobs/enqueue-options.js';
import { Enqueuer, type EnqueueManyOptions } from '../jobs/enqueuer.js';
import { JobAdmin } from '../jobs/job-admin.js';
import { JobRegistry } from '../jobs/job-registry.js';
import type { PayloadSchema, SchemaInput } from '../jobs/standard-schema.js';
import { listLeases, type LeaseInfo } from '../leadership/lease-listing.js';
import { systemClock } from '../lifecycle/clock.js';
import { JobMaintenance, type Retention } from '../maintenance/job-maintenance.js';
import type { PipelineAdmin } from '../pipelines/pipeline-admin.js';
import { PIPELINE_SWEEP_DAEMON, PipelineEngine } from '../pipelines/pipeline-engine.js';
import { planRoles, type RolePlan } from '../roles/role-plan.js';
import { ScheduleAdmin, type ScheduleActorOptions, type ScheduleInfo, type ScheduleTickRecord, type TriggerResult } from '../schedules/schedule-admin.js';
import type { StreamDefinition } from '../streams/define-stream.js';
import type { StreamsDiagnosis } from '../streams/diagnose-streams.js';
import { StreamClient } from '../streams/stream-client.js';
import { EventBus, type EventListener } from '../telemetry/events.js';
import { createLogger, logEvents, type Logger } from '../telemetry/logger.js';
import type { NightshiftMetrics } from '../telemetry/metrics.js';
import { AlertAdmin, type AckOptions, type AlertRecord, type ListAlertsOptions } from '../watchdog/alert-admin.js';
import type { CheckRunReport } from '../watchdog/check-runner.js';
import { Watchdog, type CheckInfo } from '../watchdog/watchdog.js';
import { connectionBudget, poolSize, type BudgetReport } from './budget.js';
import { clientMetrics } from './client-metrics.js';
import { resolveOptions, type NightshiftOptions, type ResolvedOptions } from './client-options.js';
import { Host, type Wakeups } from './host.js';
import { OpsServer } from './ops-server.js';
import { listProcesses } from './process-registry.js';
import { assertNotifiersComplete, checkHosting, withWatchdog } from './watchdog-wiring.js';

/**
 * A nightshift client: enqueue jobs, run workers, and operate the queue. One per process is the
 * rule (it owns the process's shared pool).
 */
export class Nightshift extends JobAdmin {
  readonly options: Readonly<ResolvedOptions>;
  readonly events: EventBus;
  readonly logger: Logger;
  private readonly pool: PoolHandle;
  private readonly registry: JobRegistry;
  private readonly enqueuer: Enqueuer;
  private readonly maintenance: JobMaintenance;
  private host: Host | undefined;
  private metrics_: NightshiftMetrics | undefined;
  private streamClient: StreamClient | undefined;
  private ops: OpsServer | undefined;
  private readonly schedules: ScheduleAdmin;
  private plan_: RolePlan | undefined;
  private readonly engine: PipelineEngine;
  /** The pipelines' admin API: start, rerun, restart, cancel, verify and clean up runs; list and read them. */
  readonly pipelines: PipelineAdmin;
  private state: 'idle' | 'starting' | 'running' | 'stopping' | 'stopped' = 'idle';
  private stopping: Promise<void> | undefined;
  private unlog: () => void;
  private readonly watchdog: Watchdog | undefined;
  private readonly alerts: AlertAdmin;

  constructor(input: NightshiftOptions) {
    const options = resolveOptions(input);
    // Before the pool exists: a mistake here must not leave a pool open.
    if (options.watchdog) Watchdog.validate(options.checks, options.watchdog);
    const pool = createPool({
      ...(options.databaseUrl ? { connectionString: options.databaseUrl } : {}),
      ...(options.pool ? { pool: options.pool } : {}),
      max: options.maxConnections,
      ...(options.statementTimeoutMs !== undefined ? { statementTimeoutMs: options.statementTimeoutMs } : {}),
      applicationName: `nightshift:${options.owner}`,
    });
    const events = new EventBus();
    const database = new Database(pool, options.schema, options.preparedStatements, (off) => events.emit({ type: 'database.prepared-statements-off', ...off, hint: preparedStatementsOffHint(off) }));
    const logger = options.logger ?? createLogger({ redact: options.redact });
    // The watchdog's checks are schedules and jobs like any other (docs/watchdog.md).
    const client: { ns?: Nightshift } = {};
    const { options: withChecks, watchdog } = withWatchdog(options, { database, events, client: () => client.ns });
    // Pipelines' step and starter kinds join the client's jobs (the registry, the roles, the
    // testing helpers all see them); their handlers are bound to this client's database.
    const engine = new PipelineEngine({
      database,
      events,
      logger,
      pipelines: options.pipelines,
      actor: options.actor,
      sweepEveryMs: options.maintenanceIntervalMs,
      liveProcessMs: Math.max(30_000, 3 * options.heartbeatMs),
      errorMessages: options.logErrorMessages,
    });
    const all = engine.size > 0 ? Object.freeze({ ...withChecks, jobs: [...withChecks.jobs, ...engine.jobs] }) : withChecks;
    const registry = new JobRegistry(all.jobs);
    super({ database, actor: options.actor, events, definitions: (kind) => registry.get(kind) });
    client.ns = this;
    this.watchdog = watchdog;
    this.alerts = watchdog?.alerts ?? new AlertAdmin(database, events, options.actor);
    this.events = events;
    this.options = all;
    this.pool = pool;
    this.registry = registry;
    this.logger = logger;
    this.engine = engine;
    this.pipelines = engine.admin;
    this.unlog = logEvents(this.events, this.logger, { errorMessages: options.logErrorMessages });
    this.enqueuer = new Enqueuer({
      database,
      registry: this.registry,
      maxPayloadBytes: options.maxPayloadBytes,
      events: this.events,
      batching: { maxInFlight: options.enqueueBatchInFlight, maxBatch: 1_000 },
      errorMessages: options.logErrorMessages,
    });
    engine.attach(this.enqueuer);
    // Kinds with a retention of their own (pipeline steps keep their jobs and logs as long as their runs).
    this.maintenance = new JobMaintenance(
      database,
      this.events,
      new Map(
        registry
          .all()
          .filter((d) => d.retention)
          .map((d) => [d.kind, d.retention!]),
      ),
    );
    // Built now so duplicate schedule names and unknown kinds fail at construction.
    this.schedules = new ScheduleAdmin({ database, enqueuer: this.enqueuer, registry: this.registry, schedules: all.schedules, events: this.events, actor: options.actor });
    watchdog?.bind({ enqueuer: this.enqueuer, logger: this.logger });
  }

  /** The watchdog's alerts, newest first: all, open ones, or one check's (docs/watchdog.md). */
  listAlerts(options: ListAlertsOptions = {}): Promise<AlertRecord[]> {
    return this.alerts.list(options);
  }

  /** One alert (NS_ALERT_NOT_FOUND without it). */
  getAlert(id: string): Promise<AlertRecord> {
    return this.alerts.get(id);
  }

  /** Acknowledges an open alert, audited: no more reminders. A resolved one is NS_ALERT_RESOLVED. */
  ackAlert(id: string, options: AckOptions): Promise<{ alert: AlertRecord; changed: boolean }> {
    return this.alerts.ack(id, options);
  }

  /** Every check (the config's and the built-ins that are on): timing, last and next run, open alerts, hosts. */
  async listChecks(): Promise<CheckInfo[]> {
    return this.watchdog ? this.watchdog.listChecks() : [];
  }

  /** Runs a check now in this process and returns its results; it counts like a tick unless `dryRun`. */
  async runCheck(name: string, options: { dryRun?: boolean } = {}): Promise<CheckRunReport> {
    if (!this.watchdog) throw new CheckNotFoundError(String(name), []);
    return this.watchdog.runCheck(name, options);
  }

  /** Every fleet-wide limit (docs/flow-control.md) with its use now: slots in use, keys at their limit, due jobs waiting, the busiest keys. */
  listLimits(): Promise<LimitRecord[]> {
    return this.database.limits.list();
  }

  /** The limits a job holds or waits for, each with its key's use now (`full`: a due job of it waits for that limit, not stuck). */
  jobLimits(id: string): Promise<JobLimitState[]> {
    return this.database.limits.forJob(id);
  }

  /** Schedules with their timing, next runs, last tick and its job's outcome. */
  listSchedules(options: { next?: number } = {}): Promise<ScheduleInfo[]> {
    return this.schedules.listSchedules(options);
  }

  /** Runs a schedule's job now (a `manual` tick), with `payload` or the one the schedule builds; audited. */
  triggerSchedule(name: string, payload?: unknown, options: ScheduleActorOptions = {}): Promise<TriggerResult> {
    return this.schedules.triggerSchedule(name, payload, options);
  }

  /** A schedule's ticks, newest first, with what became of each. */
  scheduleTicks(name: string, options: { limit?: number; before?: Date } = {}): Promise<ScheduleTickRecord[]> {
    return this.schedules.scheduleTicks(name, options);
  }

  /** Stops a schedule from firing on every process until resumed (ticks due meanwhile never run); audited. */
  pauseSchedule(name: string, options: ScheduleActorOptions = {}): Promise<boolean> {
    return this.schedules.pauseSchedule(name, options);
  }

  /** Lets a paused schedule fire again, counting from now; audited. */
  resumeSchedule(name: string, options: ScheduleActorOptions = {}): Promise<boolean> {
    return this.schedules.resumeSchedule(name, options);
  }

  /** The schema this client uses. */
  get schema(): string {
    return this.database.schema;
  }

  /** The shared pool, as an executor for your own queries. */
  get db(): Executor {
    return this.database.executor;
  }

  /** Creates or upgrades the schema (safe to run from many replicas at once) and registers this client's kinds. */
  async migrate(): Promise<MigrateResult> {
    const result = await this.database.migrate();
    await this.register();
    return result;
  }

  /**
   * Runs `fn` in a transaction on one connection of the shared pool: committed when `fn` resolves,
   * rolled back when it throws. Pass `tx` as `{ db: tx }` to enqueue (or audit) inside it.
   */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.database.transaction(fn);
  }

  /** Throws NS_NOT_MIGRATED (or NS_SCHEMA_TOO_NEW) unless the schema has exactly this version's migrations. */
  async checkMigrated(): Promise<void> {
    await this.database.checkMigrated();
  }

  /** Enqueues one job; resolves once it is committed (or part of your transaction with `{ db }`). */
  enqueue<S extends PayloadSchema>(job: JobDefinition<S> | string, payload: SchemaInput<S>, options?: EnqueueOptions): Promise<EnqueueResult> {
    return this.enqueuer.enqueue(job as JobDefinition | string, payload, options);
  }

  /** Enqueues a kind this client does not define, through the SQL function (the kind must be registered by some client). */
  enqueueRegistered(kind: string, payload: unknown, options?: EnqueueOptions): Promise<EnqueueResult> {
    return this.enqueuer.enqueueRegistered(kind, payload, options);
  }

  /** Enqueues many jobs of one kind atomically (all or none). */
  enqueueMany<S extends PayloadSchema>(job: JobDefinition<S> | string, payloads: readonly SchemaInput<S>[], options?: EnqueueManyOptions<SchemaInput<S>>): Promise<EnqueueResult[]> {
    return this.enqueuer.enqueueMany(job as JobDefinition | string, payloads, options as EnqueueManyOptions<unknown>);
  }

  /** Subscribes to the event stream; returns the unsubscribe function. */
  on(listener: EventListener): () => void {
    return this.events.on(listener);
  }

  /**
   * Starts working for the roles of this process (all of them when none are given): checks the
   * roles, the required environment, the schema and the connection budget, registers kinds, then
   * runs the worker (jobs of the planned kinds and queues, with wake-ups), daemons, leader-elected
   * maintenance and the process registry. With no jobs it only enqueues and operates.
   */
  async start(): Promise<void> {
    if (this.state === 'stopping' || this.state === 'stopped') throw new StoppedError('start');
    if (this.state !== 'idle') return;
    this.state = 'starting';
    try {
      const o = this.options;
      const plan = this.planRoles();
      this.host = new Host(
        {
          database: this.database,
          registry: this.registry,
          enqueuer: this.enqueuer,
          maintenance: this.maintenance,
          events: this.events,
          logger: this.logger,
          options: o,
          daemons: plan.daemons.includes(PIPELINE_SWEEP_DAEMON) ? [...o.daemons, this.engine.daemon()] : o.daemons,
          schedules: o.schedules,
          consumers: o.consumers,
          // After the environment check: a process that delivers notifications needs complete notifiers.
          preflight: (plan) => assertNotifiersComplete(this.watchdog, plan),
        },
        plan,
      );
      await this.host.start();
      this.state = 'running';
    } catch (err) {
      this.state = 'idle';
      await this.host?.stop();
      this.host = undefined;
      throw err;
    }
  }

  /**
   * Stops: no new claims, running jobs finish within `shutdownGraceMs` or are handed back, daemons
   * release their leases, coalesced enqueues settle, and the pool closes (unless it is yours).
   * Safe before start and twice.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      this.state = 'stopping';
      await this.host?.stop();
      this.enqueuer.stopped = true;
      await this.enqueuer.drain();
      await this.streamClient?.stop();
      // Last: /readyz answers 503 while the process drains, until the very end.
      await this.ops?.stop();
      this.metrics_?.close();
      this.unlog();
      await this.pool.close();
      this.state = 'stopped';
    })();
    return this.stopping;
  }

  /** Runs rescue, expiry and the move of finished rows to the history once now; returns what each did. */
  async runMaintenance(): Promise<{ rescued: number; expired: number; archived: number }> {
    const rescued = await this.maintenance.rescue();
    const expired = await this.maintenance.expire();
    return { rescued, expired, archived: await this.maintenance.archive() };
  }

  /** Deletes finished jobs older than their state's retention (default: this client's `retention`). */
  prune(retention?: Retention) {
    return this.maintenance.prune(retention ?? this.options.retention);
  }

  /** Jobs whose lease this process holds right now. */
  get runningCount(): number {
    return this.host?.runningJobs ?? 0;
  }

  /**
   * Handlers still running after their job timed out, was cancelled or lost its lease (past the
   * grace period): their slots were given back; each is a handler that ignores its abort signal.
   */
  get stuckHandlers(): number {
    return this.host?.stuckHandlers ?? 0;
  }

  /** Queues this process claims from (empty before start or with no jobs). */
  get workedQueues(): string[] {
    return this.host?.queues ?? [];
  }

  /** Whether the wake-up listener is connected (false when not listening). */
  get listening(): boolean {
    return this.host?.listening ?? false;
  }

  /** How the worker hears of new jobs (`notify` once the listener proved its channel, else `polling` with why); undefined without a worker. */
  get wakeups(): Wakeups | undefined {
    return this.host?.wakeups();
  }

  /** Drops the listener's connection as a network fault would (for fault tests). */
  dropListenerConnection(): void {
    this.host?.dropListenerConnection();
  }

  /** What this process hosts for its roles (validated: an unknown role throws NS_UNKNOWN_ROLE). */
  planRoles(): RolePlan {
    if (this.plan_) return this.plan_;
    this.plan_ = planRoles(
      {
        jobs: this.registry.all().map((d) => ({ kind: d.kind, queue: d.queue, requiredEnv: d.requiredEnv ?? [] })),
        schedules: this.options.schedules.map((sc) => sc.name),
        daemons: this.options.daemons.map((d) => ({ name: d.name, requiredEnv: d.requiredEnv })),
        consumers: this.options.consumers.map((c) => c.name),
        requiredEnv: this.options.requiredEnv,
        checks: checkHosting(this.watchdog),
      },
      this.options.roles,
      this.options.activeRoles,
    );
    // The pipeline sweep runs (elected) among processes that run maintenance and host a pipeline step.
    const kinds = new Set(this.engine.kinds());
    if (this.options.maintenance && this.plan_.kinds.some((k) => kinds.has(k))) this.plan_.daemons.push(PIPELINE_SWEEP_DAEMON);
    return this.plan_;
  }

  /** Live processes of the fleet: host, pid, roles, version, what they host, last seen. */
  listProcesses(): Promise<ProcessRecord[]> {
    return listProcesses(this.database);
  }

  /** Connections one process of this shape (pool + listener) and `replicas` of them need, against the server. */
  connectionBudget(options: { replicas?: number } = {}): Promise<BudgetReport> {
    return connectionBudget(this.database, { pool: poolSize(this.options), listener: this.options.listen, replicas: options.replicas ?? 1 });
  }

  /**
   * Prometheus metrics of this client (created on first call): counters and histograms per kind
   * and queue from the event stream, queue depth and age, pool and leadership read at scrape time.
   * Pass your registry to merge them into yours.
   */
  metrics(options: { registry?: Registry; prefix?: string } = {}): NightshiftMetrics {
    this.metrics_ ??= clientMetrics(
      {
        database: this.database,
        events: this.events,
        pool: this.pool,
        clock: systemClock,
        stopped: () => this.state === 'stopped',
        leadership: () => this.host?.leadership() ?? [],
        listenerProven: () => this.host?.listenerProven,
        ...(this.watchdog ? { alerts: () => (this.state === 'stopped' ? Promise.resolve([]) : this.watchdog!.openAlertCounts().catch(() => [])) } : {}),
      },
      options,
    );
    return this.metrics_;
  }

  /**
   * Publishes to a stream (`XADD <stream> * payload <json>`, trace context in its own field), after
   * validating the payload against the stream's schema; nothing is written when it does not match.
   */
  publish<S extends PayloadSchema>(stream: StreamDefinition<S> | string, payload: SchemaInput<S>): Promise<{ id: string }> {
    return this.streams().publish(stream, payload);
  }

  /** Per stream: length, groups, consumers, pending and oldest pending age, lag, dead letters, and a status in words. */
  diagnoseStreams(options: { stalledAfterMs?: number } = {}): Promise<StreamsDiagnosis> {
    return this.streams().diagnose({ streams: this.options.streams, consumers: this.options.consumers, ...options });
  }

  private streams(): StreamClient {
    if (this.state === 'stopping' || this.state === 'stopped') throw new StoppedError('streams');
    if (!this.options.redisUrl) {
      throw new ConfigError('nightshift options', [{ path: 'redisUrl', message: 'streams need Redis: give redisUrl or set REDIS_URL' }]);
    }
    this.streamClient ??= new StreamClient({ redisUrl: this.options.redisUrl, streams: this.options.streams, events: this.events, owner: this.options.owner });
    return this.streamClient;
  }

  /** What a job's handler logged with `ctx.log`, by attempt (bounded per attempt; deleted with the job). */
  async jobLogs(id: string, options: { limit?: number } = {}): Promise<JobLogLine[]> {
    await this.getJob(id);
    return this.database.jobLogs.list({ jobId: id, limit: Math.min(Math.max(1, options.limit ?? 1_000), 10_000) });
  }

  /** Whether this client is started and not stopping: what `/readyz` reports. */
  get ready(): boolean {
    return this.state === 'running';
  }

  /** Serves `/metrics`, `/healthz` and `/readyz` on `port` (127.0.0.1 unless `host` says otherwise) until stop(). */
  async serveOps(options: { port: number; host?: string }): Promise<{ host: string; port: number }> {
    if (!this.ops) {
      const metrics = this.metrics();
      const ops = new OpsServer({
        source: {
          metrics: () => metrics.text(),
          ready: () => this.ready,
          status: () => {
            const w = this.wakeups;
            return {
              state: this.state,
              queues: this.workedQueues,
              running: this.runningCount,
              stuckHandlers: this.stuckHandlers,
              ...(w ? { wakeups: w.mode, ...(w.reason ? { wakeupsReason: w.reason } : {}) } : {}),
            };
          },
        },
        port: options.port,
        host: options.host,
        logger: this.logger,
      });
      await ops.start();
      this.ops = ops;
    }
    return this.ops.address!;
  }

  /** Current leader leases (daemons, maintenance, singletons): holder, token, expiry. */
  listLeases(options: { prefix?: string } = {}): Promise<LeaseInfo[]> {
    return listLeases(this.database, options);
  }

  /** This process's id in the process registry (after start). */
  get processId(): string | undefined {
    return this.host?.processId;
  }

  private async register(): Promise<void> {
    await this.database.queues.registerKinds(this.registry.kindRows());
    await this.database.queues.setPayloadLimit(this.options.maxPayloadBytes);
  }
}

/** Creates a client. Options are validated at once (NS_CONFIG_INVALID lists every problem); nothing connects until used. */
export function createNightshift(options: NightshiftOptions): Nightshift {
  return new Nightshift(options);
}
