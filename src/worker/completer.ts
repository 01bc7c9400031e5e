import type { Database } from '../db/database.js';
import { jobComplete } from '../db/jobs-run.js';

interface Pending {
  id: string;
  token: string;
  resolve(applied: boolean): void;
}

/**
 * Batches completions: while one UPDATE is in flight, the next completions gather, then go in one
 * statement. A completion is written, fenced by its token, before the job leaves the set of held
 * leases, so heartbeats keep it leased meanwhile. A failed write is retried until `retryForMs`
 * (set below the lease): after that the lease lapses and the rescuer re-runs the job, which is one
 * of the documented causes of a second run.
 */
export class Completer {
  private pending: Pending[] = [];
  private flushing: Promise<void> | undefined;
  private scheduled = false;

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
    return new Promise((resolve) => {
      this.pending.push({ id, token, resolve });
      this.schedule();
    });
  }

  /** Completions queued or being written. */
  get size(): number {
    return this.pending.length;
  }

  /** Resolves when everything queued so far has been written (or given up). */
  async drain(): Promise<void> {
    while (this.pending.length > 0 || this.flushing) {
      if (this.flushing) await this.flushing;
      else await this.flush();
    }
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
    this.flushing = this.write(batch).finally(() => {
      this.flushing = undefined;
      if (this.pending.length > 0) this.schedule();
    });
    return this.flushing;
  }

  private async write(batch: Pending[]): Promise<void> {
    const deadline = Date.now() + this.retryForMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const applied = await jobComplete(
          this.db.pool.pool,
          this.db.run,
          batch.map((p) => p.id),
          batch.map((p) => p.token),
          this.remove,
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
