import { LeadershipLostError } from '../errors.js';
import type { Clock, Timer } from '../lifecycle/clock.js';
import { BaseService } from '../lifecycle/service.js';
import type { Logger } from '../telemetry/logger.js';
import { resolveElectorOptions, type LeaseElectorOptions, type ResolvedElectorOptions } from './elector-options.js';
import type { LeaderLease, LeaderTerm } from './leader-lease.js';

export type { LeaseElectorOptions } from './elector-options.js';

/** A term this process holds, with the timer that ends it if renewals stop succeeding. */
interface ActiveTerm extends LeaderTerm {
  readonly controller: AbortController;
  deadline: Timer | undefined;
  /** The monotonic clock's time after which the term no longer holds (see armDeadline). */
  validUntil: number;
}

type Why = 'lost' | 'expired' | 'released';

/**
 * Elects one leader per name among all processes on a schema, through a lease row in PostgreSQL.
 *
 * Each acquisition is one atomic statement that takes a fresh fencing token from a sequence, with
 * expiry by the database clock. The holder renews every `renewMs`; if no renewal has succeeded by
 * `ttlMs - stepDownMarginMs` after the last successful one was sent (measured with this process's
 * monotonic clock), it steps down — aborting the term's signal — before the lease can expire in
 * the database and be taken by anyone else. Non-holders retry every `retryMs` (with jitter), so a
 * dead holder is replaced within `ttlMs + retryMs`. `stop()` releases the lease so another
 * process takes over at once.
 */
export class LeaseElector extends BaseService implements LeaderLease {
  readonly holder: string;
  private readonly o: ResolvedElectorOptions;
  private current: ActiveTerm | undefined;
  /** The token of our last term, so a renewal lost in flight does not lock us out until expiry. */
  private lastToken: string | undefined;
  private listeners: ((term: LeaderTerm | undefined) => void)[] = [];
  private loopDone: Promise<void> | undefined;
  private sleepTimer: Timer | undefined;
  private wakeSleep: (() => void) | undefined;
  /** Whether stop hands the lease back (see {@link stop}). */
  private releaseOnStop = true;

  constructor(options: LeaseElectorOptions) {
    const o = resolveElectorOptions(options);
    super({ name: o.name, kind: 'elector', logger: o.logger, clock: o.clock });
    this.o = o;
    this.holder = this.o.holder;
  }

  /** The current term, or undefined when this process is not the leader. */
  get term(): LeaderTerm | undefined {
    const t = this.current;
    return t ? { token: t.token, signal: t.signal, held: t.held } : undefined;
  }

  /** The resolved timing of this elector (ms): lease, renewal, retry and step-down margin. */
  get timing(): { ttlMs: number; renewMs: number; retryMs: number; stepDownMarginMs: number } {
    const { ttlMs, renewMs, retryMs, stepDownMarginMs } = this.o;
    return { ttlMs, renewMs, retryMs, stepDownMarginMs };
  }

  /** Called with the term when elected and with undefined when deposed. Returns the unsubscribe function. */
  onChange(listener: (term: LeaderTerm | undefined) => void): () => void {
    this.listeners = [...this.listeners, listener];
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  /**
   * Starts campaigning; resolves once the first acquisition attempt is done (so `term` tells
   * whether this process won it). Errors are logged and retried, never thrown. Safe twice; after
   * a stop it refuses (NS_STOPPED): an elector is one campaign.
   */
  protected async onStart(): Promise<void> {
    const firstDelay = await this.acquireOnce();
    this.loopDone = this.loop(firstDelay);
  }

  /**
   * Stops campaigning. A held term ends first (its signal aborts), then the lease is released
   * (expired now, guarded by the token) so another process takes over at once — unless
   * `release: false`, which leaves it to expire by itself. Waits for a database call in flight at
   * most `min(ttlMs, 5 s)`. Safe before start and twice.
   */
  override stop(options: { release?: boolean } = {}): Promise<void> {
    if (options.release === false) this.releaseOnStop = false;
    return super.stop();
  }

  protected async onStop(): Promise<void> {
    this.interruptSleep();
    const bound = Math.min(this.o.ttlMs, 5_000);
    await within(this.clock, this.loopDone, bound);
    if (this.current) this.depose(this.current, 'released');
    // Release our last term even when it already ended here (stepped down by the deadline): a
    // renewal may have landed late and kept it alive in the database. Guarded by the token, so
    // it never touches a successor's term.
    if (this.lastToken !== undefined && this.releaseOnStop) {
      try {
        await within(this.clock, this.o.database.leases.release({ name: this.name, token: this.lastToken }), bound);
      } catch (err) {
        this.log()?.warn({ err, lease: this.name }, 'lease release failed; it expires by itself');
      }
    }
  }

  /**
   * Renews now (when leader) or tries to acquire now (when not), instead of at the next timer.
   * Call it when a write fenced by this elector's token was refused: the term is over in the
   * database, and this makes the elector notice (and abort the term's signal) at once.
   */
  recheck(): void {
    if (this.live) this.interruptSleep();
  }

  private async loop(firstDelay: number): Promise<void> {
    let delay = firstDelay;
    while (this.live) {
      await this.sleep(delay);
      if (!this.live) return;
      delay = this.current ? await this.renewOnce(this.current) : await this.acquireOnce();
    }
  }

  /** One acquisition attempt; returns how long to wait before the next step. */
  private async acquireOnce(): Promise<number> {
    const sentAt = this.clock.monotonic();
    try {
      const won = await this.o.database.leases.acquire({ name: this.name, holder: this.holder, ttlMs: this.o.ttlMs, lastToken: this.lastToken });
      if (!won) return this.retryDelay();
      if (!this.live) {
        // stop() gave up waiting for this call (or came during the start): hand the lease straight back.
        void this.o.database.leases.release({ name: this.name, token: won.token }).catch(() => undefined);
        return 0;
      }
      this.elect(won.token, sentAt);
      return this.o.renewMs;
    } catch (err) {
      this.log()?.warn({ err, lease: this.name }, 'lease acquisition failed; retrying');
      return this.retryDelay();
    }
  }

  /** One renewal of `term`; returns how long to wait before the next step. */
  private async renewOnce(term: ActiveTerm): Promise<number> {
    const sentAt = this.clock.monotonic();
    try {
      const renewed = await this.o.database.leases.renew({ name: this.name, token: term.token, ttlMs: this.o.ttlMs });
      // The term may have ended while the call was in flight (step-down by deadline, stop):
      // a late success never revives it; the next acquisition starts a new term instead.
      if (this.current !== term) return 0;
      if (!renewed) {
        this.depose(term, 'lost');
        return 0;
      }
      this.armDeadline(term, sentAt);
      return this.o.renewMs;
    } catch (err) {
      this.log()?.warn({ err, lease: this.name }, 'lease renewal failed; retrying before the term runs out');
      // Try again soon: the deadline timer steps down if no renewal succeeds in time.
      return this.current === term ? Math.max(1, Math.min(this.o.renewMs, this.o.retryMs) / 2) : 0;
    }
  }

  private elect(token: string, sentAt: number): void {
    const controller = new AbortController();
    const term: ActiveTerm = {
      token,
      signal: controller.signal,
      controller,
      deadline: undefined,
      validUntil: 0,
      held: () => {
        if (this.current !== term) return false;
        if (this.clock.monotonic() < term.validUntil) return true;
        this.depose(term, 'expired');
        return false;
      },
    };
    this.lastToken = token;
    this.current = term;
    this.armDeadline(term, sentAt);
    this.o.events?.emit({ type: 'leader.elected', name: this.name, holder: this.holder, token });
    this.notify(this.term);
  }

  /**
   * (Re)arms the step-down timer: the database set the lease to expire `ttlMs` after it ran the
   * statement, which was after `sentAt`; stepping down `stepDownMarginMs` before `sentAt + ttlMs`
   * (monotonic clock) is therefore before the database could let anyone else in.
   */
  private armDeadline(term: ActiveTerm, sentAt: number): void {
    this.clock.clearTimeout(term.deadline);
    term.validUntil = sentAt + this.o.ttlMs - this.o.stepDownMarginMs;
    const remaining = term.validUntil - this.clock.monotonic();
    if (remaining <= 0) {
      this.depose(term, 'expired');
      return;
    }
    term.deadline = this.clock.setTimeout(() => this.depose(term, 'expired'), remaining);
  }

  private depose(term: ActiveTerm, why: Why): void {
    if (this.current !== term) return;
    this.current = undefined;
    this.clock.clearTimeout(term.deadline);
    term.controller.abort(new LeadershipLostError(this.name, term.token, why));
    this.o.events?.emit({ type: 'leader.deposed', name: this.name, holder: this.holder, token: term.token, reason: why });
    this.notify(undefined);
    // Campaign again at once: if the row still carries our token (a renewal that only looked
    // lost), the next acquisition starts a new term without waiting for expiry.
    this.interruptSleep();
  }

  private notify(term: LeaderTerm | undefined): void {
    for (const l of this.listeners) {
      try {
        l(term);
      } catch (err) {
        this.log()?.error({ err, lease: this.name }, 'leadership listener threw');
      }
    }
  }

  private retryDelay(): number {
    // Uniform in [retryMs / 2, retryMs]: contenders spread out, and the failover bound stays ttl + retry.
    return this.o.retryMs * (0.5 + Math.random() / 2);
  }

  private sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.wakeSleep = resolve;
      this.sleepTimer = this.clock.setTimeout(resolve, ms);
    });
  }

  private interruptSleep(): void {
    this.clock.clearTimeout(this.sleepTimer);
    this.sleepTimer = undefined;
    const wake = this.wakeSleep;
    this.wakeSleep = undefined;
    wake?.();
  }

  private log(): Logger | undefined {
    return this.o.logger;
  }
}

/** Waits for `p` at most `ms`; a rejection of `p` is thrown, a timeout is not. */
async function within<T>(clock: Clock, p: Promise<T> | undefined, ms: number): Promise<T | undefined> {
  if (!p) return undefined;
  let timer: Timer | undefined;
  try {
    return await Promise.race([p, new Promise<undefined>((resolve) => (timer = clock.setTimeout(() => resolve(undefined), ms)))]);
  } finally {
    clock.clearTimeout(timer);
  }
}
