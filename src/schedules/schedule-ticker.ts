import type { Database } from '../db/database.js';
import type { Executor } from '../db/executor.js';
import type { JobState } from '../db/job-row.js';
import type { ScheduleQueries, ScheduleStateRow } from '../db/schedules.js';
import { ConfigError, DatabaseError, type Issue } from '../errors.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { serialisePayload } from '../jobs/payload.js';
import type { Timer } from '../lifecycle/clock.js';
import { BaseService, type ServiceOptions } from '../lifecycle/service.js';
import { EventBus, workerError, type NightshiftEvent } from '../telemetry/events.js';
import { planTicks } from './catch-up.js';
import type { ScheduleDefinition } from './define-schedule.js';
import { enqueueTickJob, ScheduleSet, scheduleTick, type ScheduleEntry } from './schedule-set.js';
import { nextTick } from './ticks.js';

/** What the ticker needs. */
export interface ScheduleTickerOptions extends ServiceOptions {
  database: Database;
  enqueuer: Enqueuer;
  registry: JobRegistry;
  schedules: readonly ScheduleDefinition[];
  events?: EventBus;
  /** Longest sleep between two looks at the schedules, in ms; paused, resumed and queued schedules are seen within it. Default 1000. */
  pollMs?: number;
  /** Ticks decided per transaction. Default 100. */
  batchSize?: number;
  /** How long decided ticks are kept, in ms (each schedule's newest and queued ticks are always kept). Default 7 days. */
  tickRetentionMs?: number;
}

/** What one pass of the ticker did. */
export interface TickerReport {
  /** Ticks whose job this pass enqueued (including queued ticks released now). */
  fired: { schedule: string; at: Date; jobId: string; late: boolean }[];
  /** Ticks skipped: by the overlap policy, or by the catch-up policy (one entry standing for `missed` ticks). */
  skipped: { schedule: string; at: Date; reason: 'overlap' | 'catch-up'; missed: number }[];
  /** Ticks now waiting for the previous job (overlap 'queue'). */
  queued: { schedule: string; at: Date }[];
  /** Ticks whose payload could not be built or did not fit the job's schema. */
  failed: { schedule: string; at: Date; error: string }[];
  /** Ticks already recorded by another replica (the primary key refused them here). */
  duplicates: number;
  /** Schedules another replica was deciding at that moment, left to it. */
  busy: number;
  /** Errors that stopped a schedule's pass (its transaction rolled back; the next pass retries). */
  errors: { schedule: string; error: Error }[];
  /** More ticks are due than one pass decides; the loop runs again at once. */
  more: boolean;
  /** Some schedule has ticks queued behind a running job; the loop looks again soon to release the next one promptly. */
  waiting: boolean;
  /** When the next tick of any running schedule is due, on the database clock; null when none is. */
  nextDueAt: Date | null;
}

const IN_PROGRESS: ReadonlySet<JobState | null> = new Set(['available', 'running']);
const DAY = 86_400_000;
const PRUNE_EVERY_MS = 10 * 60_000;
const MAX_BATCHES_PER_PASS = 20;
/** Sleep while ticks wait for a running job (overlap 'queue'): job completions send no notification, so the ticker looks. */
const QUEUE_POLL_MS = 100;
/** Shortest sleep: when a schedule looked due but another replica held it, look again soon rather than spin. */
const MIN_SLEEP_MS = 25;

function emptyReport(): TickerReport {
  return { fired: [], skipped: [], queued: [], failed: [], duplicates: 0, busy: 0, errors: [], more: false, waiting: false, nextDueAt: null };
}

/**
 * Materialises schedule ticks into jobs. Every process may run one: each due tick is decided in
 * one transaction that locks the schedule's row (FOR UPDATE SKIP LOCKED), inserts the tick's row
 * (primary key (schedule, tick_at), ON CONFLICT DO NOTHING) and enqueues its job only when the
 * insert took place, so a tick fires once however many tickers race for it — the key decides, not
 * an election. Time is the database clock; the ticker sleeps until the next due tick (converted
 * with the measured offset between the database and local clocks), at most `pollMs`.
 */
export class ScheduleTicker extends BaseService {
  readonly events: EventBus;
  private readonly set: ScheduleSet;
  private readonly st: ScheduleQueries;
  private readonly db: Database;
  private readonly enqueuer: Enqueuer;
  private readonly pollMs: number;
  private readonly batchSize: number;
  private readonly retentionMs: number;
  private registered = false;
  private clockOffsetMs = 0;
  private lastPruneAt = 0;
  private readonly warnedSpec = new Set<string>();
  private timer: Timer | undefined;
  private running: Promise<void> | undefined;

  constructor(options: ScheduleTickerOptions) {
    super({ name: 'schedule-ticker', kind: 'timer', restartable: true, logger: options.logger, clock: options.clock });
    this.db = options.database;
    this.enqueuer = options.enqueuer;
    this.set = new ScheduleSet(options.schedules, options.registry);
    this.st = options.database.schedules;
    this.events = options.events ?? new EventBus();
    const issues: Issue[] = [];
    const int = (v: number | undefined, path: string, min: number, fallback: number) => {
      if (v === undefined) return fallback;
      if (!Number.isInteger(v) || v < min) issues.push({ path, message: `must be an integer ≥ ${min}` });
      return v;
    };
    this.pollMs = int(options.pollMs, 'pollMs', 10, 1_000);
    this.batchSize = int(options.batchSize, 'batchSize', 1, 100);
    this.retentionMs = int(options.tickRetentionMs, 'tickRetentionMs', 60_000, 7 * DAY);
    if (issues.length) throw new ConfigError('schedule ticker options', issues);
  }

  /** Names of the schedules this ticker runs. */
  get names(): string[] {
    return this.set.names();
  }

  /**
   * Registers the schedules (a schedule first seen starts counting now), checks each payload
   * function against its job's schema on a sample tick (NS_CONFIG_INVALID naming every schedule
   * that fails), then ticks until stopped. Safe twice.
   */
  protected async onStart(): Promise<void> {
    await this.checkPayloads();
    await this.register();
    this.loop();
  }

  /** Stops ticking and waits for a pass in progress. Safe before start and twice. */
  protected async onStop(): Promise<void> {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /**
   * Writes the schedules' rows: new ones start counting now, a changed timing counts from the
   * change. `at` stands for "now" under a test clock (see {@link runOnce}).
   */
  async register(options: { at?: Date } = {}): Promise<void> {
    await this.st.register({ rows: this.set.registrations(), at: options.at ?? null });
    this.registered = true;
  }

  /**
   * One pass: decides every due tick of every schedule (and releases queued ticks whose
   * predecessor finished). `at` is the test clock of nightshift/testing's `tick`: it stands for the
   * database clock when deciding which ticks are due and which were missed; everything else (the
   * row locks, the unique tick keys, the jobs) is the same as in production, where it is never
   * given. Pruning is skipped under a test clock: it counts retention on the database clock.
   */
  async runOnce(options: { at?: Date } = {}): Promise<TickerReport> {
    const at = options.at?.getTime();
    const report = emptyReport();
    if (this.set.size === 0) return report;
    if (!this.registered) await this.register();
    const t0 = this.clock.wall();
    const rows = await this.st.overview(this.set.names());
    const t1 = this.clock.wall();
    if (rows[0]) this.clockOffsetMs = rows[0].now.getTime() - (t0 + t1) / 2;
    const byName = new Map(rows.map((r) => [r.name, r]));
    let nextDue = Infinity;
    for (const entry of this.set.all()) {
      const { def } = entry;
      const row = byName.get(def.name);
      if (!row) {
        // Deleted by an operator: recreated (counting from now) on the next pass.
        this.registered = false;
        continue;
      }
      if (!this.inForce(def, row)) continue;
      let last = row.last_tick_at.getTime();
      const now = at ?? row.now.getTime();
      const due = (nextTick(def.timing, last) ?? Infinity) <= now;
      const releasable = def.overlap === 'queue' && row.has_queued && !IN_PROGRESS.has(row.last_job_state);
      if (due || releasable) {
        for (let batch = 0; ; batch++) {
          try {
            const r = await this.decide(entry, report, at);
            if (r.last !== null) last = Math.max(last, r.last);
            if (!r.more) break;
            if (batch + 1 >= MAX_BATCHES_PER_PASS) {
              report.more = true;
              break;
            }
          } catch (err) {
            const error = err instanceof Error ? err : new Error(String(err));
            report.errors.push({ schedule: def.name, error });
            this.emit(workerError(`schedule ${def.name}`, error));
            break;
          }
        }
      }
      nextDue = Math.min(nextDue, nextTick(def.timing, Math.max(last, now)) ?? Infinity);
      if (def.overlap === 'queue' && (row.has_queued || report.queued.some((q) => q.schedule === def.name))) report.waiting = true;
    }
    report.nextDueAt = Number.isFinite(nextDue) ? new Date(nextDue) : null;
    if (at === undefined && this.clock.wall() - this.lastPruneAt > PRUNE_EVERY_MS) {
      this.lastPruneAt = this.clock.wall();
      await this.prune().catch((err: unknown) => this.emit(workerError('schedule tick pruning', err)));
    }
    return report;
  }

  /** Deletes decided ticks older than the retention. Returns how many. */
  async prune(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.st.prune({ olderThanMs: this.retentionMs, limit: 1_000 });
      total += n;
      if (n < 1_000) return total;
    }
  }

  private inForce(def: ScheduleDefinition, row: ScheduleStateRow): boolean {
    if (row.paused) return false;
    if (row.spec === def.spec) return true;
    if (!this.warnedSpec.has(def.name)) {
      this.warnedSpec.add(def.name);
      this.logger.warn(
        { schedule: def.name, ours: def.spec, inForce: row.spec },
        'another process registered a different timing for this schedule; this process does not fire it until it registers its own again (restart)',
      );
    }
    return false;
  }

  /** One transaction for one schedule: release a queued tick, then decide the due ticks (at most one batch); `at` is a test clock. */
  private async decide(entry: ScheduleEntry, report: TickerReport, at: number | undefined): Promise<{ more: boolean; last: number | null }> {
    const { def } = entry;
    const name = def.name;
    const local = emptyReport();
    const events: NightshiftEvent[] = [];
    const result = await this.db.transaction(async (tx) => {
      const row = await this.st.lock({ tx, name });
      if (!row) {
        local.busy++;
        return { more: false, last: null };
      }
      if (row.paused || row.spec !== def.spec) return { more: false, last: null };
      let inProgress = IN_PROGRESS.has(row.last_job_state);
      let hasQueued = row.has_queued;
      let lastJobId: string | null = null;

      if (def.overlap === 'queue' && hasQueued && !inProgress) {
        const at = await this.st.tickOldestQueued({ tx, name });
        if (at) {
          const jobId = await this.fire(tx, entry, at, false, local, events);
          if (jobId) {
            inProgress = true;
            lastJobId = jobId;
          } else hasQueued = (await this.st.tickOldestQueued({ tx, name })) !== undefined;
        }
      }

      const plan = planTicks(def, row.last_tick_at.getTime(), at ?? row.now.getTime(), this.batchSize);
      if (plan.skipped) {
        const at = new Date(plan.skipped.latest);
        if (await this.st.tickInsert({ tx, tick: { schedule: name, at, outcome: 'skipped-catchup', missed: plan.skipped.count } })) {
          local.skipped.push({ schedule: name, at, reason: 'catch-up', missed: plan.skipped.count });
          events.push({ type: 'schedule.skipped', schedule: name, tickAt: at, reason: 'catch-up', missed: plan.skipped.count });
        } else local.duplicates++;
      }
      if (plan.skipped || plan.late > 0) {
        events.push({
          type: 'schedule.caught-up',
          schedule: name,
          missed: (plan.skipped?.count ?? 0) + plan.late,
          fired: plan.late,
          skipped: plan.skipped?.count ?? 0,
        });
      }
      for (const [i, t] of plan.fire.entries()) {
        const at = new Date(t);
        const late = i < plan.late;
        if (def.overlap === 'skip' && inProgress) {
          if (await this.st.tickInsert({ tx, tick: { schedule: name, at, outcome: 'skipped-overlap' } })) {
            local.skipped.push({ schedule: name, at, reason: 'overlap', missed: 1 });
            events.push({ type: 'schedule.skipped', schedule: name, tickAt: at, reason: 'overlap', missed: 1 });
          } else local.duplicates++;
          continue;
        }
        if (def.overlap === 'queue' && (inProgress || hasQueued)) {
          if (await this.st.tickInsert({ tx, tick: { schedule: name, at, outcome: 'queued' } })) {
            hasQueued = true;
            local.queued.push({ schedule: name, at });
            events.push({ type: 'schedule.queued', schedule: name, tickAt: at });
          } else local.duplicates++;
          continue;
        }
        // The exactly-once step: only the transaction whose insert took the key enqueues.
        if (!(await this.st.tickInsert({ tx, tick: { schedule: name, at, outcome: 'enqueued' } }))) {
          local.duplicates++;
          continue;
        }
        const jobId = await this.fire(tx, entry, at, late, local, events);
        if (jobId) {
          inProgress = true;
          lastJobId = jobId;
        }
      }
      if (plan.advanceTo !== null || lastJobId !== null) {
        await this.st.advance({ tx, name, lastTickAt: plan.advanceTo === null ? null : new Date(plan.advanceTo), lastJobId });
      }
      return { more: plan.more, last: plan.advanceTo };
    });
    // Only what committed is reported.
    report.fired.push(...local.fired);
    report.skipped.push(...local.skipped);
    report.queued.push(...local.queued);
    report.failed.push(...local.failed);
    report.duplicates += local.duplicates;
    report.busy += local.busy;
    for (const e of events) this.emit(e);
    return result;
  }

  /**
   * Enqueues the job of a recorded tick and stores the outcome on its row. A payload function that
   * throws, or a payload its job's schema refuses, fails the tick for good (it would fail the same
   * way every time); a database error rolls the whole transaction back for the next pass to retry.
   */
  private async fire(tx: Executor, entry: ScheduleEntry, at: Date, late: boolean, local: TickerReport, events: NightshiftEvent[]): Promise<string | null> {
    const name = entry.def.name;
    try {
      const { id } = await enqueueTickJob(this.enqueuer, entry, tx, scheduleTick(entry.def, at, false));
      await this.st.tickUpdate({ tx, tick: { schedule: name, at, outcome: 'enqueued', jobId: id, error: null } });
      local.fired.push({ schedule: name, at, jobId: id, late });
      events.push({ type: 'schedule.fired', schedule: name, tickAt: at, jobId: id, kind: entry.job.kind, manual: false, late });
      return id;
    } catch (err) {
      if (err instanceof DatabaseError) throw err;
      const error = (err instanceof Error ? err.message : String(err)).slice(0, 2_000);
      await this.st.tickUpdate({ tx, tick: { schedule: name, at, outcome: 'failed', jobId: null, error } });
      local.failed.push({ schedule: name, at, error });
      events.push({ type: 'schedule.failed', schedule: name, tickAt: at, error });
      return null;
    }
  }

  /** Builds each payload for a sample tick and validates it against the job's schema. */
  private async checkPayloads(): Promise<void> {
    const issues: Issue[] = [];
    for (const entry of this.set.all()) {
      const { def, job } = entry;
      const at = new Date(nextTick(def.timing, this.clock.wall()) ?? this.clock.wall());
      try {
        const value = def.payload ? await def.payload(scheduleTick(def, at, false)) : {};
        await serialisePayload(job.kind, job.schema, value, Number.MAX_SAFE_INTEGER);
      } catch (err) {
        const message = err instanceof Error ? err.message.replace(/\s+/g, ' ') : String(err);
        issues.push({
          path: `${def.name}.payload`,
          message: def.payload
            ? `for the tick at ${at.toISOString()} the payload function failed: ${message}`
            : `job "${job.kind}" does not accept the default payload {}: give the schedule a payload function (${message})`,
        });
      }
    }
    if (issues.length) throw new ConfigError('schedules', issues);
  }

  private loop(): void {
    if (!this.live) return;
    let delay = this.pollMs;
    this.running = this.runOnce()
      .then(
        (r) => {
          // A schedule whose pass failed (database trouble) is retried after pollMs, not at once.
          if (r.errors.length > 0) return;
          if (r.more) delay = 0;
          if (r.waiting) delay = Math.min(delay, QUEUE_POLL_MS);
          if (!r.more && r.nextDueAt) {
            // Wake just after the tick on the database clock. A tick already past means another
            // replica held the schedule: look again shortly, without spinning.
            const wait = r.nextDueAt.getTime() - this.clockOffsetMs + 2 - this.clock.wall();
            delay = Math.min(delay, wait > 0 ? wait : MIN_SLEEP_MS);
          }
        },
        (err: unknown) => {
          this.emit(workerError('schedule ticker', err));
        },
      )
      .finally(() => {
        this.running = undefined;
        if (this.live) this.timer = this.clock.setTimeout(() => this.loop(), delay);
      });
  }

  private emit(event: NightshiftEvent): void {
    this.events.emit(event);
  }
}
