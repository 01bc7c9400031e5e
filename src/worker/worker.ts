import type { Database } from '../db/database.js';
import { ShutdownError } from '../errors.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { Timer } from '../lifecycle/clock.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { BaseService, type ServiceOptions } from '../lifecycle/service.js';
import { workerError, type EventBus } from '../telemetry/events.js';
import { DEFAULT_REDACT, type Logger } from '../telemetry/logger.js';
import { ActiveJobs, type ActiveJob } from './active-jobs.js';
import { Completer } from './completer.js';
import { JobRunner } from './job-runner.js';
import type { LimitPlan } from './limit-plan.js';
import { Outcomes } from './outcomes.js';
import { QueueFetcher } from './queue-fetcher.js';
import { QueueProbe } from './queue-probe.js';
import { Slots } from './slots.js';
import { StartMarks } from './start-marks.js';

/** Resolved worker settings (see the client options for their documentation and defaults). */
export interface WorkerSettings {
  owner: string;
  concurrency: number;
  /** Queue → its own concurrency limit. */
  queues: Map<string, number>;
  /** Kinds this worker runs (it claims nothing else). */
  kinds: string[];
  /** Queue → the fleet-wide limits its claim enforces; a queue not in it has none (the plain claim). */
  limits?: ReadonlyMap<string, LimitPlan>;
  leaseMs: number;
  heartbeatMs: number;
  minPollMs: number;
  maxPollMs: number;
  /** Jobs each queue claims ahead of free slots (0: claim only for free slots). */
  prefetch: number;
  /** Delete a job when it completes (completed jobs are kept for no time). */
  deleteCompleted: boolean;
  shutdownGraceMs: number;
  /** After the grace period, how long aborted handlers get to return before their jobs are handed back. */
  abortGraceMs: number;
  /** Keys redacted from what `ctx.log` keeps with the job. */
  redact?: readonly string[];
  /** Error messages in spans (default: name and code only). */
  errorMessages?: boolean;
}

/** What a worker is built from. */
export interface WorkerOptions extends ServiceOptions {
  database: Database;
  registry: JobRegistry;
  enqueuer: Enqueuer;
  settings: WorkerSettings;
  events: EventBus;
  logger: Logger;
}

/**
 * Claims and runs jobs of the given queues and kinds: a claim loop per queue, a shared limit on
 * concurrency, batched completion, one heartbeat statement for all held leases, and a bounded
 * shutdown that hands unfinished jobs back at once.
 */
export class Worker extends BaseService {
  private readonly active: ActiveJobs;
  private readonly global: Slots;
  private readonly fetchers = new Map<string, QueueFetcher>();
  private readonly completer: Completer;
  private readonly runner: JobRunner;
  private readonly outcomes: Outcomes;
  private readonly heartbeat: PeriodicTask;
  /** The one idle poll of all the queues (a fetcher that finds nothing waits for it). */
  private readonly probe: QueueProbe;
  /** Jobs whose handler was dispatched, until their outcome is written. */
  private readonly runs = new Map<ActiveJob, Promise<void>>();
  /** Leases held at most (running, waiting for a slot, or being completed): back-pressure on claims. */
  private readonly maxHeld: number;
  /** The fetchers in a fixed order, and where the next round of freed slots starts (round robin). */
  private readonly order: QueueFetcher[] = [];
  private cursor = 0;
  /** Handlers still running after their job's end was decided without them (see `execute`). */
  private stuck = 0;
  private readonly db: Database;
  private readonly settings: WorkerSettings;
  private readonly events: EventBus;

  constructor(options: WorkerOptions) {
    super({ name: options.settings.owner, kind: 'worker', logger: options.logger, clock: options.clock });
    const { database: db, registry, enqueuer, settings, events, logger } = options;
    this.db = db;
    this.settings = settings;
    this.events = events;
    this.active = new ActiveJobs(this.clock);
    this.global = new Slots(settings.concurrency);
    this.maxHeld = 2 * (settings.concurrency + settings.prefetch);
    const onError = (where: string) => (err: unknown) => this.reportError(where, err);
    this.completer = new Completer({
      database: db,
      maxBatch: 1_000,
      retryForMs: Math.max(1_000, settings.leaseMs - settings.heartbeatMs),
      onError: onError('complete'),
      remove: settings.deleteCompleted,
      clock: this.clock,
    });
    this.outcomes = new Outcomes({
      database: db,
      active: this.active,
      completer: this.completer,
      events,
      logger,
      owner: settings.owner,
      clock: this.clock,
      onError: (where, err) => this.reportError(where, err),
      onRetry: (queue, delayMs) => this.retryIn(queue, delayMs),
    });
    this.runner = new JobRunner({
      database: db,
      registry,
      outcomes: this.outcomes,
      enqueuer,
      events,
      logger,
      leaseMs: settings.leaseMs,
      marks: new StartMarks(db, onError('record start')),
      redact: new Set([...DEFAULT_REDACT, ...(settings.redact ?? [])]),
      errorMessages: settings.errorMessages ?? false,
      clock: this.clock,
    });
    this.heartbeat = new PeriodicTask({
      name: `heartbeat ${settings.owner}`,
      intervalMs: settings.heartbeatMs,
      task: () => this.renewLeases(),
      onError: onError('heartbeat'),
      jitter: 0,
      clock: this.clock,
    });
    this.probe = new QueueProbe({
      database: db,
      kinds: settings.kinds,
      minPollMs: settings.minPollMs,
      maxPollMs: settings.maxPollMs,
      onError: onError('idle poll'),
      onPolled: (queues, due) => {
        if (events.wants('worker.polled')) events.emit({ type: 'worker.polled', queues, due });
      },
      clock: this.clock,
    });
    for (const [queue, limit] of settings.queues) {
      const local = new Slots(Math.min(limit, settings.concurrency));
      const fetcher: QueueFetcher = new QueueFetcher({
        database: db,
        queue,
        kinds: settings.kinds,
        owner: settings.owner,
        leaseMs: settings.leaseMs,
        minPollMs: settings.minPollMs,
        maxPollMs: settings.maxPollMs,
        prefetch: settings.prefetch,
        probe: this.probe,
        global: this.global,
        local,
        ...(settings.limits?.get(queue) ? { limits: settings.limits.get(queue)! } : {}),
        clock: this.clock,
        host: {
          hold: (row) => this.active.add(row),
          start: (job) => this.dispatch(job, local),
          slotsFreed: () => this.pump(),
          expired: (row) => this.outcomes.expiredAtClaim(row),
          expireHeld: (job) => void this.outcomes.finish(job, { cause: 'expired' }),
          room: () => this.maxHeld - this.active.size,
          onError: onError(`claim ${queue}`),
          onClaimed: (q, asked, count) => {
            if (events.wants('worker.claimed')) events.emit({ type: 'worker.claimed', queue: q, asked, count });
          },
          onLimited: (q, waiting, wakeInMs) => events.emit({ type: 'worker.limited', queue: q, waiting, wakeInMs }),
        },
      });
      this.fetchers.set(queue, fetcher);
      this.order.push(fetcher);
    }
  }

  /** Queues this worker claims from. */
  get queues(): string[] {
    return [...this.fetchers.keys()];
  }

  /** Jobs whose lease this worker holds right now. */
  get running(): number {
    return this.active.size;
  }

  /**
   * Handlers that kept running after their job timed out, was cancelled or lost its lease, past
   * the grace period: their slots were given back (so they do not stop all work), but they are
   * still running in this process.
   */
  get stuckHandlers(): number {
    return this.stuck;
  }

  protected async onStart(): Promise<void> {
    await this.heartbeat.start();
    await this.probe.start();
    for (const f of this.fetchers.values()) await f.start();
    this.events.emit({ type: 'worker.started', owner: this.settings.owner, queues: this.queues, concurrency: this.settings.concurrency });
  }

  /**
   * A notification said `queue` has work — due in `dueInMs` when given (a future job) — or, with
   * no queue, the listener reconnected.
   */
  wake(queue?: string, dueInMs?: number): void {
    if (queue === undefined) for (const f of this.fetchers.values()) f.reconnected();
    else if (dueInMs !== undefined && dueInMs > 0) this.fetchers.get(queue)?.wakeIn(dueInMs);
    else this.fetchers.get(queue)?.wake();
  }

  /**
   * A limited job (of any queue: a kind's limit holds in every queue of its jobs) left running
   * and freed a slot of each of `limits`: every queue whose claim passed jobs over under one of
   * them claims again. The others are not woken: a freed limit slot gives them nothing, and a
   * drain of a limited kind would otherwise claim again after every completion.
   */
  limitFreed(limits: readonly string[]): void {
    const names = new Set(limits);
    for (const f of this.fetchers.values()) f.limitFreed(names);
  }

  /** A job this worker holds was cancelled: abort its handler. */
  cancelled(id: string): void {
    const job = this.active.get(id);
    if (job) void this.outcomes.finish(job, { cause: 'cancelled' });
  }

  /**
   * Graceful, bounded shutdown: stop claiming; let running jobs finish for up to
   * `shutdownGraceMs`; then abort them, give handlers `abortGraceMs` to return, and hand every
   * unfinished job back (available again at once; an at-most-once job that started is abandoned).
   */
  protected async onStop(): Promise<void> {
    this.events.emit({ type: 'worker.stopping', owner: this.settings.owner, running: this.active.size });
    await Promise.all([...this.fetchers.values()].map((f) => f.stop()));
    await this.probe.stop();
    if (!(await this.settle(this.settings.shutdownGraceMs))) {
      const reason = new ShutdownError(this.settings.shutdownGraceMs);
      for (const job of this.active.all()) job.interrupt(reason);
      await this.settle(this.settings.abortGraceMs);
    }
    await this.completer.drain();
    await this.outcomes.handBack(this.active.all());
    await this.heartbeat.stop();
    this.events.emit({ type: 'worker.stopped', owner: this.settings.owner });
  }

  /** Waits until every run has returned, or `ms` pass. True when all returned. */
  private async settle(ms: number): Promise<boolean> {
    if (this.runs.size === 0) return true;
    let timer: Timer | undefined;
    const timeout = new Promise<false>((resolve) => (timer = this.clock.setTimeout(() => resolve(false), ms)));
    const all = (async () => {
      while (this.runs.size > 0) await Promise.all([...this.runs.values()]);
      return true as const;
    })();
    const done = await Promise.race([all, timeout]);
    this.clock.clearTimeout(timer);
    return done;
  }

  private dispatch(job: ActiveJob, local: Slots): void {
    // The claim records no start: it is recorded lazily (batched with completions, or written by
    // the completion of a job that ran less than MARK_DELAY_MS), so a crash gives back the attempt
    // of a job that never ran. An at-most-once job's start is written before its handler runs
    // (job-runner, StartMarks), and so is a start_first job's.
    if (!job.row.at_most_once && !job.row.start_first) this.completer.markStarted(job.row.id, job.row.lease_token);
    this.runs.set(job, this.execute(job, local));
  }

  private async execute(job: ActiveJob, local: Slots): Promise<void> {
    // The slot is the handler's: it frees when the handler returns, not when the batched
    // completion commits (the lease stays held, and heartbeated, until then), and a job held by
    // a fetcher takes it at once.
    let freed = false;
    let stuck = false;
    let graceTimer: Timer | undefined;
    const free = () => {
      this.clock.clearTimeout(graceTimer);
      if (freed) return;
      freed = true;
      this.global.give(1);
      local.give(1);
      this.pump();
    };
    // A job whose end was decided without its handler (timeout, cancel, lost lease) gives its slot
    // back once the handler has had `abortGraceMs` to notice its signal: a handler that ignores the
    // signal keeps running, but no longer keeps other jobs from starting (issue 11, bug 4).
    job.onAbort = () => {
      if (freed || job.cause === 'shutdown') return;
      graceTimer = this.clock.setTimeout(
        () => {
          if (freed) return;
          stuck = true;
          this.stuck++;
          const r = job.row;
          this.events.emit({ type: 'job.handler-stuck', jobId: r.id, kind: r.kind, queue: r.queue, attempt: r.attempt, cause: job.cause ?? 'aborted', graceMs: this.settings.abortGraceMs });
          free();
        },
        this.settings.abortGraceMs,
        { unref: true },
      );
    };
    try {
      if ((await this.runner.run(job, free)) === 'interrupted') await this.outcomes.handBack([job]);
    } catch (err) {
      this.outcomes.unrecorded(job, err);
    } finally {
      job.onAbort = undefined;
      if (stuck) this.stuck--;
      this.runs.delete(job);
      free();
      // The lease is released now: room for the next claim.
      this.pump();
    }
  }

  /**
   * Fills free slots from held jobs, one job per queue in turn (starting after the queue served
   * last), so a queue holding many prefetched jobs cannot take every slot that frees; then lets
   * each claim loop go on if it waits for a slot or for room.
   */
  private pump(): void {
    if (!this.live) return;
    const fs = this.order;
    if (fs.length === 1) return fs[0]!.pump();
    let i = this.cursor;
    for (let idle = 0; idle < fs.length && this.global.free > 0; i = (i + 1) % fs.length) {
      idle = fs[i]!.startHeld(1) > 0 ? 0 : idle + 1;
    }
    this.cursor = i;
    for (const f of fs) f.checkNeed();
  }

  /** A job of `queue` was written back for a retry in `delayMs`: claim it then, not at the next poll. */
  retryIn(queue: string, delayMs: number): void {
    this.fetchers.get(queue)?.wakeIn(delayMs);
  }

  private async renewLeases(): Promise<void> {
    const jobs = this.active.all();
    if (jobs.length === 0) return;
    const held = await this.db.jobs.heartbeat({
      ids: jobs.map((j) => j.row.id),
      tokens: jobs.map((j) => j.row.lease_token),
      leaseMs: this.settings.leaseMs,
    });
    for (const j of jobs) {
      if (!held.has(j.row.lease_token) && this.active.get(j.row.id) === j) {
        this.runner.leaseLost(j, 'heartbeat found the lease taken (expired and rescued, or cancelled)');
      }
    }
  }

  private lastError = 0;
  private reportError(where: string, err: unknown): void {
    const event = workerError(where, err);
    this.events.emit(event);
    // Rate-limit: a database outage must not flood the log.
    const now = this.clock.wall();
    if (now - this.lastError < 5_000) return;
    this.lastError = now;
    const { type: _type, error, ...ids } = event as Extract<typeof event, { type: 'worker.error' }>;
    this.logger.error({ ...ids, err: { message: error } }, `worker error in ${where}`);
  }
}
