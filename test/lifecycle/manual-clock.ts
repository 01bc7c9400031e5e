import type { Clock, Timer } from '../../src/lifecycle/clock.js';

/**
 * A clock a test moves by hand: `advance(ms)` fires the timers that fall due, in order, each at
 * its own time, letting the promise chains they start settle between two timers. Nothing waits
 * for real time.
 */
export class ManualClock implements Clock {
  private now = 0;
  private nextId = 1;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  constructor(private readonly epochMs = Date.UTC(2030, 0, 1)) {}

  monotonic(): number {
    return this.now;
  }

  wall(): number {
    return this.epochMs + this.now;
  }

  setTimeout(fn: () => void, ms: number): Timer {
    const id = this.nextId++;
    this.timers.set(id, { at: this.now + Math.max(0, ms), fn });
    return id as unknown as Timer;
  }

  clearTimeout(timer: Timer | undefined): void {
    if (timer !== undefined) this.timers.delete(timer as unknown as number);
  }

  /** Timers set and not yet fired or cleared. */
  get pending(): number {
    return this.timers.size;
  }

  /** The delays of the timers set and not yet fired or cleared, from now, shortest first. */
  get pendingIn(): number[] {
    return [...this.timers.values()].map((t) => t.at - this.now).sort((a, b) => a - b);
  }

  /** Moves time on by `ms`, firing every timer due by then in order. */
  async advance(ms: number): Promise<void> {
    const end = this.now + ms;
    await settle();
    for (;;) {
      let due: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) if (entry[1].at <= end && (!due || entry[1].at < due[1].at)) due = entry;
      if (!due) break;
      this.timers.delete(due[0]);
      this.now = due[1].at;
      due[1].fn();
      await settle();
    }
    this.now = end;
  }
}

/** Lets every promise chain that can run now run (a turn of the event loop: microtasks drain first). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
