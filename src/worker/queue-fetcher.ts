import type { Database } from '../db/database.js';
import { jobClaim, type ClaimedRow } from '../db/jobs-run.js';
import type { Slots } from './slots.js';

export interface FetcherOptions {
  queue: string;
  kinds: readonly string[];
  owner: string;
  leaseMs: number;
  /** Shortest idle poll; doubles while the queue stays empty. */
  minPollMs: number;
  /** Longest idle poll: the bound on latency when every notification is lost. */
  maxPollMs: number;
}

/**
 * The claim loop of one queue. Claims as many jobs as both the queue's and the process's free
 * slots allow, in one statement; claims again at once when the batch came back full; otherwise
 * sleeps until a wake-up (notification, reconnect) or the poll timer, which backs off while the
 * queue stays empty. Polling is the correctness path; notifications only shorten the wait.
 */
export class QueueFetcher {
  private stopping = false;
  private woken = false;
  private wake_: (() => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private loopDone: Promise<void> | undefined;
  private idleMs: number;

  constructor(
    private readonly db: Database,
    private readonly o: FetcherOptions,
    private readonly global: Slots,
    private readonly local: Slots,
    private readonly dispatch: (row: ClaimedRow) => void,
    private readonly onExpired: (row: ClaimedRow) => void,
    private readonly onError: (err: unknown) => void,
    private readonly onClaimed?: (queue: string, asked: number, count: number) => void,
  ) {
    this.idleMs = o.minPollMs;
  }

  get queue(): string {
    return this.o.queue;
  }

  start(): void {
    this.loopDone ??= this.loop();
  }

  /** Claim now (a notification or reconnect said there may be work). */
  wake(): void {
    this.woken = true;
    this.idleMs = this.o.minPollMs;
    const w = this.wake_;
    this.wake_ = undefined;
    w?.();
  }

  /** Stops claiming; resolves when the loop has exited (no claim in flight). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    this.global.wakeAll();
    this.local.wakeAll();
    await this.loopDone;
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      const want = Math.min(this.local.free, this.global.free);
      if (want <= 0) {
        // Wait for the limit that is exhausted; stop() wakes both.
        await (this.local.free <= 0 ? this.local.whenFree() : this.global.whenFree());
        continue;
      }
      const n = this.global.take(want);
      this.local.take(n);
      let rows: ClaimedRow[];
      try {
        rows = await jobClaim(this.db.pool.pool, this.db.run, this.o.queue, this.o.kinds, n, this.o.owner, this.o.leaseMs);
      } catch (err) {
        this.global.give(n);
        this.local.give(n);
        this.onError(err);
        this.idleMs = Math.min(this.o.maxPollMs * 5, Math.max(this.idleMs * 2, 500));
        await this.sleep(this.idleMs);
        continue;
      }
      this.onClaimed?.(this.o.queue, n, rows.length);
      let running = 0;
      for (const row of rows) {
        if (row.state === 'expired') this.onExpired(row);
        else {
          running++;
          this.dispatch(row);
        }
      }
      this.global.give(n - running);
      this.local.give(n - running);
      if (rows.length === n) {
        this.idleMs = this.o.minPollMs;
        continue;
      }
      this.idleMs = rows.length > 0 ? this.o.minPollMs : Math.min(this.o.maxPollMs, this.idleMs * 2);
      await this.sleep(this.idleMs);
    }
  }

  /** Sleeps until `ms` pass or a wake-up arrives (one that came during the claim counts). */
  private sleep(ms: number): Promise<void> {
    if (this.woken || this.stopping) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(this.timer);
        this.timer = undefined;
        this.wake_ = undefined;
        this.woken = false;
        resolve();
      };
      this.wake_ = done;
      this.timer = setTimeout(done, ms);
    });
  }
}
