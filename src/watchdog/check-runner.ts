import type { Database } from '../db/database.js';
import type { Executor } from '../db/executor.js';
import type { AlertRow, StoredResult, WatchdogQueries } from '../db/watchdog.js';
import { CheckTimeoutError } from '../errors.js';
import type { JobLogger } from '../jobs/define-job.js';
import { systemClock, type Clock } from '../lifecycle/clock.js';
import type { EventBus, NightshiftEvent } from '../telemetry/events.js';
import { nextState, type SubjectState } from './alert-transitions.js';
import { failedRun, normaliseOutcome, thrownRun, type NormalisedRun } from './check-results.js';
import type { CheckDefinition, RecordedResult } from './define-check.js';
import { durationText, notificationOf, type AlertEvent } from './notification.js';
import { NOTIFY_KIND } from './notify-job.js';

/** How a run reaches the database: the job's fenced transaction and enqueue, or the pool's. */
export interface RunIo {
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T>;
  enqueue(kind: string, payload: unknown, tx: Executor): Promise<unknown>;
}

/** One alert change a run made. */
export interface AlertChangeRecord {
  alertId: string;
  subject: string;
  event: AlertEvent;
}

/** What one run of a check found and did. */
export interface CheckRunReport {
  check: string;
  /** The tick it stands for (a manual run: when it started). */
  at: Date;
  manual: boolean;
  /** The worst status of its results. */
  status: 'ok' | 'warning' | 'critical';
  results: RecordedResult[];
  durationMs: number;
  /**
   * Whether it changed the alert state: false for a dry run, a tick older than one already
   * applied, and a tick applied before (its job ran again) — `duplicate` says which.
   */
  applied: boolean;
  /** True when this tick had been applied before: nothing was written. */
  duplicate: boolean;
  /** Alerts it opened, changed, reminded of or resolved. */
  alerts: AlertChangeRecord[];
}

/** What running a check's function needs. */
export interface RunInput {
  at: Date;
  manual: boolean;
  /** The job's signal (shutdown, lost lease); its abort ends the run without a result. */
  signal?: AbortSignal;
  log: JobLogger;
  db: Executor;
}

/**
 * Runs checks and applies their results: the alert state machine (alert-transitions.ts) over
 * the database, in one transaction per run that first takes the run's unique key.
 */
export class CheckRunner {
  private readonly q: WatchdogQueries;

  constructor(
    private readonly o: {
      database: Database;
      events: EventBus;
      /** The notifiers a check's alerts go to. */
      notifiersOf: (def: CheckDefinition) => readonly string[];
      /** Where the timeout's timer and a run's duration are measured. Default: the system clock. */
      clock?: Clock;
    },
  ) {
    this.q = o.database.watchdog;
  }

  /**
   * Runs the check's function under its timeout. Throwing, timing out or returning something that
   * is not a result gives a critical result; an abort of `input.signal` (the job's: shutdown, a lost
   * lease) throws instead, so the job is handed back and no result is recorded for that reason.
   */
  async execute(def: CheckDefinition, input: RunInput): Promise<{ run: NormalisedRun; durationMs: number; previous: RecordedResult[] }> {
    const previous = ((await this.q.lastRun({ name: def.name }))?.results ?? []) as RecordedResult[];
    const controller = new AbortController();
    const outer = input.signal;
    const fromOuter = () => controller.abort(outer!.reason);
    outer?.addEventListener('abort', fromOuter, { once: true });
    const clock = this.o.clock ?? systemClock;
    const timer = clock.setTimeout(() => controller.abort(new CheckTimeoutError(def.name, def.timeoutMs)), def.timeoutMs);
    const aborted = new Promise<never>((_, reject) => controller.signal.addEventListener('abort', () => reject(controller.signal.reason as Error), { once: true }));
    aborted.catch(() => undefined);
    const started = clock.monotonic();
    let run: NormalisedRun;
    try {
      const ctx = { name: def.name, at: input.at, manual: input.manual, signal: controller.signal, db: input.db, log: input.log, previous };
      run = normaliseOutcome(await Promise.race([Promise.resolve().then(() => def.run(ctx)), aborted]));
    } catch (err) {
      if (outer?.aborted) throw outer.reason;
      run = err instanceof CheckTimeoutError ? failedRun(`check timed out after ${durationText(def.timeoutMs)} (timeoutMs ${def.timeoutMs}): make it faster or raise timeoutMs`) : thrownRun(err);
    } finally {
      clock.clearTimeout(timer);
      outer?.removeEventListener('abort', fromOuter);
    }
    return { run, durationMs: clock.monotonic() - started, previous };
  }

  /**
   * Applies a run in one transaction: takes the run's key `(check, at)` — a tick applied before
   * changes nothing again — locks the check, moves each subject through the state machine,
   * enqueues a notification job per alert change and notifier in the same transaction, and emits
   * the events once it committed.
   */
  async apply(def: CheckDefinition, at: Date, manual: boolean, run: NormalisedRun, durationMs: number, io: RunIo): Promise<CheckRunReport> {
    const report: CheckRunReport = {
      check: def.name,
      at,
      manual,
      status: run.status,
      results: run.results,
      durationMs: Math.round(durationMs),
      applied: false,
      duplicate: false,
      alerts: [],
    };
    const events: NightshiftEvent[] = [];
    await io.transaction(async (tx) => {
      await this.q.ensure({ tx, name: def.name });
      const lock = await this.q.lock({ tx, name: def.name });
      const late = lock.last_applied_at !== null && at.getTime() <= lock.last_applied_at.getTime();
      const inserted = await this.q.runInsert({ tx, run: { check: def.name, at, status: run.status, results: run.results, durationMs, manual, applied: !late } });
      if (!inserted) {
        report.duplicate = true;
        return;
      }
      if (late) return;
      await this.q.advance({ tx, name: def.name, at });
      await this.transitions(tx, def, run, lock.now, report, events, io);
      await this.q.prune({ tx, name: def.name });
      report.applied = true;
    });
    if (run.failed) events.unshift({ type: 'check.failed', check: def.name, error: run.results[0]?.message ?? '' });
    events.push({ type: 'check.ran', check: def.name, status: run.status, subjects: run.results.length, durationMs: report.durationMs, manual, applied: report.applied });
    for (const e of events) this.o.events.emit(e);
    return report;
  }

  /** Events of a run that is not applied (a dry run). */
  reportUnapplied(def: CheckDefinition, report: CheckRunReport, run: NormalisedRun): void {
    if (run.failed) this.o.events.emit({ type: 'check.failed', check: def.name, error: run.results[0]?.message ?? '' });
    this.o.events.emit({ type: 'check.ran', check: def.name, status: run.status, subjects: run.results.length, durationMs: report.durationMs, manual: report.manual, applied: false });
  }

  private async transitions(tx: Executor, def: CheckDefinition, run: NormalisedRun, now: Date, report: CheckRunReport, events: NightshiftEvent[], io: RunIo): Promise<void> {
    const rows = await this.q.subjects({ tx, name: def.name });
    const before = new Map(rows.map((r) => [r.subject, r]));
    const targets = new Map<string, StoredResult>(run.results.map((r) => [r.subject, r]));
    // A subject the run no longer reports is ok — unless the run failed, when nothing is known of it.
    if (!run.failed) {
      for (const r of rows) if (!targets.has(r.subject)) targets.set(r.subject, { subject: r.subject, status: 'ok', message: 'no longer reported by the check', details: null });
    }
    const policy = { failAfter: def.failAfter, renotifyMs: def.renotifyMs };
    const notify = async (row: AlertRow | undefined, event: AlertEvent, previousLevel: AlertRow['level'] | null) => {
      if (!row) return;
      report.alerts.push({ alertId: row.id, subject: row.subject, event });
      const base = { alertId: row.id, check: row.check_name, subject: row.subject };
      if (event === 'opened') events.push({ type: 'alert.opened', ...base, level: row.level });
      else if (event === 'changed') events.push({ type: 'alert.changed', ...base, level: row.level, previousLevel: previousLevel ?? '' });
      else if (event === 'reminder') events.push({ type: 'alert.reminded', ...base, level: row.level });
      else events.push({ type: 'alert.resolved', ...base, durationMs: Math.round(row.open_ms) });
      const notification = notificationOf(row, event, previousLevel);
      for (const notifier of this.o.notifiersOf(def)) await io.enqueue(NOTIFY_KIND, { notifier, notification }, tx);
    };
    for (const [subject, result] of targets) {
      const row = before.get(subject);
      const prev: SubjectState | undefined = row && {
        status: row.status,
        streak: row.bad_streak,
        ...(row.alert_id ? { alert: { level: row.alert_level!, lastNotifiedAt: row.alert_last_notified_at, acked: row.alert_acked_at !== null } } : {}),
      };
      const t = nextState(prev, result.status, policy, now);
      if (t.keep) await this.q.subjectUpsert({ tx, name: def.name, subject, status: t.status, streak: t.streak });
      else if (row) await this.q.subjectDelete({ tx, name: def.name, subject });
      const step = t.step;
      const id = row?.alert_id ?? '';
      if (step.kind === 'open') {
        await notify(await this.q.alertOpen({ tx, check: def.name, subject, level: step.level, message: result.message, details: result.details }), 'opened', null);
      } else if (step.kind === 'change') {
        await notify(await this.q.alertChange({ tx, id, level: step.to, message: result.message, details: result.details }), 'changed', step.from);
      } else if (step.kind === 'remind') {
        await notify(await this.q.alertRemind({ tx, id, message: result.message, details: result.details }), 'reminder', null);
      } else if (step.kind === 'update') {
        await this.q.alertUpdate({ tx, id, message: result.message, details: result.details });
      } else if (step.kind === 'resolve') {
        await notify(await this.q.alertResolve({ tx, id }), 'resolved', null);
      }
    }
  }
}
