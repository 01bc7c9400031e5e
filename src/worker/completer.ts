import type { Database } from '../db/database.js';
import { jobComplete, jobMarkStarted, type StartMarks } from '../db/jobs-run.js';

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
  private markTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly maxBatch: number,
    private readonly retryForMs: number,
    private readonly onError: (err: unknown) => void,
    /** Delete completed jobs instead of keeping them (retention.completed = 0). */
    private readonly remove = false,
  ) {}

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
    if (this.markTimer === undefined) {
      this.markTimer = setTimeout(() => {
        this.markTimer = undefined;
        if (!this.flushing && !this.scheduled) void this.writeMarks();
      }, MARK_DELAY_MS);
      this.markTimer.unref?.();
    }
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
    clearTimeout(this.markTimer);
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
    });
    return this.flushing;
  }

  private takeMarks(): StartMarks | undefined {
    if (this.marks.size === 0) return undefined;
    const marks: StartMarks = { ids: [...this.marks.keys()], tokens: [...this.marks.values()] };
    this.marks.clear();
    clearTimeout(this.markTimer);
    this.markTimer = undefined;
    return marks;
  }

  private async writeMarks(): Promise<void> {
    const marks = this.takeMarks();
    if (!marks) return;
    try {
      await jobMarkStarted(this.db.pool.pool, this.db.run, marks);
    } catch (err) {
      // Best effort: without the mark, a crash gives the attempt back (the job may run once more).
      this.onError(err);
    }
  }

  private async write(batch: Pending[], marks: StartMarks | undefined): Promise<void> {
    const deadline = Date.now() + this.retryForMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const applied = await jobComplete(
          this.db.pool.pool,
          this.db.run,
          batch.map((p) => p.id),
          batch.map((p) => p.token),
          this.remove,
          marks,
        );
        for (const p of batch) p.resolve(applied.has(p.token));
        return;
      } catch (err) {
        this.onError(err);
        if (Date.now() >= deadline) {
          // Give up: the leases lapse and the jobs are rescued (at-least-once) or abandoned.
          for (const p of batch) p.resolve(false);
          return;
        }
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** attempt)));
      }
    }
  }
}
