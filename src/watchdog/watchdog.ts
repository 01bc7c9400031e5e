import { z } from 'zod';
import type { Database } from '../db/database.js';
import { CheckNotFoundError, closest, ConfigError, DuplicateCheckError, type Issue } from '../errors.js';
import { defineJob, type JobDefinition } from '../jobs/define-job.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import type { Clock } from '../lifecycle/clock.js';
import type { ScheduleDefinition } from '../schedules/define-schedule.js';
import { nextTick } from '../schedules/ticks.js';
import type { EventBus } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import { AlertAdmin } from './alert-admin.js';
import { builtinChecks, type WatchdogEnv } from './builtins/index.js';
import { CheckRunner, type CheckRunReport } from './check-runner.js';
import { checkKind, WATCHDOG_QUEUE, type CheckDefinition, type CheckStatus, type RecordedResult } from './define-check.js';
import { NOTIFY_KIND, notifyJob } from './notify-job.js';
import type { WatchdogSettings } from './watchdog-settings.js';

/** A check as `listChecks` shows it. */
export interface CheckInfo {
  name: string;
  builtin: boolean;
  description: string | undefined;
  /** The timing (`every 1m`, `cron 0 1 * * * UTC`). */
  spec: string;
  timeoutMs: number;
  failAfter: number;
  renotifyMs: number | undefined;
  /** The notifiers its alerts go to. */
  notify: string[];
  /** Its schedule is paused (`schedules pause check:<name>`). */
  paused: boolean;
  /** The next tick, by the database clock; null when no process has registered its schedule yet. */
  nextRun: Date | null;
  /** The newest run. */
  lastRun: { at: Date; status: CheckStatus; results: RecordedResult[]; durationMs: number; manual: boolean } | null;
  /** Its open alerts, by level. */
  openAlerts: { warning: number; critical: number };
  /** Live processes (seen within a minute) that host it. */
  hostedBy: number;
}

/** The payload of a check's job: the tick it stands for. */
const checkPayload = z.object({ at: z.string(), manual: z.boolean().optional() });

/** What the watchdog of one client is made of. */
export interface WatchdogDeps {
  database: Database;
  events: EventBus;
  actor: string;
  /** The config's checks. */
  checks: readonly CheckDefinition[];
  settings: WatchdogSettings;
  env: WatchdogEnv;
  /** Where checks' timeouts run and their durations are measured. Default: the system clock. */
  clock?: Clock;
}

/**
 * The watchdog of one client: its checks (the config's and the built-ins that are on), the jobs
 * and schedules that run them and deliver their notifications — which the client adds to its own
 * — and the operator's view (run a check now, list checks and alerts, acknowledge).
 */
export class Watchdog {
  /** Every check, by name. */
  readonly checks: ReadonlyMap<string, CheckDefinition>;
  /** The checks' jobs, and the notification job. */
  readonly jobs: readonly JobDefinition[];
  /** The checks' schedules. */
  readonly schedules: readonly ScheduleDefinition[];
  readonly alerts: AlertAdmin;
  private readonly runner: CheckRunner;
  private enqueuer: Enqueuer | undefined;
  private logger: Logger | undefined;

  /**
   * Throws what would make a watchdog of these checks and settings invalid: two checks of one name
   * (NS_DUPLICATE_CHECK), a check naming a notifier that does not exist (NS_CONFIG_INVALID, with a
   * did-you-mean). Pure, so a client checks it before it opens anything.
   */
  static validate(checks: readonly CheckDefinition[], settings: WatchdogSettings): void {
    const seen = new Map<string, CheckDefinition>();
    for (const c of checks) {
      const existing = seen.get(c.name);
      if (existing && existing !== c) throw new DuplicateCheckError(c.name);
      seen.set(c.name, c);
    }
    const known = [...settings.notifiers.keys()];
    const issues: Issue[] = [];
    const lists = [...checks.map((c) => ({ name: c.name, notify: c.notify })), ...settings.builtins.map((b) => ({ name: b.spec.name, notify: b.options.notify }))];
    for (const c of lists) {
      for (const [i, n] of (c.notify ?? []).entries()) {
        if (known.includes(n)) continue;
        const best = closest(n, known);
        issues.push({
          path: `${c.name}.notify.${i}`,
          message: `no notifier named "${n}"${best ? `; did you mean "${best}"?` : known.length ? `; the notifiers are ${known.join(', ')}` : '; watchdog.notifiers is empty'}`,
        });
      }
    }
    if (issues.length) throw new ConfigError('checks', issues);
  }

  constructor(private readonly d: WatchdogDeps) {
    Watchdog.validate(d.checks, d.settings);
    const checks = new Map<string, CheckDefinition>();
    for (const c of [...d.checks, ...builtinChecks(d.settings.builtins, d.env)]) checks.set(c.name, c);
    this.checks = checks;
    const known = [...d.settings.notifiers.keys()];
    this.runner = new CheckRunner({ database: d.database, events: d.events, notifiersOf: (c) => c.notify ?? known, ...(d.clock ? { clock: d.clock } : {}) });
    this.alerts = new AlertAdmin(d.database, d.events, d.actor);
    const defs = [...checks.values()];
    this.schedules = defs.map((c) => c.schedule);
    this.jobs = defs.length ? [...defs.map((c) => this.checkJob(c)), notifyJob(d.settings.notifiers, d.settings.delivery)] : [];
  }

  /** Gives the watchdog what the client makes after it (manual runs enqueue through it). */
  bind(o: { enqueuer: Enqueuer; logger: Logger }): void {
    this.enqueuer = o.enqueuer;
    this.logger = o.logger;
  }

  /** Names of every check, built-ins included. */
  get names(): string[] {
    return [...this.checks.keys()];
  }

  /** The check of that name, or NS_CHECK_NOT_FOUND with a did-you-mean. */
  require(name: string): CheckDefinition {
    const c = this.checks.get(name);
    if (!c) throw new CheckNotFoundError(String(name), this.names);
    return c;
  }

  /**
   * Notifiers a process that delivers notifications cannot work without: those given `undefined`
   * for a required setting (an unset variable). Empty when every notifier is complete.
   */
  incompleteNotifiers(): { name: string; type: string; missing: readonly string[] }[] {
    return [...this.d.settings.notifiers.values()].filter((n) => n.missing.length > 0).map((n) => ({ name: n.name, type: n.type, missing: n.missing }));
  }

  /** The job kind that delivers notifications (hosted with the checks). */
  get notifyKind(): string {
    return NOTIFY_KIND;
  }

  /**
   * Runs a check now, in this process, and returns its results. Unless `dryRun`, the run counts
   * like a tick: it opens, changes and resolves alerts and notifies (its instant is the database
   * clock, to the millisecond).
   */
  async runCheck(name: string, options: { dryRun?: boolean } = {}): Promise<CheckRunReport> {
    const def = this.require(name);
    const database = this.d.database;
    const at = await database.watchdog.manualStamp();
    const log = (this.logger ?? console) as Logger;
    const { run, durationMs } = await this.runner.execute(def, { at, manual: true, db: database.executor, log: typeof log.child === 'function' ? log.child({ check: name }) : log });
    if (options.dryRun) {
      const report: CheckRunReport = { check: name, at, manual: true, status: run.status, results: run.results, durationMs: Math.round(durationMs), applied: false, duplicate: false, alerts: [] };
      this.runner.reportUnapplied(def, report, run);
      return report;
    }
    const enqueuer = this.enqueuer;
    if (!enqueuer) throw new Error('the watchdog is not bound to its client');
    return this.runner.apply(def, at, true, run, durationMs, {
      transaction: (fn) => database.transaction(fn),
      enqueue: (kind, payload, tx) => enqueuer.enqueue(kind, payload, { db: tx }),
    });
  }

  /** Every check with its timing, last run, next run, open alerts and how many live processes host it. */
  async listChecks(): Promise<CheckInfo[]> {
    const db = this.d.database;
    const defs = [...this.checks.values()];
    const names = defs.map((c) => c.name);
    const [runs, schedules, counts, processes] = await Promise.all([db.watchdog.lastRuns({ names }), db.schedules.list(defs.map((c) => c.schedule.name)), db.watchdog.openCounts(), db.processes.list()]);
    const runBy = new Map(runs.map((r) => [r.check_name, r]));
    const scheduleBy = new Map(schedules.map((s) => [s.name, s]));
    const live = processes.filter((p) => p.secondsSinceSeen < 60);
    const notifiers = [...this.d.settings.notifiers.keys()];
    return defs.map((c) => {
      const run = runBy.get(c.name);
      const row = scheduleBy.get(c.schedule.name);
      const next = row ? nextTick(c.schedule.timing, Math.max(row.last_tick_at.getTime(), row.now.getTime())) : null;
      const kind = checkKind(c.name);
      return {
        name: c.name,
        builtin: c.builtin,
        description: c.description,
        spec: c.spec,
        timeoutMs: c.timeoutMs,
        failAfter: c.failAfter,
        renotifyMs: c.renotifyMs,
        notify: [...(c.notify ?? notifiers)],
        paused: row?.paused ?? false,
        nextRun: next === null || row?.paused ? null : new Date(next),
        lastRun: run ? { at: run.run_at, status: run.status, results: run.results, durationMs: run.duration_ms, manual: run.manual } : null,
        openAlerts: {
          warning: counts.find((x) => x.check_name === c.name && x.level === 'warning')?.count ?? 0,
          critical: counts.find((x) => x.check_name === c.name && x.level === 'critical')?.count ?? 0,
        },
        hostedBy: live.filter((p) => Array.isArray(p.info.kinds) && (p.info.kinds as unknown[]).includes(kind) && Array.isArray(p.info.queues) && (p.info.queues as unknown[]).includes(WATCHDOG_QUEUE)).length,
      };
    });
  }

  /** Open alerts per check and level (the `nightshift_alerts_open` gauge). */
  async openAlertCounts(): Promise<{ check: string; level: 'warning' | 'critical'; count: number }[]> {
    return (await this.d.database.watchdog.openCounts()).map((r) => ({ check: r.check_name, level: r.level, count: r.count }));
  }

  /** The job of a check's ticks: runs the check and applies its result in the job's fenced transaction. */
  private checkJob(def: CheckDefinition): JobDefinition {
    return defineJob({
      kind: checkKind(def.name),
      queue: WATCHDOG_QUEUE,
      payload: checkPayload,
      // A failure here is the database's (the check's own failures are results): retry soon, a few times.
      maxAttempts: 3,
      backoff: { initialMs: 1_000, factor: 2, maxMs: 10_000 },
      timeoutMs: def.timeoutMs + 60_000,
      run: async ({ at, manual }, ctx) => {
        const tick = new Date(at);
        const { run, durationMs } = await this.runner.execute(def, { at: tick, manual: manual ?? false, signal: ctx.signal, log: ctx.log, db: ctx.db });
        await this.runner.apply(def, tick, manual ?? false, run, durationMs, {
          transaction: (fn) => ctx.transaction(fn),
          enqueue: (kind, payload, tx) => ctx.enqueue(kind, payload as never, { db: tx }),
        });
      },
    });
  }
}
