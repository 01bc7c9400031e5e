import type { Database } from '../db/database.js';
import { ConfigError, unknownKey, type Issue } from '../errors.js';
import type { Clock } from '../lifecycle/clock.js';
import { BaseService } from '../lifecycle/service.js';
import { EventBus } from '../telemetry/events.js';
import { createLogger, type Logger } from '../telemetry/logger.js';
import { DaemonSupervisor, type DaemonStatus } from './daemon-supervisor.js';
import { missingEnv, type DaemonDefinition } from './define-daemon.js';
import { defaultHolder } from './elector-options.js';

export type { DaemonStatus } from './daemon-supervisor.js';

/** The options of a {@link DaemonRunner}. */
export interface DaemonRunnerOptions {
  /** The database whose `leases` table the daemons are elected in. */
  database: Database;
  /** The daemons this process hosts (from {@link defineDaemon}); names must be unique. */
  daemons: readonly DaemonDefinition[];
  /** Who this process is, shown as the holder of its leases. Default `hostname:pid`. */
  holder?: string;
  /** Where leader and daemon events go. Default: a private bus. */
  events?: EventBus;
  /** For daemon failures and each daemon's `ctx.log`. Default: nightshift's JSON logger. */
  logger?: Logger;
  /** Lease duration for daemons that do not set their own `ttlMs`, in ms. Default 15 000. */
  ttlMs?: number;
  /** How often a non-leader tries to take a lease, in ms. Default: a third of the daemon's lease. */
  retryMs?: number;
  /** On stop, how long to wait for runs to return after their signal aborted, in ms. Default 10 000. */
  stopTimeoutMs?: number;
  /** Back-off between restarts of a failing run: from `initialMs` (default 1 000), doubling up to `maxMs` (default 60 000). */
  restartDelay?: { initialMs?: number; maxMs?: number };
  /** Where `requiredEnv` is looked up. Default `process.env`. */
  env?: Record<string, string | undefined>;
  /** Put a failed run's error message and stack in the log line. Default false: they may quote secrets. */
  logErrorMessages?: boolean;
  /** Where the runner reads time and sets its timers (restart back-off, lease deadlines). Default: the system clock. */
  clock?: Clock;
}

const KEYS = ['database', 'daemons', 'holder', 'events', 'logger', 'ttlMs', 'retryMs', 'stopTimeoutMs', 'restartDelay', 'env', 'logErrorMessages', 'clock'];
const MAX_MS = 2_147_483_647;

function isIntIn(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

function isDaemon(v: unknown): v is DaemonDefinition {
  const d = v as DaemonDefinition | undefined;
  return typeof d === 'object' && d !== null && typeof d.name === 'string' && typeof d.run === 'function' && Array.isArray(d.requiredEnv);
}

/**
 * Runs a set of daemons, each on exactly one live process of the fleet: every daemon has its own
 * lease elector, so different daemons may lead on different processes. A daemon's `run` starts
 * when this process is elected, its `ctx.signal` aborts when the term ends or on stop, and a run
 * that fails is restarted with back-off while the term lasts.
 */
export class DaemonRunner extends BaseService {
  private readonly supervisors: DaemonSupervisor[];
  private readonly env: Record<string, string | undefined>;

  constructor(options: DaemonRunnerOptions) {
    super({
      name: Array.isArray(options?.daemons) ? options.daemons.map((d) => (d as { name?: unknown })?.name).join(',') || '(none)' : '(none)',
      kind: 'daemons',
      logger: options?.logger,
      clock: options?.clock,
    });
    const o = (options ?? {}) as unknown as Record<string, unknown>;
    const issues: Issue[] = [];
    for (const key of Object.keys(o)) if (!KEYS.includes(key)) issues.push(unknownKey(key, KEYS));
    const db = o.database as { statements?: unknown; pool?: unknown } | undefined;
    if (typeof db !== 'object' || db === null || !db.statements || !db.pool) {
      issues.push({ path: 'database', message: 'must be the Database of a nightshift client' });
    }
    if (!Array.isArray(o.daemons)) issues.push({ path: 'daemons', message: 'must be an array of daemons made with defineDaemon' });
    const daemons = Array.isArray(o.daemons) ? (o.daemons as unknown[]) : [];
    const seen = new Set<string>();
    daemons.forEach((d, i) => {
      if (!isDaemon(d)) issues.push({ path: `daemons.${i}`, message: 'must be a daemon made with defineDaemon' });
      else if (seen.has(d.name)) issues.push({ path: `daemons.${i}`, message: `daemon "${d.name}" is listed twice; each name is one daemon` });
      else seen.add(d.name);
    });
    if (o.ttlMs !== undefined && !isIntIn(o.ttlMs, 100, MAX_MS)) issues.push({ path: 'ttlMs', message: 'must be an integer number of milliseconds, at least 100' });
    if (o.retryMs !== undefined && !isIntIn(o.retryMs, 1, MAX_MS)) issues.push({ path: 'retryMs', message: 'must be a positive integer number of milliseconds' });
    if (o.stopTimeoutMs !== undefined && !isIntIn(o.stopTimeoutMs, 0, MAX_MS)) issues.push({ path: 'stopTimeoutMs', message: 'must be an integer number of milliseconds ≥ 0' });
    const restart = (o.restartDelay ?? {}) as Record<string, unknown>;
    for (const key of Object.keys(restart)) {
      if (key !== 'initialMs' && key !== 'maxMs') issues.push(unknownKey(`restartDelay.${key}`, ['restartDelay.initialMs', 'restartDelay.maxMs']));
      else if (!isIntIn(restart[key], 1, MAX_MS)) issues.push({ path: `restartDelay.${key}`, message: 'must be a positive integer number of milliseconds' });
    }
    const initialMs = isIntIn(restart.initialMs, 1, MAX_MS) ? restart.initialMs : 1_000;
    const maxMs = isIntIn(restart.maxMs, 1, MAX_MS) ? restart.maxMs : 60_000;
    if (maxMs < initialMs) issues.push({ path: 'restartDelay.maxMs', message: `must be at least restartDelay.initialMs (${initialMs})` });
    if (issues.length) throw new ConfigError('daemon runner options', issues);

    this.env = options.env ?? process.env;
    const settings = {
      database: options.database,
      holder: options.holder ?? defaultHolder(),
      events: options.events ?? new EventBus(),
      logger: options.logger ?? createLogger(),
      ttlMs: options.ttlMs ?? 15_000,
      retryMs: options.retryMs,
      restart: { initialMs, maxMs },
      errorMessages: options.logErrorMessages === true,
      stopTimeoutMs: options.stopTimeoutMs ?? 10_000,
      clock: this.clock,
    };
    this.supervisors = options.daemons.map((d) => new DaemonSupervisor(d, settings));
  }

  /** The names of the daemons this runner hosts. */
  get names(): string[] {
    return this.supervisors.map((s) => s.daemon.name);
  }

  /**
   * Checks every daemon's required environment (NS_CONFIG_INVALID listing every missing variable,
   * and nothing starts), then campaigns for every daemon's lease. Resolves once each has made its
   * first attempt. Safe twice.
   */
  protected async onStart(): Promise<void> {
    const missing = missingEnv(
      this.supervisors.map((s) => s.daemon),
      this.env,
    );
    if (missing.length) throw new ConfigError('daemon environment', missing);
    await Promise.all(this.supervisors.map((s) => s.start()));
  }

  /**
   * Aborts every run, waits for them at most `stopTimeoutMs`, then releases the leases of the runs
   * that returned (those that did not keep theirs until it expires). Safe before start and twice.
   */
  protected async onStop(): Promise<void> {
    await Promise.all(this.supervisors.map((s) => s.stop()));
  }

  /** Each daemon's state in this process: leader or not, its token, whether it is running, its failures. */
  status(): DaemonStatus[] {
    return this.supervisors.map((s) => s.status());
  }
}
