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
  /** When the handler started, on the completer's monotonic clock. */
  startedAt: number;
  resolve(applied: boolean): void;
}

/** A start not yet written. */
interface Mark {
  token: string;
  /** When the handler started, on the completer's monotonic clock. */
  at: number;
}

/**
 * A start is recorded once its handler has run this long without finishing: a completion within
 * it records the start itself, so a job that runs for less costs no write of its own. A process
 * that dies inside it leaves the start unrecorded, and the rescuer gives the attempt back (a
 * second run the at-least-once contract allows; bounded, see the rescue statement).
 */
export const MARK_DELAY_MS = 100;

/**
 * Batches completions: while one UPDATE is in flight, the next completions gather, then go in one
 * statement. A completion is written, fenced by its token, before the job leaves the set of held
 * leases, so heartbeats keep it leased meanwhile. A failed write is retried until `retryForMs`
 * (set below the lease): after that the lease lapses and the rescuer re-runs the job, which is one
 * of the documented causes of a second run.
 *
 * It also records that handlers started (the claim records no start: a process killed between
 * the claim and a handler's start must not use up that job's attempt, issue 11 bug 3). A start
 * is recorded once its handler has run {@link MARK_DELAY_MS}: the marks that old ride along with
 * the next completion, or go alone; a job that completes sooner has its start written by its
 * completion (its run time carried with it). A mark lost to a crash only means the rescuer gives
 * that job's attempt back, as for a job that never ran.
 */
export class Completer {
  private pending: Pending[] = [];
  private flushing: Promise<void> | undefined;
  private scheduled = false;
  /** Start marks not yet written: job id → lease token and start, oldest first. */
  private marks = new Map<string, Mark>();
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

  /**
   * Queues a completion of a handler that started at `startedAt` (this completer's clock);
   * resolves true when written, false when the token was stale (refused).
   */
  complete(id: string, token: string, startedAt: number): Promise<boolean> {
    // The completion records the start itself (when no mark did).
    if (this.marks.get(id)?.token === token) this.marks.delete(id);
    return new Promise((resolve) => {
      this.pending.push({ id, token, startedAt, resolve });
      this.schedule();
    });
  }

  /** Records, once it has run MARK_DELAY_MS (with the next write), that a job's handler started now. */
  markStarted(id: string, token: string): void {
    // Delete first so the map stays in start order (a re-claimed id goes to the end).
    this.marks.delete(id);
    this.marks.set(id, { token, at: this.clock.monotonic() });
    this.armMarkTimer();
  }

  /**
   * Writes the marks alone when the oldest is due unless a completion carries them first. A timer
   * that fires while a completion is in flight (or about to be sent) leaves them to the write
   * after it: the flush re-arms the timer when it ends with marks left (a mark must never wait for
   * a completion that may not come).
   */
  private armMarkTimer(): void {
    if (this.markTimer !== undefined) return;
    const oldest = this.marks.values().next();
    if (oldest.done) return;
    this.markTimer = this.clock.setTimeout(
      () => {
        this.markTimer = undefined;
        if (!this.flushing && !this.scheduled) void this.writeMarks();
      },
      Math.max(0, oldest.value.at + MARK_DELAY_MS - this.clock.monotonic()),
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
    await this.writeMarks(true);
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

  /** The marks due (their handler has run MARK_DELAY_MS), or all of them; removed from the map. */
  private takeMarks(all = false): StartMarks | undefined {
    if (this.marks.size === 0) return undefined;
    const now = this.clock.monotonic();
    const marks: StartMarks = { ids: [], tokens: [], agesMs: [] };
    for (const [id, m] of this.marks) {
      const age = now - m.at;
      if (!all && age < MARK_DELAY_MS) break;
      marks.ids.push(id);
      marks.tokens.push(m.token);
      marks.agesMs.push(age);
      this.marks.delete(id);
    }
    this.clock.clearTimeout(this.markTimer);
    this.markTimer = undefined;
    return marks.ids.length > 0 ? marks : undefined;
  }

  private async writeMarks(all = false): Promise<void> {
    const marks = this.takeMarks(all);
    try {
      if (marks) await this.db.jobs.markStarted(marks);
    } catch (err) {
      // Best effort: without the mark, a crash gives the attempt back (the job may run once more).
      this.onError(err);
    } finally {
      if (!all) this.armMarkTimer();
    }
  }

  private async write(batch: Pending[], marks: StartMarks | undefined): Promise<void> {
    const taken = this.clock.monotonic();
    const deadline = taken + this.retryForMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const now = this.clock.monotonic();
        const applied = await this.db.jobs.complete({
          ids: batch.map((p) => p.id),
          tokens: batch.map((p) => p.token),
          ranMs: batch.map((p) => now - p.startedAt),
          remove: this.remove,
          // A retry dates the marks back by their age now, not by the age they had when taken.
          marks: marks && { ...marks, agesMs: marks.agesMs.map((age) => age + now - taken) },
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
