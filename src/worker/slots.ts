/**
 * A counting limit (process-wide or per queue concurrency). Slots are taken at once when free
 * (`take`), or waited for in first-come order (`acquire`): a slot given back goes to the longest
 * waiter before it becomes free for anyone, so a claim loop that waits for a slot is served before
 * a busy queue's held jobs can take every slot that frees (issue 11, bug 1).
 */
export class Slots {
  private used = 0;
  private waiters: { owner: object; resolve(got: boolean): void }[] = [];

  constructor(readonly limit: number) {}

  get free(): number {
    return this.limit - this.used;
  }

  get inUse(): number {
    return this.used;
  }

  /** Whether anyone waits for a slot. */
  get contended(): boolean {
    return this.waiters.length > 0;
  }

  /** Takes up to `n` free slots now; returns how many were taken. */
  take(n: number): number {
    const k = Math.max(0, Math.min(n, this.free));
    this.used += k;
    return k;
  }

  /** Gives `n` slots back: the longest waiters get them first, the rest become free. */
  give(n: number): void {
    if (n <= 0) return;
    this.used -= n;
    while (this.waiters.length > 0 && this.free > 0) {
      this.used++;
      this.waiters.shift()!.resolve(true);
    }
  }

  /**
   * Takes one slot, waiting in first-come order when none is free. Resolves true with the slot
   * taken, or false when `cancel(owner)` withdrew the wait.
   */
  acquire(owner: object): Promise<boolean> {
    if (this.waiters.length === 0 && this.take(1) === 1) return Promise.resolve(true);
    return new Promise((resolve) => this.waiters.push({ owner, resolve }));
  }

  /** Withdraws `owner`'s waits (they resolve false). */
  cancel(owner: object): void {
    const mine = this.waiters.filter((w) => w.owner === owner);
    if (mine.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.owner !== owner);
    for (const w of mine) w.resolve(false);
  }
}
