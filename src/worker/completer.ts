import type { Database } from '../db/database.js';
import type { StartMarks } from '../db/jobs-run.js';
import { sleep, systemClock, type Clock, type Timer } from '../lifecycle/clock.js';

/** What a completer is built from. */
export interface CompleterOptions {
  database: Database;
  /** Most completions per statement. */
  maxBatch: number;
  /** How long a failed write is retried (below the lease, so a job is not held past it). */
  retryForMs: number;
  onError: (err: unknown) => void;
  /** Delete completed jobs instead of keeping them (retention.completed = 0). Default false. */
  remove?: boolean;
  clock?: Clock;
}

interface Pending {
  id: string;
  token: string;
  resolve(applied: boolean): void;
}

/** A start mark waits at most this long for a completion to carry it before it is written alone. */
const MARK_DELAY_MS = 100;

/**
 * Batches completions: while one UPDATE is in flight, the next completions gather, then go in one
 * statement. A completion is written, fenced by its token, before the job leaves the set of held
 * leases, so heartbeats keep it leased meanwhile. A failed write is retried until `retryForMs`
 * (set below the lease): after that the lease lapses and the rescuer re-runs the job, which is one
 * of the documented causes of a second run.
 *
 * It also records the starts of jobs that waited in the worker for a slot (the claim recorded the
 * start only of the jobs it started at once): the marks ride along with the next completion, or
 * go alone after {@link MARK_DELAY_MS}. A mark lost to a crash only means the rescuer gives that
 * job's attempt back, as for a job that never ran.
 */
export class Completer {
  private pending: Pending[] = [];
  private flushing: Promise<void> | undefined;
  private scheduled = false;
  /** Start marks not yet written: job id → lease token. */
  private marks = new Map<string, string>();
  private markTimer: Timer | undefined;
  private readonly db: Database;
  private readonly maxBatch: number;
  private readonly retryForMs: number;
  private readonly onError: (err: unknown) => void;
  private readonly remove: boolean;
  private readonly clock: Clock;

  constructor(o: CompleterOptions) {
    this.db = o.database;
    this.maxBatch = o.maxBatch;
    this.retryForMs = o.retryForMs;
    this.onError = o.onError;
    this.remove = o.remove ?? false;
    this.clock = o.clock ?? systemClock;
  }

  /** Queues a completion; resolves true when written, false when the token was stale (refused). */
  complete(id: string, token: string): Promise<boolean> {
    // The completion records the start itself.
    if (this.marks.get(id) === token) this.marks.delete(id);
    return new Promise((resolve) => {
      this.pending.push({ id, token, resolve });
      this.schedule();
    });
  }

  /** Records, with the next write, that the handler of a held job started. */
  markStarted(id: string, token: string): void {
    this.marks.set(id, token);
    this.armMarkTimer();
  }

  /**
   * Writes the marks alone after MARK_DELAY_MS unless a completion carries them first. A timer that
   * fires while a completion is in flight (or about to be sent) leaves them to the write after it:
   * the flush re-arms the timer when it ends with marks left (a mark must never wait for a
   * completion that may not come).
   */
  private armMarkTimer(): void {
    if (this.markTimer !== undefined || this.marks.size === 0) return;
    this.markTimer = this.clock.setTimeout(
      () => {
        this.markTimer = undefined;
        if (!this.flushing && !this.scheduled) void this.writeMarks();
      },
      MARK_DELAY_MS,
      { unref: true },
    );
  }

  /** Completions queued or being written. */
  get size(): number {
    return this.pending.length;
  }

  /** Resolves when everything queued so far has been written (or given up), start marks included. */
  async drain(): Promise<void> {
    while (this.pending.length > 0 || this.flushing) {
      if (this.flushing) await this.flushing;
      else await this.flush();
    }
    this.clock.clearTimeout(this.markTimer);
    this.markTimer = undefined;
    await this.writeMarks();
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private flush(): Promise<void> {
    if (this.flushing || this.pending.length === 0) return this.flushing ?? Promise.resolve();
    const batch = this.pending.splice(0, this.maxBatch);
    this.flushing = this.write(batch, this.takeMarks()).finally(() => {
      this.flushing = undefined;
      if (this.pending.length > 0) this.schedule();
      else this.armMarkTimer();
    });
    return this.flushing;
  }

  private takeMarks(): StartMarks | undefined {
    if (this.marks.size === 0) return undefined;
    const marks: StartMarks = { ids: [...this.marks.keys()], tokens: [...this.marks.values()] };
    this.marks.clear();
    this.clock.clearTimeout(this.markTimer);
    this.markTimer = undefined;
    return marks;
  }

  private async writeMarks(): Promise<void> {
    const marks = this.takeMarks();
    if (!marks) return;
    try {
      await this.db.jobs.markStarted(marks);
    } catch (err) {
      // Best effort: without the mark, a crash gives the attempt back (the job may run once more).
      this.onError(err);
    }
  }

  private async write(batch: Pending[], marks: StartMarks | undefined): Promise<void> {
    const deadline = this.clock.monotonic() + this.retryForMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const applied = await this.db.jobs.complete({
          ids: batch.map((p) => p.id),
          tokens: batch.map((p) => p.token),
          remove: this.remove,
          marks,
        });
        for (const p of batch) p.resolve(applied.has(p.token));
        return;
      } catch (err) {
        this.onError(err);
        if (this.clock.monotonic() >= deadline) {
          // Give up: the leases lapse and the jobs are rescued (at-least-once) or abandoned.
          for (const p of batch) p.resolve(false);
          return;
        }
        await sleep(this.clock, Math.min(2_000, 100 * 2 ** attempt));
      }
    }
  }
}
