import type { Database } from '../db/database.js';
import type { Timer } from '../lifecycle/clock.js';
import { BaseService, type ServiceOptions } from '../lifecycle/service.js';

/** What the probe is built from. */
export interface ProbeOptions extends ServiceOptions {
  database: Database;
  /** Kinds the process runs (a queue's job of another kind is not work for it). */
  kinds: readonly string[];
  /** Shortest interval between two probes; the interval starts here when a queue has just run out of work. */
  minPollMs: number;
  /** Longest interval: the bound on how late a due job is found when every notification is lost. */
  maxPollMs: number;
  onError(err: unknown): void;
  /** After each probe that answered: the queues asked about and those found due. */
  onPolled?(queues: readonly string[], due: readonly string[]): void;
}

/** A queue waiting for the probe. */
interface Waiter {
  wake: () => void;
  /** Not included in a probe before this time (monotonic ms): a queue whose due jobs a limit holds back. */
  notBefore: number;
}

/**
 * The idle poll of a whole process: one statement per interval tells which of the queues whose
 * fetchers found nothing now have a due job (`db.queues.due`), and only those fetchers claim. A
 * process serving 200 idle queues sends one statement per poll interval instead of 200 claims.
 *
 * The interval backs off as each fetcher's own poll did: it starts at `minPollMs` when a queue
 * that just had work joins (jobs may still trickle in) and doubles after every probe up to
 * `maxPollMs`. Polling stays the correctness path; notifications, due-time timers (wakeIn) and
 * the catch-up after a reconnect wake a fetcher directly, which takes it out of the probe.
 *
 * A queue whose due jobs a fleet-wide limit holds back would be found due by every probe; it
 * joins with `holdMs` and is left out of the probes until that passes (its fetcher claims at most
 * once per `holdMs`, as its own poll did: a freed slot notifies, a rate window has its timer).
 * Paused queues are never reported due; a resume notifies.
 */
export class QueueProbe extends BaseService {
  private readonly waiting = new Map<string, Waiter>();
  private intervalMs: number;
  private timer: Timer | undefined;
  /** When the armed timer fires (monotonic ms). */
  private timerAt = 0;
  private lastAt = 0;
  private inFlight = false;
  /** The probe being sent, awaited by stop so that no statement of the worker outlives it. */
  private sending: Promise<void> | undefined;
  private readonly db: Database;

  constructor(private readonly o: ProbeOptions) {
    super({ name: 'idle probe', kind: 'probe', logger: o.logger, clock: o.clock });
    this.db = o.database;
    this.intervalMs = o.minPollMs;
  }

  /** Queues waiting for the probe right now (for tests and diagnostics). */
  get size(): number {
    return this.waiting.size;
  }

  protected onStart(): void {
    this.lastAt = this.clock.monotonic();
  }

  protected async onStop(): Promise<void> {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.waiting.clear();
    await this.sending;
  }

  /**
   * `queue`'s fetcher found nothing to claim: call `wake` once a probe sees a due job of it.
   * `fresh`: its last claim had work, so the interval starts again from `minPollMs`. `holdMs`: a
   * limit held its due jobs back; leave it out of the probes for that long. False when the probe
   * is not running (the fetcher then polls on its own).
   */
  join(queue: string, wake: () => void, o: { fresh: boolean; holdMs?: number }): boolean {
    if (!this.live) return false;
    this.waiting.set(queue, { wake, notBefore: o.holdMs ? this.clock.monotonic() + o.holdMs : 0 });
    if (o.fresh) this.intervalMs = this.o.minPollMs;
    this.arm();
    return true;
  }

  /** The fetcher of `queue` woke for another reason (a notification, a timer, stop). */
  leave(queue: string): void {
    this.waiting.delete(queue);
  }

  /** Arms the timer for the next probe: `intervalMs` after the last, or when the first held-back queue may be probed. */
  private arm(): void {
    if (this.inFlight || this.waiting.size === 0) return;
    const now = this.clock.monotonic();
    let at = Math.max(now, this.lastAt + this.intervalMs);
    let earliestHeld = Infinity;
    let any = false;
    for (const w of this.waiting.values()) {
      if (w.notBefore <= at) any = true;
      else earliestHeld = Math.min(earliestHeld, w.notBefore);
    }
    if (!any) at = earliestHeld;
    if (this.timer && this.timerAt <= at) return;
    this.clock.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.sending = this.probe();
    }, at - now);
  }

  private async probe(): Promise<void> {
    if (!this.live || this.inFlight) return;
    const now = this.clock.monotonic();
    const queues: string[] = [];
    for (const [q, w] of this.waiting) if (w.notBefore <= now) queues.push(q);
    if (queues.length === 0) return this.arm();
    this.inFlight = true;
    this.lastAt = now;
    let due: string[] = [];
    let answered = false;
    try {
      due = await this.db.queues.due({ queues, kinds: this.o.kinds });
      answered = true;
    } catch (err) {
      this.o.onError(err);
      // A failing database: probe no more often than every 500 ms (or the poll interval if longer).
      this.intervalMs = Math.max(this.intervalMs, Math.min(this.o.maxPollMs, 500));
    } finally {
      this.inFlight = false;
    }
    this.intervalMs = Math.min(this.o.maxPollMs, this.intervalMs * 2);
    if (answered) this.o.onPolled?.(queues, due);
    for (const q of due) {
      const w = this.waiting.get(q);
      if (!w) continue;
      this.waiting.delete(q);
      w.wake();
    }
    this.arm();
  }
}
