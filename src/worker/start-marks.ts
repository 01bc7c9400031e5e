import type { Database } from '../db/database.js';
import type { ActiveJob } from './active-jobs.js';

/** What recording a start came to. */
export type StartMark = 'started' | 'refused' | 'failed';

/**
 * Records, before their handlers run, that at-most-once jobs start now: one statement for all the
 * jobs starting in the same turn of the event loop, fenced by their tokens. Only a recorded start
 * makes a lost lease "may have acted" (abandoned); a job whose start was never recorded goes back
 * to the queue when its lease lapses. Costs at-most-once jobs one round trip before they start.
 */
export class StartMarks {
  private pending: { job: ActiveJob; resolve(mark: StartMark): void }[] = [];
  private scheduled = false;

  constructor(
    private readonly db: Database,
    private readonly onError: (err: unknown) => void,
  ) {}

  /** Resolves `started` once the start is committed, `refused` when the token was stale, `failed` when the write failed. */
  mark(job: ActiveJob): Promise<StartMark> {
    return new Promise((resolve) => {
      this.pending.push({ job, resolve });
      if (this.scheduled) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        void this.flush();
      });
    });
  }

  private async flush(): Promise<void> {
    const batch = this.pending.splice(0);
    if (batch.length === 0) return;
    try {
      const held = await this.db.jobs.start({
        ids: batch.map((p) => p.job.row.id),
        tokens: batch.map((p) => p.job.row.lease_token),
      });
      for (const p of batch) p.resolve(held.has(p.job.row.lease_token) ? 'started' : 'refused');
    } catch (err) {
      this.onError(err);
      for (const p of batch) p.resolve('failed');
    }
  }
}
