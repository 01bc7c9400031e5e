import { hostname, userInfo } from 'node:os';
import { z } from 'zod';
import { schemaNameProblem } from '../db/identifiers.js';
import type { PgPool } from '../db/pool.js';
import { closest, ConfigError, unknownKey, type Issue } from '../errors.js';
import type { JobDefinition } from '../jobs/define-job.js';
import { ENV_NAME } from '../jobs/define-job.js';
import { isQueueDefinition, type QueueDefinition } from '../jobs/define-queue.js';
import { limitConflicts } from '../jobs/limits.js';
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../jobs/payload.js';
import { retentionIssues } from '../jobs/retention.js';
import type { DaemonDefinition } from '../leadership/define-daemon.js';
import type { Retention } from '../maintenance/job-maintenance.js';
import { isPipelineDefinition, type PipelineLike } from '../pipelines/define-pipeline.js';
import type { RoleDefinition } from '../roles/role-plan.js';
import type { ScheduleDefinition } from '../schedules/define-schedule.js';
import { isConsumerDefinition, type ConsumerDefinition } from '../streams/define-consumer.js';
import { isStreamDefinition, type StreamDefinition } from '../streams/define-stream.js';
import type { Logger } from '../telemetry/logger.js';
import { BUILTIN_CHECK_NAMES } from '../watchdog/builtins/index.js';
import { BUILTIN_PREFIX, isCheckDefinition, WATCHDOG_QUEUE, type CheckDefinition } from '../watchdog/define-check.js';
import { resolveWatchdogSettings, type WatchdogOptions, type WatchdogSettings } from '../watchdog/watchdog-settings.js';

/** Options of {@link createNightshift}. Every field's default is stated. */
export interface NightshiftOptions {
  /** PostgreSQL URL. Give this or `pool`. */
  databaseUrl?: string;
  /** Your own pg Pool (nightshift will not end it). Give this or `databaseUrl`. */
  pool?: PgPool;
  /** Schema holding nightshift's tables. Default `nightshift`. */
  schema?: string;
  /** Job kinds this client knows (and, once started, runs). */
  jobs?: JobDefinition[];
  /** Jobs run at once by this process, across queues. Default 10. */
  concurrency?: number;
  /**
   * Concurrency per queue: `{ mail: { concurrency: 2 } }` (a list names queues with no limit of
   * their own). Which queues a process claims is decided by its roles — with none, the queues of
   * all `jobs` — never by this option; a queue no kind uses and no role names is a config error.
   * Default: no per-queue limit.
   */
  queues?: string[] | Record<string, { concurrency?: number }>;
  /**
   * Fleet-wide limits of queues (defineQueue: `concurrency`, `rateLimit`), held across every
   * process, unlike `queues`. Every process claiming such a queue must list it (the config's
   * `queues`). Default: none.
   */
  queueDefinitions?: QueueDefinition[];
  /** Lease length. Default 30 000 ms. */
  leaseMs?: number;
  /** Lease renewal interval, below `leaseMs`. Default 10 000 ms. */
  heartbeatMs?: number;
  /** Longest wait between polls of an idle queue (the bound on latency if every notification is lost). Default 1000 ms. */
  pollIntervalMs?: number;
  /**
   * Most jobs each queue may claim ahead of its free slots, held (leased, heartbeated, not started)
   * so a slot freed by a finished handler is filled without a round trip. The worker holds only
   * what its recent rate would start within a few claim round trips (none for slow or stalled
   * handlers), up to this. 0 claims only for free slots. See docs/jobs.md. Default 500.
   */
  prefetch?: number;
  /** On stop, how long running jobs may finish before they are aborted and handed back. Default 25 000 ms. */
  shutdownGraceMs?: number;
  /** Largest payload, in bytes of JSON. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Connections in the shared pool (when nightshift creates it). Default 10. */
  maxConnections?: number;
  /**
   * A server-side `statement_timeout` (ms) on every connection of the pool nightshift creates:
   * for a read-only client such as the dashboard's, so a slow page query is cut, never left
   * running. Default: none (the server's setting).
   */
  statementTimeoutMs?: number;
  /** Rescue, expiry and pruning in this process. Default true. */
  maintenance?: boolean;
  /** How often maintenance runs. Default 5000 ms. */
  maintenanceIntervalMs?: number;
  /**
   * How long finished jobs are kept, per state. Default: completed 1 day, others 30 days.
   * `completed: 0` deletes a job as it completes (a DELETE instead of an UPDATE, the cheapest
   * completion; the job is then gone from listings at once).
   */
  retention?: Retention;
  /** LISTEN for wake-ups (polling still runs). Default true. */
  listen?: boolean;
  /**
   * Named prepared statements (parsed and planned once per connection). Default `'auto'`: named
   * on the pool, unnamed inside transactions, and switched off for the rest of the process (with
   * one `database.prepared-statements-off` warning) the first time a transaction-mode pooler
   * (PgBouncer) makes one collide. `false` never names them (say so up front behind such a pooler);
   * `true` always does, and a collision is an error (NS_PREPARED_STATEMENTS). See docs/poolers.md.
   */
  preparedStatements?: boolean | 'auto';
  /**
   * A URL for the LISTEN connection alone, when `databaseUrl` (or `pool`) goes through a
   * transaction-mode pooler that cannot deliver notifications: point it at PostgreSQL directly
   * (or at a session-mode pool). One connection per listening process. Default: `DATABASE_LISTEN_URL`,
   * else the pool's target.
   */
  listenDatabaseUrl?: string;
  /** Your logger (pino or compatible). Default: pino JSON at NIGHTSHIFT_LOG_LEVEL or info, readable in a terminal. */
  logger?: Logger;
  /** More keys to redact in the default logger (credentials and payloads always are). */
  redact?: string[];
  /** Put error messages of failed jobs in logs and spans. Default false: they may quote secrets; they are stored with the job. */
  logErrorMessages?: boolean;
  /** The actor written to the audit log when an action names none. Default `user@host`. */
  actor?: string;
  /** This process's name in leases. Default `host:pid`. */
  owner?: string;
  /** Concurrent enqueues coalesced into one INSERT: statements in flight at once. Default 2. */
  enqueueBatchInFlight?: number;
  /** Named roles: what a process with each role hosts. */
  roles?: Record<string, RoleDefinition>;
  /** The roles this process runs. Default: everything (all jobs, schedules, daemons). */
  activeRoles?: string[];
  /** Environment variables every process must have; start-up fails closed naming the missing ones. */
  requiredEnv?: string[];
  /** Fail start-up when the fleet would exceed the server's connections: `replicas` processes of this shape. */
  budget?: { replicas?: number; maxConnectionsPerProcess?: number };
  /** Register this process in the `processes` table (who runs what). Default true. */
  registerProcess?: boolean;
  /** Daemons (from defineDaemon): each runs on exactly one live process among those hosting it. */
  daemons?: DaemonDefinition[];
  /** Schedules (from defineSchedule): each tick enqueues its job exactly once across the fleet. */
  schedules?: ScheduleDefinition[];
  /** Redis for streams, `redis://…`. Default: REDIS_URL. Needed when streams or consumers are used. */
  redisUrl?: string;
  /** Streams (defineStream) this client publishes to by name. */
  streams?: StreamDefinition[];
  /** Stream consumers (defineConsumer), hosted by roles like jobs. */
  consumers?: ConsumerDefinition[];
  /** Checks (defineCheck): each tick runs once across the fleet, on a process whose role hosts it (docs/watchdog.md). */
  checks?: CheckDefinition[];
  /**
   * The watchdog: notifiers, the built-in checks' settings, delivery of notifications. Giving it
   * (even `{}`), or any `checks`, turns the watchdog on, with the built-ins on by default.
   * Default: off.
   */
  watchdog?: WatchdogOptions;
  /**
   * Pipelines (definePipeline): their step kinds (`pipeline:<name>:<step>`) and starter kind
   * (`pipeline:<name>`) join this client's jobs, and `ns.pipelines` operates their runs.
   */
  pipelines?: PipelineLike[];
}

const positiveInt = (max: number) => z.number().int().min(1).max(max);
const ms = positiveInt(2_147_483_647);

const schema = z
  .object({
    databaseUrl: z.string().min(1).optional(),
    pool: z.custom<PgPool>((v) => typeof v === 'object' && v !== null && typeof (v as { connect?: unknown }).connect === 'function', 'must be a pg Pool').optional(),
    schema: z.string().optional(),
    jobs: z
      .array(
        z.custom<JobDefinition>((v) => typeof v === 'object' && v !== null && typeof (v as JobDefinition).kind === 'string' && typeof (v as JobDefinition).run === 'function', 'must be created with defineJob'),
      )
      .optional(),
    concurrency: positiveInt(10_000).optional(),
    queues: z.union([z.array(z.string()), z.record(z.string(), z.object({ concurrency: positiveInt(10_000).optional() }).strict())]).optional(),
    queueDefinitions: z.array(z.custom<QueueDefinition>((v) => isQueueDefinition(v), 'must be created with defineQueue')).optional(),
    leaseMs: ms.min(1_000).optional(),
    heartbeatMs: ms.min(100).optional(),
    pollIntervalMs: ms.min(10).optional(),
    prefetch: z.number().int().min(0).max(10_000).optional(),
    shutdownGraceMs: z.number().int().min(0).max(2_147_483_647).optional(),
    maxPayloadBytes: positiveInt(256 * 1_048_576).optional(),
    maxConnections: positiveInt(1_000).optional(),
    statementTimeoutMs: positiveInt(2_147_483_647).optional(),
    maintenance: z.boolean().optional(),
    maintenanceIntervalMs: ms.min(100).optional(),
    // Checked by retentionIssues below: the rule prune() applies, with the path and what is accepted.
    retention: z.unknown().optional(),
    listen: z.boolean().optional(),
    preparedStatements: z.union([z.boolean(), z.literal('auto')]).optional(),
    listenDatabaseUrl: z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must start with postgres:// or postgresql://')
      .optional(),
    logger: z
      .custom<Logger>(
        (v) => typeof v === 'object' && v !== null && typeof (v as Logger).info === 'function' && typeof (v as Logger).child === 'function',
        'must be a pino logger (or one with info/warn/error/debug/child)',
      )
      .optional(),
    actor: z.string().min(1).max(200).optional(),
    redact: z.array(z.string().min(1)).optional(),
    logErrorMessages: z.boolean().optional(),
    owner: z.string().min(1).max(200).optional(),
    enqueueBatchInFlight: positiveInt(64).optional(),
    roles: z
      .record(
        z.string().regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'role names are 1 to 64 letters, digits, _ . : -'),
        z
          .object({
            jobs: z.array(z.string()).optional(),
            queues: z.array(z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'not a valid queue name')).optional(),
            schedules: z.array(z.string()).optional(),
            daemons: z.array(z.string()).optional(),
            consumers: z.array(z.string()).optional(),
            checks: z.array(z.string()).optional(),
            requiredEnv: z.array(z.string().regex(ENV_NAME, 'not an environment variable name')).optional(),
          })
          .strict(),
      )
      .optional(),
    activeRoles: z.array(z.string().min(1)).optional(),
    requiredEnv: z.array(z.string().regex(ENV_NAME, 'not an environment variable name')).optional(),
    budget: z
      .object({ replicas: positiveInt(10_000).optional(), maxConnectionsPerProcess: positiveInt(10_000).optional() })
      .strict()
      .optional(),
    registerProcess: z.boolean().optional(),
    redisUrl: z
      .string()
      .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
      .optional(),
    streams: z.array(z.custom<StreamDefinition>((v) => isStreamDefinition(v), 'must be created with defineStream')).optional(),
    consumers: z.array(z.custom<ConsumerDefinition>((v) => isConsumerDefinition(v), 'must be created with defineConsumer')).optional(),
    schedules: z
      .array(
        z.custom<ScheduleDefinition>(
          (v) => typeof v === 'object' && v !== null && typeof (v as ScheduleDefinition).name === 'string' && typeof (v as ScheduleDefinition).spec === 'string',
          'must be created with defineSchedule',
        ),
      )
      .optional(),
    daemons: z
      .array(
        z.custom<DaemonDefinition>(
          (v) => typeof v === 'object' && v !== null && typeof (v as DaemonDefinition).name === 'string' && typeof (v as DaemonDefinition).run === 'function',
          'must be created with defineDaemon',
        ),
      )
      .optional(),
    checks: z.array(z.custom<CheckDefinition>((v) => isCheckDefinition(v), 'must be created with defineCheck')).optional(),
    // Validated by resolveWatchdogSettings, which names each field.
    watchdog: z.unknown().optional(),
    pipelines: z.array(z.custom<PipelineLike>((v) => isPipelineDefinition(v), 'must be created with definePipeline')).optional(),
  })
  .strict();

/** The resolved, validated, frozen client settings. */
export interface ResolvedOptions {
  databaseUrl: string | undefined;
  pool: PgPool | undefined;
  schema: string;
  jobs: JobDefinition[];
  concurrency: number;
  queues: Map<string, number> | undefined;
  queueDefinitions: QueueDefinition[];
  leaseMs: number;
  heartbeatMs: number;
  pollIntervalMs: number;
  prefetch: number;
  shutdownGraceMs: number;
  maxPayloadBytes: number;
  maxConnections: number;
  statementTimeoutMs: number | undefined;
  maintenance: boolean;
  maintenanceIntervalMs: number;
  retention: Retention;
  listen: boolean;
  preparedStatements: boolean | 'auto';
  listenDatabaseUrl: string | undefined;
  logger: Logger | undefined;
  redact: string[];
  logErrorMessages: boolean;
  actor: string;
  owner: string;
  enqueueBatchInFlight: number;
  roles: Record<string, RoleDefinition>;
  activeRoles: string[] | undefined;
  requiredEnv: string[];
  budget: { replicas?: number; maxConnectionsPerProcess?: number } | undefined;
  registerProcess: boolean;
  daemons: DaemonDefinition[];
  schedules: ScheduleDefinition[];
  redisUrl: string | undefined;
  streams: StreamDefinition[];
  consumers: ConsumerDefinition[];
  checks: CheckDefinition[];
  /** The watchdog's settings; undefined when the watchdog is off (no `checks`, no `watchdog`). */
  watchdog: WatchdogSettings | undefined;
  pipelines: PipelineLike[];
}

const KEYS = Object.keys(schema.shape);

/**
 * What is wrong with a database URL, or undefined. Checked before any connection, so a malformed
 * URL is a configuration error rather than a database failure (pg would report "Invalid URL", or
 * quietly fall back to localhost for an undecodable password). Never quotes the URL: it may hold
 * a password.
 */
export function databaseUrlProblem(url: string): string | undefined {
  if (!/^postgres(ql)?:\/\//i.test(url)) return 'must start with postgres:// or postgresql://';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a valid URL (check the port, and percent-encode special characters in the user and password)';
  }
  for (const [part, value] of [
    ['user', parsed.username],
    ['password', parsed.password],
    ['database', parsed.pathname],
  ] as const) {
    try {
      decodeURIComponent(value);
    } catch {
      return `is not a valid URL: the ${part} has a malformed percent-encoding (write % as %25)`;
    }
  }
  return undefined;
}

/** Every client option's name (the keys of {@link NightshiftOptions}). */
export const CLIENT_OPTION_KEYS: readonly string[] = Object.freeze([...KEYS]);

/**
 * `queues` sets the concurrency of queues the roles claim; it does not choose them (that once let
 * a shared `queues` list silently replace what a pod's role claimed). A queue that no job kind
 * uses and no role names can be claimed by no process: a typo, or a leftover of that old meaning.
 */
function queueProblems(o: NightshiftOptions, issues: Issue[]): void {
  if (o.queues === undefined || typeof o.queues !== 'object' || o.queues === null) return;
  const known = new Set<string>();
  for (const j of Array.isArray(o.jobs) ? o.jobs : []) if (typeof j?.queue === 'string') known.add(j.queue);
  for (const r of Object.values(o.roles ?? {})) for (const q of Array.isArray(r?.queues) ? r.queues : []) known.add(q);
  if (o.watchdog !== undefined || o.checks?.length) known.add(WATCHDOG_QUEUE);
  const named = Array.isArray(o.queues) ? o.queues.map((q, i) => [String(i), q] as const) : Object.keys(o.queues).map((q) => [q, q] as const);
  for (const [key, queue] of named) {
    if (typeof queue !== 'string' || known.has(queue)) continue;
    const best = closest(queue, [...known]);
    issues.push({
      path: `queues.${key}`,
      message: `no job kind has queue "${queue}" and no role names it${best ? `; did you mean "${best}"?` : ''} (queues sets the concurrency of the queues a process claims; to claim from a queue, name it in a role's queues)`,
    });
  }
}

/** Validates client options, reporting every problem at once with a did-you-mean for typos. */
export function resolveOptions(input: NightshiftOptions): Readonly<ResolvedOptions> {
  const issues: Issue[] = [];
  if (typeof input !== 'object' || input === null) throw new ConfigError('nightshift options', [{ path: '', message: 'must be an object' }]);
  const parsed = schema.safeParse(input);
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      if (i.code === 'unrecognized_keys') for (const k of i.keys) issues.push(unknownKey([...i.path, k].join('.'), KEYS));
      else issues.push({ path: i.path.join('.'), message: i.message });
    }
  }
  const o = input;
  if (!o.databaseUrl && !o.pool) issues.push({ path: 'databaseUrl', message: 'give databaseUrl (or DATABASE_URL) or pool' });
  if (o.databaseUrl && o.pool) issues.push({ path: 'pool', message: 'give databaseUrl or pool, not both' });
  if (typeof o.databaseUrl === 'string' && o.databaseUrl && databaseUrlProblem(o.databaseUrl)) issues.push({ path: 'databaseUrl', message: databaseUrlProblem(o.databaseUrl)! });
  if (Array.isArray(o.activeRoles) && o.activeRoles.every((r) => typeof r === 'string' && r.trim() === '')) {
    issues.push({ path: 'activeRoles', message: 'names no role; leave it out to run everything' });
  }
  // Checked here, with everything else, so a config file reports it at load, before any connection.
  if (o.retention !== undefined) issues.push(...retentionIssues(o.retention, 'retention'));
  if (o.schema !== undefined && schemaNameProblem(o.schema)) issues.push({ path: 'schema', message: schemaNameProblem(o.schema)! });
  queueProblems(o, issues);
  const watchdogOn = o.watchdog !== undefined || (Array.isArray(o.checks) && o.checks.length > 0);
  const watchdogIssues: Issue[] = [];
  const watchdog = watchdogOn ? resolveWatchdogSettings(o.watchdog as WatchdogOptions | undefined, watchdogIssues) : undefined;
  for (const i of watchdogIssues) issues.push({ ...i, path: i.path ? `watchdog.${i.path}` : 'watchdog' });
  checkRefs(o, issues);
  if (Array.isArray(o.jobs) && (o.queueDefinitions === undefined || Array.isArray(o.queueDefinitions))) issues.push(...limitConflicts(o.jobs, o.queueDefinitions ?? []));
  const leaseMs = o.leaseMs ?? 30_000;
  const heartbeatMs = o.heartbeatMs ?? Math.min(10_000, Math.floor(leaseMs / 3));
  // Redis is checked where it is needed (a process hosting consumers, a publish), so a process
  // that only works the queue can load a config with streams without REDIS_URL.
  const redisUrl = o.redisUrl ?? (process.env.REDIS_URL || undefined);
  const listenDatabaseUrl = o.listenDatabaseUrl ?? (process.env.DATABASE_LISTEN_URL || undefined);
  if (o.listenDatabaseUrl === undefined && listenDatabaseUrl && !/^postgres(ql)?:\/\//.test(listenDatabaseUrl)) {
    issues.push({ path: 'listenDatabaseUrl', message: 'DATABASE_LISTEN_URL must start with postgres:// or postgresql://' });
  }
  if (heartbeatMs >= leaseMs) issues.push({ path: 'heartbeatMs', message: `must be below leaseMs (${leaseMs}); a third of it is a good value` });
  if (issues.length) throw new ConfigError('nightshift options', issues);
  let queues: Map<string, number> | undefined;
  if (Array.isArray(o.queues)) queues = new Map(o.queues.map((q) => [q, Infinity]));
  else if (o.queues) queues = new Map(Object.entries(o.queues).map(([q, v]) => [q, v.concurrency ?? Infinity]));
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (some containers).
  }
  return Object.freeze({
    databaseUrl: o.databaseUrl,
    pool: o.pool,
    schema: o.schema ?? 'nightshift',
    jobs: o.jobs ?? [],
    concurrency: o.concurrency ?? 10,
    queues,
    queueDefinitions: o.queueDefinitions ?? [],
    leaseMs,
    heartbeatMs,
    pollIntervalMs: o.pollIntervalMs ?? 1_000,
    prefetch: o.prefetch ?? 500,
    shutdownGraceMs: o.shutdownGraceMs ?? 25_000,
    maxPayloadBytes: o.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    maxConnections: o.maxConnections ?? 10,
    statementTimeoutMs: o.statementTimeoutMs,
    maintenance: o.maintenance ?? true,
    maintenanceIntervalMs: o.maintenanceIntervalMs ?? 5_000,
    retention: o.retention ?? {},
    listen: o.listen ?? true,
    preparedStatements: o.preparedStatements ?? 'auto',
    listenDatabaseUrl,
    logger: o.logger,
    redact: o.redact ?? [],
    logErrorMessages: o.logErrorMessages ?? false,
    actor: o.actor ?? `${user}@${hostname()}`,
    owner: o.owner ?? `${hostname()}:${process.pid}`,
    enqueueBatchInFlight: o.enqueueBatchInFlight ?? 2,
    roles: o.roles ?? {},
    activeRoles: o.activeRoles?.map((r) => r.trim()),
    requiredEnv: o.requiredEnv ?? [],
    budget: o.budget,
    registerProcess: o.registerProcess ?? true,
    daemons: o.daemons ?? [],
    schedules: o.schedules ?? [],
    redisUrl,
    streams: o.streams ?? [],
    consumers: o.consumers ?? [],
    checks: o.checks ?? [],
    watchdog,
    pipelines: o.pipelines ?? [],
  });
}

/** The checks a role names must be defined (or built-ins, or `'nightshift.*'` for all of them). */
function checkRefs(o: NightshiftOptions, issues: Issue[]): void {
  const known = [...(Array.isArray(o.checks) ? o.checks.filter(isCheckDefinition).map((c) => c.name) : []), ...BUILTIN_CHECK_NAMES];
  for (const [role, r] of Object.entries(o.roles ?? {})) {
    (Array.isArray(r?.checks) ? r.checks : []).forEach((name, i) => {
      if (typeof name !== 'string' || name === `${BUILTIN_PREFIX}*` || known.includes(name)) return;
      const best = closest(name, [...known, `${BUILTIN_PREFIX}*`]);
      issues.push({ path: `roles.${role}.checks.${i}`, message: `unknown check "${name}"${best ? `; did you mean "${best}"?` : `; defined: ${known.join(', ')}`}` });
    });
  }
}
