import type { Database } from '../db/database.js';
import type { ClaimedRow } from '../db/jobs-run.js';
import type { Timer } from '../lifecycle/clock.js';
import { BaseService, type ServiceOptions } from '../lifecycle/service.js';
import type { ActiveJob } from './active-jobs.js';
import type { LimitPlan } from './limit-plan.js';
import type { QueueProbe } from './queue-probe.js';
import type { Slots } from './slots.js';

/** What a fetcher is built from. */
export interface FetcherOptions extends ServiceOptions {
  database: Database;
  queue: string;
  kinds: readonly string[];
  owner: string;
  leaseMs: number;
  /** Shortest idle poll; doubles while the queue stays empty. */
  minPollMs: number;
  /** Longest idle poll: the bound on latency when every notification is lost. */
  maxPollMs: number;
  /** Most jobs claimed ahead of free slots and held here until one frees; 0 claims only for free slots. */
  prefetch: number;
  /** The process's slots, and this queue's. */
  global: Slots;
  local: Slots;
  host: FetcherHost;
  /**
   * The fleet-wide limits of what this queue claims: claimed through the limited claim, ahead of
   * free slots only as retarget() allows. Undefined: the plain claim.
   */
  limits?: LimitPlan;
  /**
   * The process's idle poll: once a claim finds nothing, the fetcher waits for it (or a wake-up)
   * instead of polling on its own, so an idle process sends one statement per poll interval
   * whatever its number of queues. Undefined: the fetcher polls on its own timer.
   */
  probe?: QueueProbe;
}

/** What the fetcher needs from its worker. */
export interface FetcherHost {
  /** Takes the lease of a claimed job into the process's set (heartbeats, shutdown hand-back). */
  hold(row: ClaimedRow): ActiveJob;
  /** Runs a claimed job in the slots the fetcher has just taken for it; `fromHeld` when it waited here first (its start is not recorded by the claim). */
  start(job: ActiveJob, fromHeld: boolean): void;
  /** A job the claim itself found past its deadline (the database marked it expired). */
  expired(row: ClaimedRow): void;
  /** A held job whose deadline passed before a slot freed. */
  expireHeld(job: ActiveJob): void;
  /** Leases the process may still take (claimed, running or being completed): the back-pressure. */
  room(): number;
  /** Slots this fetcher took for a claim came back unused: other queues' held jobs may start. */
  slotsFreed(): void;
  onError(err: unknown): void;
  onClaimed(queue: string, asked: number, count: number): void;
  /** A limited claim passed over `count` due jobs because a limit was full (0 once none waits). */
  onLimited?(queue: string, count: number, wakeInMs: number | undefined): void;
}

/**
 * The claim loop of one queue. One statement claims jobs for the free slots (the queue's and the
 * process's) plus some more, held here in claim order, leases renewed by heartbeats, so that a slot
 * freed by a finished handler is filled at once, without a round trip. How many more adapts to the
 * queue: about what the slots would start during a few claim round trips at the recent rate,
 * never more than `prefetch`. Fast jobs get large batches; slow or stalled ones get none, so a busy
 * process does not sit on jobs an idle one could run. The loop claims again when slots are free,
 * or when the held jobs fall to half the target; at once when a batch came back full, otherwise
 * it sleeps until a wake-up (notification, reconnect) or the poll timer, which backs off while the
 * queue stays empty. Polling is the correctness path; notifications only shorten the wait.
 *
 * Held jobs have not started: shutdown hands them back unrun (attempt returned), a cancel drops
 * them, a deadline that passes while they wait expires them instead of running them, and an
 * at-most-once job only counts as started once its start is recorded (see JobRunner), so a crash
 * never abandons a job that was merely held.
 */
export class QueueFetcher extends BaseService {
  private stopping = false;
  private woken = false;
  private wake_: (() => void) | undefined;
  private need_: (() => void) | undefined;
  private timer: Timer | undefined;
  private loopDone: Promise<void> | undefined;
  private idleMs: number;
  private held: ActiveJob[] = [];
  private heldHead = 0;
  /** Jobs started since the last claim, and when that claim was sent: the recent rate. */
  private starts = 0;
  private lastClaimAt = 0;
  /** Smoothed jobs started per ms, and claim round trip in ms. */
  private rate = 0;
  private claimMs = 1;
  /** Jobs to hold ahead of free slots, recomputed at every claim. */
  private target = 0;
  /** The timer of the earliest known future due time (wakeIn), and when it fires (monotonic clock). */
  private dueTimer: Timer | undefined;
  private dueAt = 0;
  /** The last limited claim passed jobs over (so the next one that does not reports 0). */
  private wasLimited = false;
  /** A claim is in flight. */
  private claiming = false;
  /** Claim limits in room mode (see LimitedClaimParams.room): until a claim says otherwise, under concurrency limits only. */
  private room: boolean;
  /** Learn the next due time after the next short claim: at start (jobs delayed before this process started), and after the listener (re)connected. */
  private probeDue = true;
  /** The last claim found jobs: the queue just ran out of work (the idle probe polls soon again). */
  private hadWork = false;
  private readonly db: Database;
  private readonly global: Slots;
  private readonly local: Slots;
  private readonly host: FetcherHost;

  constructor(private readonly o: FetcherOptions) {
    super({ name: `claim ${o.queue}`, kind: 'fetcher', logger: o.logger, clock: o.clock });
    this.db = o.database;
    this.global = o.global;
    this.local = o.local;
    this.host = o.host;
    this.idleMs = o.minPollMs;
    this.room = !!o.limits && !o.limits.rate;
  }

  get queue(): string {
    return this.o.queue;
  }

  /** Jobs claimed and waiting here for a slot. */
  get waiting(): number {
    return this.held.length - this.heldHead;
  }

  protected onStart(): void {
    this.loopDone = this.loop();
  }

  /** The listener (re)connected: claim now, and learn the next due time after a short claim (see learnNextDue). */
  reconnected(): void {
    this.probeDue = true;
    this.wake();
  }

  /** Claim now (a notification or reconnect said there may be work). */
  wake(): void {
    this.woken = true;
    this.idleMs = this.o.minPollMs;
    const w = this.wake_;
    this.wake_ = undefined;
    w?.();
  }

  /** Starts held jobs while slots are free, then claims again if it should; called after a claim and whenever a slot or lease frees. */
  pump(): void {
    this.startHeld(Infinity);
    this.checkNeed();
  }

  /**
   * Starts up to `max` held jobs while this queue's and the process's slots allow; returns how
   * many started. The worker calls it one job per queue in turn, so queues share freed slots.
   */
  startHeld(max: number): number {
    let started = 0;
    while (started < max && !this.stopping && this.waiting > 0 && this.local.free > 0 && this.global.free > 0) {
      const job = this.held[this.heldHead++]!;
      if (job.finished) continue; // cancelled or lost while held
      if (job.deadline !== undefined && this.clock.monotonic() >= job.deadline) {
        this.host.expireHeld(job);
        continue;
      }
      this.global.take(1);
      this.local.take(1);
      this.starts++;
      started++;
      this.host.start(job, true);
    }
    if (this.heldHead > 64 && this.heldHead * 2 > this.held.length) {
      this.held = this.held.slice(this.heldHead);
      this.heldHead = 0;
    }
    return started;
  }

  /** Lets the claim loop go on when it waits for a reason that no longer holds. */
  checkNeed(): void {
    if (this.need_ && this.wants() !== 'nothing') {
      const n = this.need_;
      this.need_ = undefined;
      n();
    }
  }

  /**
   * A slot of each of `limits` freed (a limited job left running): claim now if the last claim
   * passed jobs over under one of them. `*` stands for any limit (a job whose limits' names did
   * not fit in a notification).
   */
  limitFreed(limits: ReadonlySet<string>): void {
    // A claim in flight may have counted the slot before it freed: it must look again too.
    if ((this.wasLimited || this.claiming) && this.o.limits && (limits.has('*') || this.o.limits.names.some((n) => limits.has(n)))) this.wake();
  }

  /**
   * A job of this queue becomes due in `ms` (a notification of a future job, a retry this process
   * wrote): claim then rather than at the next poll. Only the earliest such time is kept.
   */
  wakeIn(ms: number): void {
    if (this.stopping) return;
    if (ms <= 0) return this.wake();
    if (ms > MAX_WAKE_IN_MS) return; // polling finds it; a timer that far out is not worth holding
    const at = this.clock.monotonic() + ms;
    if (this.dueTimer && this.dueAt <= at) return;
    this.clock.clearTimeout(this.dueTimer);
    this.dueAt = at;
    this.dueTimer = this.clock.setTimeout(
      () => {
        this.dueTimer = undefined;
        // A timer may fire a little before the database's clock reaches the due time (Node times
        // it from the event loop's cached now, which a long turn leaves behind): a claim that then
        // finds nothing asks again when the next job is due, instead of leaving it to the poll.
        this.probeDue = true;
        this.wake();
      },
      ms,
      { unref: true },
    );
  }

  /** Stops claiming; resolves when the loop has exited (no claim in flight). Held jobs stay held for the worker to hand back. */
  protected async onStop(): Promise<void> {
    this.stopping = true;
    this.clock.clearTimeout(this.dueTimer);
    this.dueTimer = undefined;
    this.wake();
    this.need_?.();
    this.global.cancel(this);
    await this.loopDone;
  }

  /**
   * What the claim loop should do now: claim for free slots (`now`), claim only ahead of slots
   * (`ahead`), wait in turn for a slot of the process (`slot`: nothing is held here and every slot
   * is busy), or wait (`nothing`: its own limit is full, it holds enough, or the process holds as
   * many leases as it may).
   */
  private wants(): 'now' | 'ahead' | 'slot' | 'nothing' {
    if (this.host.room() <= 0) return 'nothing';
    const ahead = this.target > 0 && this.waiting <= this.target / 2;
    if (this.local.free <= 0) return ahead ? 'ahead' : 'nothing';
    if (this.global.free > 0) return this.waiting === 0 || ahead ? 'now' : 'nothing';
    if (ahead) return 'ahead';
    return this.waiting === 0 ? 'slot' : 'nothing';
  }

  /** Updates the rate and the number of jobs to hold ahead, at the moment a claim is sent. */
  private retarget(at: number): void {
    if (this.lastClaimAt > 0) {
      const recent = this.starts / Math.max(1, at - this.lastClaimAt);
      this.rate = 0.5 * this.rate + 0.5 * recent;
    }
    this.starts = 0;
    this.lastClaimAt = at;
    // A limited queue claims ahead only under concurrency limits that held nothing back at the last
    // claim: a held job is running for the limits (exact, never over), but it keeps a slot while
    // it waits for one of this process, which a scarce limit cannot spare. Never under a rate
    // limit: its window counts a start at the claim, and a held job would start later.
    const ahead = !this.o.limits || (!this.o.limits.rate && !this.wasLimited);
    this.target = ahead ? Math.min(this.o.prefetch, Math.ceil(this.rate * this.claimMs * HOLD_ROUND_TRIPS)) : 0;
  }

  private waitForNeed(): Promise<void> {
    return new Promise<void>((resolve) => (this.need_ = resolve));
  }

  /** Gives back slots taken for a claim that did not use them, so other queues can. */
  private giveBack(n: number): void {
    if (n <= 0) return;
    this.global.give(n);
    this.local.give(n);
    this.host.slotsFreed();
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      this.pump();
      const want = this.wants();
      if (want === 'nothing') {
        await this.waitForNeed();
        continue;
      }
      // Slots for the jobs that start at once are taken before the claim, so the fetchers of other
      // queues cannot promise them too; the rest of the batch waits here for slots. With every
      // slot busy and nothing held, the loop waits for the next slot in turn with the other
      // queues' loops (Slots.acquire), instead of for a job of its own that may never come.
      let now = 0;
      if (want === 'slot') {
        if (!(await this.global.acquire(this))) continue;
        this.local.take(1);
        now = 1;
        if (this.stopping || this.host.room() <= 0) {
          this.giveBack(1);
          continue;
        }
      }
      const sentAt = this.clock.monotonic();
      this.retarget(sentAt);
      const room = this.host.room();
      if (want !== 'ahead') {
        const more = this.global.take(Math.min(this.local.free, room - now));
        this.local.take(more);
        now += more;
      }
      const ahead = Math.max(0, Math.min(this.target - this.waiting, room - now));
      const n = now + ahead;
      if (n === 0) {
        await this.waitForNeed();
        continue;
      }
      let rows: ClaimedRow[];
      let limited = 0;
      this.claiming = true;
      try {
        const p = { queue: this.o.queue, kinds: this.o.kinds, limit: n, owner: this.o.owner, leaseMs: this.o.leaseMs };
        if (!this.o.limits) rows = await this.db.jobs.claim(p);
        else {
          const c = await this.db.limits.claim({ ...p, ...this.o.limits, room: this.room });
          if (c.room === false && this.room) {
            // Room not proven (nothing was claimed): claim again at once, exclusively.
            this.room = false;
            this.claiming = false;
            this.giveBack(now);
            continue;
          }
          if (c.room !== undefined) this.room = c.room && !this.o.limits.rate;
          rows = c.rows;
          limited = c.limited;
          // A full rate window: look again when it opens, not at the next poll.
          if (c.wakeInMs !== undefined) this.wakeIn(c.wakeInMs);
          if (limited > 0 || this.wasLimited) this.host.onLimited?.(this.o.queue, limited, c.wakeInMs);
          this.wasLimited = limited > 0;
        }
      } catch (err) {
        this.claiming = false;
        this.giveBack(now);
        this.host.onError(err);
        this.idleMs = Math.min(this.o.maxPollMs * 5, Math.max(this.idleMs * 2, 500));
        await this.sleep(this.idleMs);
        continue;
      }
      this.claiming = false;
      if (rows.length === n) this.hadWork = true;
      this.claimMs = 0.7 * this.claimMs + 0.3 * (this.clock.monotonic() - sentAt);
      this.host.onClaimed(this.o.queue, n, rows.length);
      if (rows.length > 1) rows.sort(claimOrder);
      let started = 0;
      for (const row of rows) {
        if (row.state === 'expired') {
          this.host.expired(row);
          continue;
        }
        const job = this.host.hold(row);
        if (row.expires_in_ms !== null) job.deadline = sentAt + row.expires_in_ms;
        if (started < now && !this.stopping) {
          started++;
          this.starts++;
          this.host.start(job, false);
        } else this.held.push(job);
      }
      this.giveBack(now - started);
      if (rows.length === n) {
        this.idleMs = this.o.minPollMs;
        continue;
      }
      this.idleMs = rows.length > 0 ? this.o.minPollMs : Math.min(this.o.maxPollMs, this.idleMs * 2);
      // Jobs wait for a limit: a slot that frees notifies (the jobs_limit_freed trigger), a
      // window that opens has its wake-up (wakeIn); polling is only the fallback.
      if (limited > 0) this.idleMs = this.o.maxPollMs;
      // Short of what it asked for, nothing more is due here (or only jobs a limit holds back).
      if (this.probeDue) await this.learnNextDue();
      const fresh = this.hadWork;
      this.hadWork = rows.length > 0;
      // Nothing due here: wait for the process's one idle poll rather than poll alone; a limit
      // that held due jobs back keeps them out of the probe for a poll interval (no spinning).
      if (rows.length === 0 && this.o.probe) await this.sleep(Infinity, { fresh, ...(limited > 0 ? { holdMs: this.o.maxPollMs } : {}) });
      else await this.sleep(this.idleMs);
    }
  }

  /**
   * After the listener (re)connected it may have missed the notifications that carry due times:
   * once a claim comes back short of what it asked for, ask when the next job is (see `nextDue`)
   * and wake then — and claim again at once if one is due already (it fell due after the claim
   * was sent; or a limit holds it back, and that claim finds nothing: this asks once per probe).
   */
  private async learnNextDue(): Promise<void> {
    this.probeDue = false;
    try {
      const next = await this.db.jobs.nextDue({ queue: this.o.queue, kinds: this.o.kinds });
      if (next.dueInMs !== null) this.wakeIn(next.dueInMs);
      if (next.dueNow) this.wake();
    } catch (err) {
      this.host.onError(err);
    }
  }

  /**
   * Sleeps until `ms` pass or a wake-up arrives (one that came during the claim counts); with
   * `probed`, until the idle probe finds a due job here or a wake-up arrives.
   */
  private sleep(ms: number, probed?: { fresh: boolean; holdMs?: number }): Promise<void> {
    if (this.woken || this.stopping) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(this.timer);
        this.timer = undefined;
        this.wake_ = undefined;
        this.woken = false;
        if (probed) this.o.probe?.leave(this.o.queue);
        resolve();
      };
      this.wake_ = done;
      if (!probed || !this.o.probe?.join(this.o.queue, () => this.wake(), probed)) {
        this.timer = this.clock.setTimeout(done, Number.isFinite(ms) ? ms : this.idleMs);
      }
    });
  }
}

/** A due time further out than this is left to polling (a day: setTimeout's range is ~24.8 days). */
const MAX_WAKE_IN_MS = 86_400_000;

/**
 * Jobs held ahead are sized to this many claim round trips of work at the recent rate: a claim is
 * then sent with about half of that still waiting, and brings about half. Larger claims spread a
 * claim's fixed cost (round trip, commit) over more jobs; the work held stays a few tens of
 * milliseconds' worth (bench/NOTES.md).
 */
const HOLD_ROUND_TRIPS = 8;

/**
 * The claim's order: priority, then run_at (within one claim, due longest first: `now()` is the
 * statement's), then id (ids are decimal strings of bigints).
 */
function claimOrder(a: ClaimedRow, b: ClaimedRow): number {
  return a.priority - b.priority || b.waited_ms - a.waited_ms || a.id.length - b.id.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}
