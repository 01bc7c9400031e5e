import { closest, ConfigError, type Issue } from '../errors.js';
import type { JobDefinition } from '../jobs/define-job.js';
import type { QueueDefinition } from '../jobs/define-queue.js';
import type { DaemonDefinition } from '../leadership/define-daemon.js';
import type { PipelineLike } from '../pipelines/define-pipeline.js';
import type { RoleDefinition } from '../roles/role-plan.js';
import { resolveOptions, type NightshiftOptions } from '../runtime/client-options.js';
import type { ScheduleDefinition } from '../schedules/define-schedule.js';
import type { ConsumerDefinition } from '../streams/define-consumer.js';
import type { StreamDefinition } from '../streams/define-stream.js';
import type { Logger } from '../telemetry/logger.js';
import { isCheckDefinition, type CheckDefinition } from '../watchdog/define-check.js';
import type { WatchdogOptions } from '../watchdog/watchdog-settings.js';
import { DASHBOARD_CONFIG_KEYS, type DashboardConfig } from './dashboard-config.js';

/**
 * The application: what a `nightshift.config.ts` default-exports. Every client option of
 * {@link NightshiftOptions} has its place here (see {@link CONFIG_OPTION_PATHS}) but `pool` (the
 * CLI makes its pool from the database URL) and `activeRoles` (chosen per process by `--roles` or
 * `NIGHTSHIFT_ROLES`). Defaults are those of the client options.
 */
export interface NightshiftConfig {
  database?: {
    /** Default: `DATABASE_URL` (the CLI also takes `--database-url`). Keep secrets out of the file. */
    url?: string;
    /** Default `nightshift`. */
    schema?: string;
    /** Connections in this process's shared pool. Default 10. */
    maxConnections?: number;
    /** Named prepared statements: `'auto'` (default), `true` or `false`; see docs/poolers.md. */
    preparedStatements?: boolean | 'auto';
    /** A direct URL for the LISTEN connection when `url` goes through a transaction-mode pooler (docs/poolers.md). Default: `url`. */
    listenUrl?: string;
    /** `statement_timeout` of this process's connections, in ms (none by default; `nightshift dashboard` uses `dashboard.statementTimeoutMs`). */
    statementTimeoutMs?: number;
    /** Fail start-up when `replicas` processes would exceed the server's connections. */
    budget?: { replicas?: number; maxConnectionsPerProcess?: number };
  };
  jobs?: JobDefinition[];
  /** Queues with fleet-wide limits (defineQueue); not `worker.queues`, which bounds one process. */
  queues?: QueueDefinition[];
  /** Daemons (defineDaemon): each runs on exactly one live process among those hosting it. */
  daemons?: DaemonDefinition[];
  /** Schedules (defineSchedule): cron or interval, each tick run exactly once across the fleet. */
  schedules?: ScheduleDefinition[];
  /** Redis for streams. `url` defaults to REDIS_URL; keep credentials out of the file. */
  redis?: { url?: string };
  /** Streams (defineStream) published to by name. */
  streams?: StreamDefinition[];
  /** Stream consumers (defineConsumer), hosted by roles like jobs. */
  consumers?: ConsumerDefinition[];
  /** Checks (defineCheck), hosted by roles' `checks` (docs/watchdog.md). */
  checks?: CheckDefinition[];
  /** Notifiers, the built-in checks' settings, delivery; giving it (or any checks) turns the watchdog on. */
  watchdog?: WatchdogOptions;
  /** Pipelines (definePipeline): their step kinds join the jobs (roles may name them); `nightshift pipelines` operates them. */
  pipelines?: PipelineLike[];
  roles?: Record<string, RoleDefinition>;
  /** How a worker process runs: the client options of the same names. */
  worker?: Pick<
    NightshiftOptions,
    'concurrency' | 'queues' | 'leaseMs' | 'heartbeatMs' | 'pollIntervalMs' | 'prefetch' | 'shutdownGraceMs' | 'maintenance' | 'maintenanceIntervalMs' | 'retention' | 'listen' | 'owner' | 'registerProcess'
  >;
  /** Environment variables every process needs (start-up fails closed without them). */
  requiredEnv?: string[];
  maxPayloadBytes?: number;
  /** Concurrent enqueues coalesced into one INSERT: statements in flight at once. Default 2. */
  enqueueBatchInFlight?: number;
  logger?: Logger;
  /** More keys to redact in the default logger (credentials and payloads always are). */
  redact?: string[];
  /** Put error messages of failed jobs and daemons in logs and spans. Default false. */
  logErrorMessages?: boolean;
  /** The actor written to the audit log when an action names none (the CLI's `--actor` wins). Default `user@host`. */
  actor?: string;
  /** What `nightshift dashboard` serves with: auth, host, port (docs/dashboard.md). */
  dashboard?: DashboardConfig;
}

/**
 * Where each client option goes in a config file, as a dotted path. `pool` and `activeRoles` have
 * none: the CLI makes its own pool from the database URL, and roles are chosen per process.
 */
export const CONFIG_OPTION_PATHS: Readonly<Record<string, string>> = Object.freeze({
  databaseUrl: 'database.url',
  schema: 'database.schema',
  maxConnections: 'database.maxConnections',
  preparedStatements: 'database.preparedStatements',
  listenDatabaseUrl: 'database.listenUrl',
  statementTimeoutMs: 'database.statementTimeoutMs',
  budget: 'database.budget',
  redisUrl: 'redis.url',
  concurrency: 'worker.concurrency',
  queues: 'worker.queues',
  leaseMs: 'worker.leaseMs',
  heartbeatMs: 'worker.heartbeatMs',
  pollIntervalMs: 'worker.pollIntervalMs',
  prefetch: 'worker.prefetch',
  shutdownGraceMs: 'worker.shutdownGraceMs',
  maintenance: 'worker.maintenance',
  maintenanceIntervalMs: 'worker.maintenanceIntervalMs',
  retention: 'worker.retention',
  listen: 'worker.listen',
  owner: 'worker.owner',
  registerProcess: 'worker.registerProcess',
  jobs: 'jobs',
  queueDefinitions: 'queues',
  daemons: 'daemons',
  schedules: 'schedules',
  streams: 'streams',
  consumers: 'consumers',
  checks: 'checks',
  watchdog: 'watchdog',
  pipelines: 'pipelines',
  roles: 'roles',
  requiredEnv: 'requiredEnv',
  maxPayloadBytes: 'maxPayloadBytes',
  enqueueBatchInFlight: 'enqueueBatchInFlight',
  logger: 'logger',
  redact: 'redact',
  logErrorMessages: 'logErrorMessages',
  actor: 'actor',
});

const PATHS = Object.entries(CONFIG_OPTION_PATHS);
const sectionKeys = (section: string) => PATHS.filter(([, p]) => p.startsWith(`${section}.`)).map(([, p]) => p.slice(section.length + 1));
const TOP = [...new Set(PATHS.map(([, p]) => p.split('.')[0]!)), 'dashboard'];
const DATABASE = sectionKeys('database');
const WORKER = sectionKeys('worker');
const ROLE = ['jobs', 'queues', 'schedules', 'daemons', 'consumers', 'checks', 'requiredEnv'];

function unknownKeys(obj: unknown, known: string[], prefix: string, issues: Issue[]): void {
  if (typeof obj !== 'object' || obj === null) return;
  for (const key of Object.keys(obj)) {
    if (known.includes(key)) continue;
    const best = closest(key, known);
    issues.push({ path: prefix ? `${prefix}.${key}` : key, message: best ? `unknown key; did you mean "${best}"?` : `unknown key; known keys: ${known.join(', ')}` });
  }
}

function refs(names: unknown, known: string[], path: string, what: string, issues: Issue[]): void {
  if (names === undefined) return;
  if (!Array.isArray(names)) {
    issues.push({ path, message: `must be an array of ${what} names` });
    return;
  }
  names.forEach((n, i) => {
    if (typeof n !== 'string' || !known.includes(n)) {
      const best = typeof n === 'string' ? closest(n, known) : undefined;
      issues.push({
        path: `${path}.${i}`,
        message: `unknown ${what} "${String(n)}"${best ? `; did you mean "${best}"?` : known.length ? `; defined: ${known.join(', ')}` : `; no ${what} is defined`}`,
      });
    }
  });
}

/**
 * Declares the application: jobs, roles, database and worker settings (schedules, daemons and
 * streams join them as those modules land). Validates the whole config at once — every problem,
 * with its path and a did-you-mean — and returns it frozen.
 */
export function defineConfig(config: NightshiftConfig): Readonly<NightshiftConfig> {
  const issues: Issue[] = [];
  if (typeof config !== 'object' || config === null) throw new ConfigError('config', [{ path: '', message: 'the default export must be defineConfig({ ... })' }]);
  unknownKeys(config, TOP, '', issues);
  unknownKeys(config.database, DATABASE, 'database', issues);
  unknownKeys(config.worker, WORKER, 'worker', issues);
  unknownKeys(config.dashboard, DASHBOARD_CONFIG_KEYS, 'dashboard', issues);
  const kinds: string[] = [];
  (config.jobs ?? []).forEach((j, i) => {
    if (typeof j !== 'object' || j === null || typeof j.kind !== 'string' || typeof j.run !== 'function') {
      issues.push({ path: `jobs.${i}`, message: 'must be a job created with defineJob' });
      return;
    }
    if (kinds.includes(j.kind)) issues.push({ path: `jobs.${i}`, message: `kind "${j.kind}" is defined twice` });
    kinds.push(j.kind);
  });
  // A pipeline's kinds are jobs of the config: roles and schedules may name them.
  const pipelines: string[] = [];
  (config.pipelines ?? []).forEach((p, i) => {
    if (typeof p !== 'object' || p === null || typeof p.name !== 'string' || typeof p.spec !== 'object' || p.spec === null) {
      issues.push({ path: `pipelines.${i}`, message: 'must be a pipeline created with definePipeline' });
      return;
    }
    if (pipelines.includes(p.name)) issues.push({ path: `pipelines.${i}`, message: `pipeline "${p.name}" is defined twice` });
    pipelines.push(p.name);
    kinds.push(p.spec.starter.kind, ...p.spec.steps.map((s) => s.kind));
  });
  const daemons: string[] = [];
  (config.daemons ?? []).forEach((d, i) => {
    if (typeof d !== 'object' || d === null || typeof d.name !== 'string' || typeof d.run !== 'function') {
      issues.push({ path: `daemons.${i}`, message: 'must be a daemon created with defineDaemon' });
      return;
    }
    if (daemons.includes(d.name)) issues.push({ path: `daemons.${i}`, message: `daemon "${d.name}" is defined twice` });
    daemons.push(d.name);
  });
  const schedules: string[] = [];
  (config.schedules ?? []).forEach((sc, i) => {
    if (typeof sc !== 'object' || sc === null || typeof sc.name !== 'string' || typeof sc.spec !== 'string') {
      issues.push({ path: `schedules.${i}`, message: 'must be a schedule created with defineSchedule' });
      return;
    }
    if (schedules.includes(sc.name)) issues.push({ path: `schedules.${i}`, message: `schedule "${sc.name}" is defined twice` });
    schedules.push(sc.name);
    if (typeof sc.kind === 'string' && !kinds.includes(sc.kind) && typeof sc.job === 'string') {
      const best = closest(sc.kind, kinds);
      issues.push({ path: `schedules.${i}.job`, message: `unknown job kind "${sc.kind}"${best ? `; did you mean "${best}"?` : ''}` });
    }
  });
  unknownKeys(config.redis, sectionKeys('redis'), 'redis', issues);
  const consumers: string[] = [];
  (config.consumers ?? []).forEach((c, i) => {
    if (typeof c !== 'object' || c === null || typeof c.name !== 'string') {
      issues.push({ path: `consumers.${i}`, message: 'must be a consumer created with defineConsumer' });
      return;
    }
    if (consumers.includes(c.name)) issues.push({ path: `consumers.${i}`, message: `consumer "${c.name}" is defined twice` });
    consumers.push(c.name);
  });
  const checks: string[] = [];
  (Array.isArray(config.checks) ? config.checks : []).forEach((c, i) => {
    if (!isCheckDefinition(c)) {
      issues.push({ path: `checks.${i}`, message: 'must be a check created with defineCheck' });
      return;
    }
    if (checks.includes(c.name)) issues.push({ path: `checks.${i}`, message: `check "${c.name}" is defined twice` });
    checks.push(c.name);
  });
  for (const [name, role] of Object.entries(config.roles ?? {})) {
    unknownKeys(role, ROLE, `roles.${name}`, issues);
    refs(role?.consumers, consumers, `roles.${name}.consumers`, 'consumer', issues);
    refs(role?.jobs, kinds, `roles.${name}.jobs`, 'job kind', issues);
    refs(role?.daemons, daemons, `roles.${name}.daemons`, 'daemon', issues);
    refs(role?.schedules, schedules, `roles.${name}.schedules`, 'schedule', issues);
  }
  // The client options carry their own checks (types, ranges); run them now, not at start-up,
  // and report each problem under its path in the config file, with the problems found above.
  try {
    resolveOptions(toClientOptions(config, { databaseUrl: config.database?.url ?? 'postgres://validation-only/' }));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const i of err.issues) {
      const path = configPathOf(i.path);
      // Unknown keys and bad references were reported above under the same path.
      if (!issues.some((known) => known.path === path)) issues.push({ ...i, path });
    }
  }
  if (issues.length) throw new ConfigError('config', issues);
  return Object.freeze(config);
}

/** The config file path of a client option's issue path (`prefetch.x` → `worker.prefetch.x`). */
export function configPathOf(clientPath: string): string {
  const [head, ...rest] = clientPath.split('.');
  if (head === undefined) return clientPath;
  return [CONFIG_OPTION_PATHS[head] ?? head, ...rest].join('.');
}

function at(config: NightshiftConfig, path: string): unknown {
  let v: unknown = config;
  for (const part of path.split('.')) v = typeof v === 'object' && v !== null ? (v as Record<string, unknown>)[part] : undefined;
  return v;
}

/** Turns a config into client options for a process (the database URL and roles come from the caller). */
export function toClientOptions(config: NightshiftConfig, o: { databaseUrl: string; roles?: string[] }): NightshiftOptions {
  const options: Record<string, unknown> = { databaseUrl: o.databaseUrl, jobs: [], daemons: [], schedules: [], roles: {} };
  for (const [option, path] of PATHS) {
    if (option === 'databaseUrl') continue;
    const value = at(config, path);
    if (value !== undefined) options[option] = value;
  }
  if (o.roles) options.activeRoles = o.roles;
  return options as NightshiftOptions;
}
