import type { JobInsertResult, JobInsertRow } from '../db/jobs-insert.js';
import { DatabaseError } from '../errors.js';

interface Waiter {
  row: JobInsertRow;
  resolve(result: JobInsertResult): void;
  reject(err: unknown): void;
}

/**
 * Coalesces concurrent single enqueues that are not inside a caller's transaction into one
 * multi-row INSERT. Each caller's promise resolves only after the statement that carries its row
 * has committed (an auto-committed statement on the pool), so a resolved `enqueue` still means
 * the job is committed. Rows queue while `maxInFlight` statements are running; a batch that fails
 * for a reason other than the connection is retried row by row, so one caller's problem never
 * fails another's enqueue.
 */
export class InsertBatcher {
  private pending: Waiter[] = [];
  private inFlight = 0;
  private scheduled = false;
  private readonly insert: (rows: JobInsertRow[]) => Promise<JobInsertResult[]>;
  private readonly maxInFlight: number;
  private readonly maxBatch: number;
  private readonly maxBytes: number;

  constructor(o: {
    /** Writes rows in one statement, results in input order. */
    insert: (rows: JobInsertRow[]) => Promise<JobInsertResult[]>;
    /** Statements in flight at once; rows queue meanwhile. */
    maxInFlight: number;
    /** Rows per statement, at most. */
    maxBatch: number;
    /** Bytes of payload per statement, about (rows travel as one JSON parameter). Default 16 MiB. */
    maxBytes?: number;
  }) {
    this.insert = o.insert;
    this.maxInFlight = o.maxInFlight;
    this.maxBatch = o.maxBatch;
    this.maxBytes = o.maxBytes ?? 16 * 1_048_576;
  }

  /** Queues one row; resolves when it is committed. */
  add(row: JobInsertRow): Promise<JobInsertResult> {
    return new Promise((resolve, reject) => {
      this.pending.push({ row, resolve, reject });
      this.schedule();
    });
  }

  /** Rows queued or in flight. */
  get size(): number {
    return this.pending.length + this.inFlight;
  }

  private schedule(): void {
    if (this.scheduled || this.inFlight >= this.maxInFlight) return;
    this.scheduled = true;
    // setImmediate rather than a microtask: callers that enqueue in the same turn of the event
    // loop (Promise.all, many producers resuming together) land in one statement.
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    while (this.pending.length > 0 && this.inFlight < this.maxInFlight) {
      // At most maxBatch rows and about maxBytes of payload: rows travel as one JSON parameter.
      let n = 0;
      for (let bytes = 0; n < this.pending.length && n < this.maxBatch; n++) {
        bytes += this.pending[n]!.row.payload.length;
        if (n > 0 && bytes > this.maxBytes) break;
      }
      const batch = this.pending.splice(0, n);
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        if (this.pending.length > 0) this.schedule();
      });
    }
  }

  private async send(batch: Waiter[]): Promise<void> {
    try {
      const results = await this.insert(batch.map((w) => w.row));
      batch.forEach((w, i) => w.resolve(results[i]!));
    } catch (err) {
      // Unavailable: every row would fail the same way, and one by one would only take longer.
      if (batch.length === 1 || (err instanceof DatabaseError && err.unavailable)) {
        for (const w of batch) w.reject(err);
        return;
      }
      for (const w of batch) {
        try {
          const [result] = await this.insert([w.row]);
          w.resolve(result!);
        } catch (rowErr) {
          w.reject(rowErr);
        }
      }
    }
  }
}
