/** A counting limit (process-wide or per queue concurrency) with a wake-up when capacity frees. */
export class Slots {
  private used = 0;
  private waiters: (() => void)[] = [];

  constructor(readonly limit: number) {}

  get free(): number {
    return this.limit - this.used;
  }

  get inUse(): number {
    return this.used;
  }

  /** Takes up to `n` slots; returns how many were taken. */
  take(n: number): number {
    const k = Math.max(0, Math.min(n, this.free));
    this.used += k;
    return k;
  }

  /** Gives `n` slots back and wakes whoever waits for capacity. */
  give(n: number): void {
    if (n <= 0) return;
    this.used -= n;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** Resolves when some slot is given back (or at once when one is free). */
  whenFree(): Promise<void> {
    if (this.free > 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Resolves when every slot is free. */
  async whenIdle(): Promise<void> {
    while (this.used > 0) await new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  /** Wakes every waiter without giving anything back (used when stopping). */
  wakeAll(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
