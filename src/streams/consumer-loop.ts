import { ConsumerStoppedError } from '../errors.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import type { ConsumerScope, InFlightEntry } from './consumer-scope.js';
import { handleEntry, streamFields } from './entry-handler.js';
import { claimIdle, dropUndeliverable, ensureGroup, handBack, isNoGroup, isUnknownCommand, leaveGroup, pruneDeadConsumers, sweepAbandoned, touchInFlight } from './pending-entries.js';
import { errorText, isConnectionError, RedisConnection } from './redis-connection.js';
import { parseReadReply, type StreamEntry } from './stream-entry.js';

/** Settings shared by the consumers of one runner (see ConsumerRunnerOptions for defaults). */
export interface ConsumerLoopSettings {
  redisUrl: string;
  blockMs: number;
  shutdownGraceMs: number;
  connectTimeoutMs: number;
  /** Consumers of other processes idle this long with nothing pending are removed from the group. */
  pruneIdleMs: number;
}

/** What the consumers of one process learn about the server, so a missing XAUTOCLAIM is reported once. */
export interface ServerCapabilities {
  autoclaim: boolean;
  warned: boolean;
}

/**
 * Runs one consumer definition in this process (for a singleton: for one leadership term). It
 * reads new entries with a blocking XREADGROUP on its own connection, only as many as it has free
 * slots, so nothing waits in memory unacknowledged; it takes over stale pending entries; it keeps
 * its in-flight entries fresh; and it stops within a bound, handing unfinished entries back.
 */
export class ConsumerLoop {
  private readonly inFlight = new Map<string, InFlightEntry>();
  private readonly runs = new Set<Promise<void>>();
  private readonly interrupted: InFlightEntry[] = [];
  private readonly stopController = new AbortController();
  private readonly blocking: RedisConnection;
  private slotWaiters: (() => void)[] = [];
  private reading: Promise<void> | undefined;
  private blockingId: string | undefined;
  private cursor = '0-0';
  private lastPrune = 0;
  private lastErrorAt = 0;
  private readonly pending: PeriodicTask;
  private readonly touch: PeriodicTask | undefined;
  private stopped: Promise<void> | undefined;

  constructor(
    private readonly scope: ConsumerScope,
    private readonly settings: ConsumerLoopSettings,
    private readonly server: ServerCapabilities,
  ) {
    const { def } = scope;
    this.blocking = new RedisConnection(settings.redisUrl, `nightshift:${scope.consumer}:read:${def.stream.name}/${def.group}`, scope.events, {
      connectTimeoutMs: settings.connectTimeoutMs,
    });
    this.blocking.redis.on('ready', () => {
      this.blockingId = undefined;
    });
    const onError = (where: string) => (err: unknown) => this.report(where, err);
    this.pending = new PeriodicTask({
      name: `stream pending ${def.stream.name}/${def.group}`,
      intervalMs: Math.max(50, Math.min(def.claimIdleMs / 2, 30_000)),
      task: () => this.pendingPass(),
      onError: onError('reclaim'),
      runFirst: true,
    });
    if (def.delivery === 'at-least-once') {
      this.touch = new PeriodicTask({
        name: `stream touch ${def.stream.name}/${def.group}`,
        intervalMs: Math.max(30, def.claimIdleMs / 3),
        task: () => this.touchPass(),
        onError: onError('touch'),
        jitter: 0,
      });
    }
  }

  /** Entries being handled now. */
  get running(): number {
    return this.inFlight.size;
  }

  /** Starts reading. The group must exist (the runner creates it); a deleted one is recreated. */
  start(): void {
    if (this.reading || this.stopped) return;
    const { def } = this.scope;
    this.blocking.connectInBackground();
    this.reading = this.readLoop();
    void this.pending.start();
    void this.touch?.start();
    this.scope.events.emit({
      type: 'stream.consumer-started',
      ...streamFields(this.scope),
      delivery: def.delivery,
      singleton: def.singleton,
      fencingToken: this.scope.term?.token ?? null,
    });
  }

  /**
   * Stops within a bound: no more reads; in-flight entries get `shutdownGraceMs` to finish, then
   * their handlers are aborted; unfinished at-least-once entries are handed back so a live
   * consumer takes them at once. With `leave`, the consumer leaves the group if it holds nothing.
   * Safe before start and twice.
   */
  stop(reason: string, options: { leave?: boolean; graceMs?: number } = {}): Promise<void> {
    this.stopped ??= this.shutdown(reason, options.leave ?? true, options.graceMs ?? this.settings.shutdownGraceMs);
    return this.stopped;
  }

  private async shutdown(reason: string, leave: boolean, graceMs: number): Promise<void> {
    const { def } = this.scope;
    this.stopController.abort(new ConsumerStoppedError(def.name, reason));
    this.wakeSlots();
    if (this.reading) await this.interruptRead();
    await this.pending.stop();
    if (!(await this.settle(graceMs))) {
      const why = new ConsumerStoppedError(def.name, `${reason}; the entry did not finish within the ${graceMs} ms grace period`);
      for (const rec of this.inFlight.values()) rec.controller.abort(why);
      await this.settle(1_000);
    }
    await this.touch?.stop();
    if (def.delivery === 'at-least-once') {
      const unfinished = [...this.interrupted, ...[...this.inFlight.values()].filter((r) => !r.finished)];
      await handBack(this.scope, unfinished).catch((err: unknown) => this.report('hand back', err));
    }
    if (leave && this.scope.conn.ready) await leaveGroup(this.scope).catch((err: unknown) => this.report('leave group', err));
    await this.blocking.close({ force: true });
    if (this.reading) this.scope.events.emit({ type: 'stream.consumer-stopped', ...streamFields(this.scope), reason });
  }

  private async readLoop(): Promise<void> {
    const { def, consumer } = this.scope;
    const signal = this.stopController.signal;
    let failures = 0;
    let joined = false;
    while (!signal.aborted) {
      try {
        await this.blocking.whenReady(signal);
        if (!joined) {
          // Visible in XINFO CONSUMERS from the start (a read that finds nothing does not create it before Redis 7.2).
          await this.scope.conn.redis.call('XGROUP', 'CREATECONSUMER', def.stream.name, def.group, consumer).catch(() => undefined);
          joined = true;
        }
        await this.whenSlotFree(signal);
        if (signal.aborted) break;
        this.blockingId ??= String(await this.blocking.redis.call('CLIENT', 'ID'));
        const free = def.concurrency - this.inFlight.size;
        const reply = await this.blocking.redis.call('XREADGROUP', 'GROUP', def.group, consumer, 'COUNT', free, 'BLOCK', this.settings.blockMs, 'STREAMS', def.stream.name, '>');
        failures = 0;
        // Dispatched even when stopping: they are delivered to this consumer now, and handled within the grace period.
        for (const entry of parseReadReply(reply)) this.dispatch(entry, 1);
      } catch (err) {
        if (signal.aborted) break;
        if (isNoGroup(err)) {
          // The stream or group was deleted (or lost with a Redis restart): recreate it and read on.
          const recreated = await ensureGroup(this.scope, true).then(
            () => true,
            (e: unknown) => (this.report('recreate group', e), false),
          );
          if (recreated) continue;
        } else {
          this.report('read', err);
        }
        failures++;
        await delay(Math.min(5_000, 100 * 2 ** Math.min(failures, 6)), signal);
      }
    }
  }

  /** Cuts a blocked read short: CLIENT UNBLOCK makes it return empty, losing nothing; failing that, the connection is cut. */
  private async interruptRead(): Promise<void> {
    const reading = this.reading!;
    if (this.blockingId && this.scope.conn.ready) {
      await this.scope.conn.redis.call('CLIENT', 'UNBLOCK', this.blockingId).catch(() => undefined);
    }
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = await Promise.race([reading.then(() => false), new Promise<boolean>((r) => (timer = setTimeout(() => r(true), this.settings.blockMs + 1_000)))]);
    clearTimeout(timer);
    if (gaveUp) {
      // Entries a cut read had already delivered stay pending under this consumer and are taken over later.
      await this.blocking.close({ force: true });
      await reading;
    }
  }

  private dispatch(entry: StreamEntry, deliveries: number): void {
    const rec: InFlightEntry = { entry, deliveries, controller: new AbortController(), finished: false, interrupted: false };
    this.inFlight.set(entry.id, rec);
    const run = handleEntry(this.scope, rec).finally(() => {
      this.runs.delete(run);
      if (this.inFlight.get(entry.id) === rec) this.inFlight.delete(entry.id);
      if (rec.interrupted) this.interrupted.push(rec);
      this.wakeSlots();
    });
    this.runs.add(run);
  }

  /** Takes over stale pending entries (at-least-once) or records abandoned ones (at-most-once); prunes dead consumers. */
  private async pendingPass(): Promise<void> {
    if (!this.scope.conn.ready || this.stopController.signal.aborted) return;
    const { def } = this.scope;
    try {
      if (this.server.autoclaim) {
        if (def.delivery === 'at-least-once') await this.reclaim();
        else {
          for (let i = 0; i < 10; i++) {
            const { cursor } = await sweepAbandoned(this.scope, this.cursor);
            this.cursor = cursor;
            if (cursor === '0-0') break;
          }
        }
      }
      if (Date.now() - this.lastPrune > this.settings.pruneIdleMs / 4) {
        this.lastPrune = Date.now();
        await pruneDeadConsumers(this.scope, this.settings.pruneIdleMs);
      }
    } catch (err) {
      if (isUnknownCommand(err)) {
        // Redis < 6.2: no XAUTOCLAIM. Run on without taking over stale entries (warned once per process).
        this.server.autoclaim = false;
        if (!this.server.warned) {
          this.server.warned = true;
          this.scope.events.emit({ type: 'stream.reclaim-unavailable', ...streamFields(this.scope), error: errorText(err) });
        }
        return;
      }
      if (isNoGroup(err)) {
        await ensureGroup(this.scope, true);
        return;
      }
      throw err;
    }
  }

  private async reclaim(): Promise<void> {
    const { def } = this.scope;
    for (let pass = 0; pass < 10; pass++) {
      const free = def.concurrency - this.inFlight.size;
      if (free <= 0 || this.stopController.signal.aborted) return;
      const { claimed, cursor } = await claimIdle(this.scope, this.cursor, free);
      this.cursor = cursor;
      if (claimed.length > 0) {
        this.scope.events.emit({ type: 'stream.reclaimed', ...streamFields(this.scope), count: claimed.length });
        for (const c of await dropUndeliverable(this.scope, claimed)) this.dispatch(c.entry, c.deliveries);
      }
      if (cursor === '0-0') return;
    }
  }

  private async touchPass(): Promise<void> {
    const ids = [...this.inFlight.values()].filter((r) => !r.finished).map((r) => r.entry.id);
    if (ids.length === 0 || !this.scope.conn.ready) return;
    await touchInFlight(this.scope, ids);
  }

  private whenSlotFree(signal: AbortSignal): Promise<void> {
    if (this.inFlight.size < this.scope.def.concurrency || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => this.slotWaiters.push(resolve));
  }

  private wakeSlots(): void {
    const waiters = this.slotWaiters;
    this.slotWaiters = [];
    for (const w of waiters) w();
  }

  /** Waits until every handler has returned, or `ms` pass. True when all returned. */
  private async settle(ms: number): Promise<boolean> {
    if (this.runs.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    const all = (async () => {
      while (this.runs.size > 0) await Promise.all([...this.runs]);
      return true as const;
    })();
    const done = await Promise.race([all, timeout]);
    clearTimeout(timer);
    return done;
  }

  private report(where: string, err: unknown): void {
    // While Redis is away, the connection-lost event says so once; repeating it per retry is noise.
    if (isConnectionError(err) && (!this.scope.conn.ready || !this.blocking.ready)) return;
    const now = Date.now();
    if (now - this.lastErrorAt < 1_000) return;
    this.lastErrorAt = now;
    this.scope.events.emit({ type: 'stream.error', ...streamFields(this.scope), where, error: errorText(err) });
  }
}

/** Waits `ms`, or less if `signal` aborts. Never rejects. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
