import type { Database } from '../db/database.js';
import { jobExpireHeld, jobHeartbeat, jobRelease, type ClaimedRow } from '../db/jobs-run.js';
import { JobCancelledError, ShutdownError } from '../errors.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { trackResource } from '../lifecycle/resources.js';
import { workerError, type EventBus } from '../telemetry/events.js';
import { DEFAULT_REDACT, type Logger } from '../telemetry/logger.js';
import { ActiveJobs, type ActiveJob } from './active-jobs.js';
import { Completer } from './completer.js';
import { JobRunner } from './job-runner.js';
import { QueueFetcher } from './queue-fetcher.js';
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

/**
 * Claims and runs jobs of the given queues and kinds: a claim loop per queue, a shared limit on
 * concurrency, batched completion, one heartbeat statement for all held leases, and a bounded
 * shutdown that hands unfinished jobs back at once.
 */
export class Worker {
  private readonly active = new ActiveJobs();
  private readonly global: Slots;
  private readonly fetchers = new Map<string, QueueFetcher>();
  private readonly completer: Completer;
  private readonly runner: JobRunner;
  private readonly heartbeat: PeriodicTask;
  /** Jobs whose handler was dispatched, until their outcome is written. */
  private readonly runs = new Map<ActiveJob, Promise<void>>();
  /** Leases held at most (running, waiting for a slot, or being completed): back-pressure on claims. */
  private readonly maxHeld: number;
  /** The fetchers in a fixed order, and where the next round of freed slots starts (round robin). */
  private readonly order: QueueFetcher[] = [];
  private cursor = 0;
  /** Handlers still running after their job's end was decided without them (see `execute`). */
  private stuck = 0;
  private state: 'new' | 'running' | 'stopping' | 'stopped' = 'new';
  private release: (() => void) | undefined;
  private stopped: Promise<void> | undefined;

  constructor(
    private readonly db: Database,
    registry: JobRegistry,
    enqueuer: Enqueuer,
    private readonly settings: WorkerSettings,
    private readonly events: EventBus,
    private readonly logger: Logger,
  ) {
    this.global = new Slots(settings.concurrency);
    this.maxHeld = 2 * (settings.concurrency + settings.prefetch);
    const onError = (where: string) => (err: unknown) => this.reportError(where, err);
    this.completer = new Completer(db, 1_000, Math.max(1_000, settings.leaseMs - settings.heartbeatMs), onError('complete'), settings.deleteCompleted);
    const marks = new StartMarks(db, onError('record start'));
    this.runner = new JobRunner(
      db,
      registry,
      this.active,
      this.completer,
      enqueuer,
      events,
      logger,
      settings.leaseMs,
      marks,
      new Set([...DEFAULT_REDACT, ...(settings.redact ?? [])]),
      settings.errorMessages ?? false,
    );
    this.runner.onRetry = (queue, delayMs) => this.retryIn(queue, delayMs);
    this.heartbeat = new PeriodicTask('heartbeat', settings.heartbeatMs, () => this.renewLeases(), onError('heartbeat'), 0);
    for (const [queue, limit] of settings.queues) {
      const local = new Slots(Math.min(limit, settings.concurrency));
      const fetcher: QueueFetcher = new QueueFetcher(
        db,
        {
          queue,
          kinds: settings.kinds,
          owner: settings.owner,
          leaseMs: settings.leaseMs,
          minPollMs: settings.minPollMs,
          maxPollMs: settings.maxPollMs,
          prefetch: settings.prefetch,
        },
        this.global,
        local,
        {
          hold: (row) => this.active.add(row),
          start: (job, fromHeld) => this.dispatch(job, local, fromHeld),
          slotsFreed: () => this.pump(),
          expired: (row) => this.expired(row),
          expireHeld: (job) => void this.expireHeld(job),
          room: () => this.maxHeld - this.active.size,
          onError: onError(`claim ${queue}`),
          onClaimed: (q, asked, count) => {
            if (events.wants('worker.claimed')) events.emit({ type: 'worker.claimed', queue: q, asked, count });
          },
        },
      );
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

  start(): void {
    if (this.state !== 'new') return;
    this.state = 'running';
    this.release = trackResource('worker', this.settings.owner);
    this.heartbeat.start();
    for (const f of this.fetchers.values()) f.start();
    this.events.emit({ type: 'worker.started', owner: this.settings.owner, queues: this.queues, concurrency: this.settings.concurrency });
  }

  /**
   * A notification said `queue` has work — due in `dueInMs` when given (a future job) — or, with
   * no queue, the listener reconnected.
   */
  wake(queue?: string, dueInMs?: number): void {
    if (queue === undefined) for (const f of this.fetchers.values()) f.wake();
    else if (dueInMs !== undefined && dueInMs > 0) this.fetchers.get(queue)?.wakeIn(dueInMs);
    else this.fetchers.get(queue)?.wake();
  }

  /** A job this worker holds was cancelled: abort its handler. */
  cancelled(id: string): void {
    const job = this.active.get(id);
    if (!job || !job.abort('cancelled', new JobCancelledError(id))) return;
    this.active.remove(job);
    const r = job.row;
    // The process that cancelled emitted job.cancelled; here the holder lets go of it.
    this.events.emit({ type: 'job.lease-lost', jobId: r.id, kind: r.kind, queue: r.queue, attempt: r.attempt, why: 'cancelled' });
  }

  /**
   * Graceful, bounded shutdown: stop claiming; let running jobs finish for up to
   * `shutdownGraceMs`; then abort them, give handlers `abortGraceMs` to return, and hand every
   * unfinished job back (available again at once; an at-most-once job that started is abandoned).
   */
  stop(): Promise<void> {
    if (this.state === 'new') {
      this.state = 'stopped';
      return Promise.resolve();
    }
    this.stopped ??= this.shutdown();
    return this.stopped;
  }

  private async shutdown(): Promise<void> {
    this.state = 'stopping';
    this.events.emit({ type: 'worker.stopping', owner: this.settings.owner, running: this.active.size });
    await Promise.all([...this.fetchers.values()].map((f) => f.stop()));
    if (!(await this.settle(this.settings.shutdownGraceMs))) {
      const reason = new ShutdownError(this.settings.shutdownGraceMs);
      for (const job of this.active.all()) {
        if (job.finished) continue;
        job.cause = 'shutdown';
        job.controller.abort(reason);
      }
      await this.settle(this.settings.abortGraceMs);
    }
    await this.completer.drain();
    await this.handBack(this.active.all().filter((j) => !j.finished));
    await this.heartbeat.stop();
    this.state = 'stopped';
    this.release?.();
    this.events.emit({ type: 'worker.stopped', owner: this.settings.owner });
  }

  /** Waits until every run has returned, or `ms` pass. True when all returned. */
  private async settle(ms: number): Promise<boolean> {
    if (this.runs.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const all = (async () => {
      while (this.runs.size > 0) await Promise.all([...this.runs.values()]);
      return true as const;
    })();
    const done = await Promise.race([all, timeout]);
    clearTimeout(timer);
    return done;
  }

  private dispatch(job: ActiveJob, local: Slots, fromHeld: boolean): void {
    // A job that waited here started later than its claim: its start is recorded lazily (batched
    // with the next completion), so a crash gives back the attempt of a job that never ran.
    if (fromHeld && !job.row.at_most_once) this.completer.markStarted(job.row.id, job.row.lease_token);
    this.runs.set(job, this.execute(job, local));
  }

  private async execute(job: ActiveJob, local: Slots): Promise<void> {
    // The slot is the handler's: it frees when the handler returns, not when the batched
    // completion commits (the lease stays held, and heartbeated, until then), and a job held by
    // a fetcher takes it at once.
    let freed = false;
    let stuck = false;
    let graceTimer: NodeJS.Timeout | undefined;
    const free = () => {
      clearTimeout(graceTimer);
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
      graceTimer = setTimeout(() => {
        if (freed) return;
        stuck = true;
        this.stuck++;
        const r = job.row;
        this.events.emit({ type: 'job.handler-stuck', jobId: r.id, kind: r.kind, queue: r.queue, attempt: r.attempt, cause: job.cause ?? 'aborted', graceMs: this.settings.abortGraceMs });
        free();
      }, this.settings.abortGraceMs);
      graceTimer.unref?.();
    };
    try {
      if ((await this.runner.run(job, free)) === 'interrupted') await this.handBack([job]);
    } catch (err) {
      this.reportError('run', err);
      // The outcome could not be written: stop renewing the lease, so it lapses and the rescuer
      // takes the job back, rather than holding it while this process lives.
      job.finished = true;
      this.active.remove(job);
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
    if (this.state !== 'running') return;
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

  /** A held job's deadline passed before a slot freed: expire it (fenced) instead of running it. */
  private async expireHeld(job: ActiveJob): Promise<void> {
    job.finished = true;
    try {
      const applied = await jobExpireHeld(this.db.pool.pool, this.db.run, job.row.id, job.row.lease_token);
      if (applied) this.expired(job.row);
    } catch (err) {
      // Not written: the lease lapses and the rescuer returns the job; expiry then catches it.
      this.reportError('expire', err);
    } finally {
      this.active.remove(job);
    }
  }

  private expired(row: ClaimedRow): void {
    this.events.emit({ type: 'job.expired', jobId: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt });
  }

  private async handBack(jobs: ActiveJob[]): Promise<void> {
    if (jobs.length === 0) return;
    for (const j of jobs) j.finished = true;
    const at = new Date().toISOString();
    try {
      const rows = await jobRelease(
        this.db.pool.pool,
        this.db.run,
        jobs.map((j) => ({
          id: j.row.id,
          token: j.row.lease_token,
          started: j.started,
          error: { attempt: j.row.attempt, at, kind: 'shutdown', message: `interrupted by shutdown of ${this.settings.owner}` },
        })),
        this.db.channels.jobs,
      );
      const state = new Map(rows.map((r) => [r.id, r.state]));
      for (const j of jobs) {
        this.active.remove(j);
        const s = state.get(j.row.id);
        if (s) this.events.emit({ type: 'job.released', jobId: j.row.id, kind: j.row.kind, queue: j.row.queue, attempt: j.row.attempt, state: s });
      }
    } catch (err) {
      // Not handed back: the leases lapse and the rescuer takes the jobs within leaseMs.
      this.reportError('release', err);
      for (const j of jobs) this.active.remove(j);
    }
  }

  private async renewLeases(): Promise<void> {
    const jobs = this.active.all();
    if (jobs.length === 0) return;
    const held = await jobHeartbeat(
      this.db.pool.pool,
      this.db.run,
      jobs.map((j) => j.row.id),
      jobs.map((j) => j.row.lease_token),
      this.settings.leaseMs,
    );
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
    const now = Date.now();
    if (now - this.lastError < 5_000) return;
    this.lastError = now;
    const { type: _type, error, ...ids } = event as Extract<typeof event, { type: 'worker.error' }>;
    this.logger.error({ ...ids, err: { message: error } }, `worker error in ${where}`);
  }
}
