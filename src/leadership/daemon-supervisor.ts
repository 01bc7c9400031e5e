import type { Database } from '../db/database.js';
import type { Executor } from '../db/executor.js';
import { FencedError, LeadershipLostError, NightshiftError } from '../errors.js';
import { describeError } from '../jobs/error-text.js';
import { sleep, type Clock, type Timer } from '../lifecycle/clock.js';
import { BaseService } from '../lifecycle/service.js';
import type { EventBus } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import type { DaemonContext, DaemonDefinition } from './define-daemon.js';
import type { LeaderTerm } from './leader-lease.js';
import { LeaseElector } from './lease-elector.js';

/** Settings the runner hands each supervisor. */
export interface SupervisorSettings {
  database: Database;
  holder: string;
  events: EventBus;
  logger: Logger;
  ttlMs: number;
  retryMs: number | undefined;
  restart: { initialMs: number; maxMs: number };
  /** Log a failure's message and stack (`logErrorMessages`); otherwise only its name and code. */
  errorMessages: boolean;
  /** On stop, how long a run may take to return after its signal aborted, in ms. */
  stopTimeoutMs: number;
  clock: Clock;
}

/** What a supervisor reports about its daemon. */
export interface DaemonStatus {
  name: string;
  /** The lease the daemon is elected under. */
  leaseName: string;
  /** Whether this process holds the daemon's lease now. */
  leader: boolean;
  /** The current term's fencing token, when leader. */
  token: string | undefined;
  /** Whether `run` is executing in this process now. */
  running: boolean;
  /** How many times `run` failed (threw, or a loop returned while still leader) in this process. */
  failures: number;
  /** The last failure's message. */
  lastError: string | undefined;
}

/** The lease name of a daemon: `daemon:<name>`. */
export function daemonLeaseName(name: string): string {
  return `daemon:${name}`;
}

/**
 * Runs one daemon under its own lease elector: starts `run` when this process is elected, aborts it
 * when the term ends, restarts it with back-off when it fails while the term lasts, and never lets
 * two runs of the daemon overlap in this process (a new term waits for the last run to return).
 */
export class DaemonSupervisor extends BaseService {
  readonly elector: LeaseElector;
  readonly leaseName: string;
  private readonly shutdown = new AbortController();
  private runs: Promise<void> = Promise.resolve();
  private running = false;
  private failures = 0;
  private lastError: string | undefined;
  private unsubscribe: () => void;

  constructor(
    readonly daemon: DaemonDefinition,
    private readonly s: SupervisorSettings,
  ) {
    super({ name: daemonLeaseName(daemon.name), kind: 'daemon', logger: s.logger, clock: s.clock });
    this.leaseName = daemonLeaseName(daemon.name);
    this.elector = new LeaseElector({
      database: s.database,
      name: this.leaseName,
      holder: s.holder,
      ttlMs: daemon.ttlMs ?? s.ttlMs,
      ...(s.retryMs !== undefined ? { retryMs: s.retryMs } : {}),
      events: s.events,
      logger: s.logger,
      clock: s.clock,
    });
    this.unsubscribe = this.elector.onChange((term) => {
      if (!term) return;
      if (this.running) {
        // Only a run that ignores its aborted signal gets here: the new term's run waits for it.
        this.s.logger.warn({ daemon: daemon.name, fencingToken: term.token }, 'elected again while the last run has not returned; the new run waits for it');
      }
      this.runs = this.runs.then(() => this.runTerm(term));
    });
  }

  /** Starts campaigning for the daemon's lease. */
  protected async onStart(): Promise<void> {
    await this.elector.start();
  }

  /**
   * Aborts a run in progress, waits for it at most `stopTimeoutMs`, then stops the elector. The
   * lease is released only when the run returned in time; otherwise it is left to expire, so a
   * successor starts no sooner than the lease would have run out anyway.
   */
  protected async onStop(): Promise<void> {
    const timeoutMs = this.s.stopTimeoutMs;
    this.shutdown.abort(new NightshiftError('NS_SHUTDOWN', `daemon "${this.daemon.name}" stopping: the process is shutting down`));
    let timer: Timer | undefined;
    const finished = await Promise.race([this.runs.then(() => true), new Promise<false>((resolve) => (timer = this.clock.setTimeout(() => resolve(false), timeoutMs)))]);
    this.clock.clearTimeout(timer);
    if (!finished) {
      this.s.logger.warn({ daemon: this.daemon.name, timeoutMs }, 'daemon run did not return after its signal aborted; leaving its lease to expire');
    }
    this.unsubscribe();
    await this.elector.stop({ release: finished });
  }

  /** The daemon's state in this process. */
  status(): DaemonStatus {
    const term = this.elector.term;
    return {
      name: this.daemon.name,
      leaseName: this.leaseName,
      leader: term !== undefined,
      token: term?.token,
      running: this.running,
      failures: this.failures,
      lastError: this.lastError,
    };
  }

  private async runTerm(term: LeaderTerm): Promise<void> {
    const signal = AbortSignal.any([term.signal, this.shutdown.signal]);
    if (signal.aborted) return;
    const ctx = this.context(term, signal);
    let consecutive = 0;
    // term.held() before every run: a process frozen past its lease (SIGSTOP, a long GC pause)
    // wakes with both the run's delay and the term's deadline expired, and Node gives no order
    // between the two timers; without this check the run would go once more under a lost term
    // (issue 11, bug 6).
    while (!signal.aborted && term.held()) {
      const startedAt = this.clock.monotonic();
      let failure: unknown;
      this.running = true;
      try {
        await this.daemon.run(ctx);
        if (this.daemon.everyMs === undefined && !signal.aborted) {
          failure = new Error('run returned while this process is still the leader (a daemon without everyMs should loop until ctx.signal aborts)');
        }
      } catch (err) {
        // An error on the way out after the signal aborted is how a run stops, not a failure.
        if (!signal.aborted) failure = err;
      } finally {
        this.running = false;
      }
      if (signal.aborted) return;
      const ranMs = this.clock.monotonic() - startedAt;
      let waitMs: number;
      if (failure === undefined) {
        consecutive = 0;
        waitMs = Math.max(0, (this.daemon.everyMs ?? 0) - ranMs);
      } else {
        // A run that lasted longer than the longest back-off counts as a fresh start.
        consecutive = ranMs >= this.s.restart.maxMs ? 1 : consecutive + 1;
        const backoff = Math.min(this.s.restart.maxMs, this.s.restart.initialMs * 2 ** (consecutive - 1)) * (0.8 + Math.random() * 0.4);
        waitMs = Math.max(backoff, (this.daemon.everyMs ?? 0) - ranMs);
        this.reportFailure(term, failure, waitMs);
        // A refused write means the term is over in the database: have the elector find out now.
        if (failure instanceof FencedError || (failure as { code?: unknown } | null)?.code === 'NS_FENCED') this.elector.recheck();
      }
      await sleep(this.clock, waitMs, signal);
    }
  }

  private reportFailure(term: LeaderTerm, err: unknown, restartInMs: number): void {
    this.failures++;
    const message = err instanceof Error ? err.message : String(err);
    this.lastError = message;
    // `fencingToken`, not `token`: the default logger redacts any field named token. The message
    // and stack only with `logErrorMessages`, as for jobs: the daemon's code may have put anything
    // it had in hand into them (the event carries the message for in-process listeners).
    const error = this.s.errorMessages ? loggableError(err) : { name: errorName(err), ...errorCode(err) };
    this.s.logger.error({ error, daemon: this.daemon.name, fencingToken: term.token, restartInMs: Math.round(restartInMs) }, 'daemon run failed; restarting');
    this.s.events.emit({ type: 'daemon.failed', name: this.daemon.name, token: term.token, error: message, restartInMs: Math.round(restartInMs) });
  }

  private context(term: LeaderTerm, signal: AbortSignal): DaemonContext {
    const { database } = this.s;
    const leaseName = this.leaseName;
    const fence = (tx: Parameters<DaemonContext['fence']>[0]) => database.leases.assert({ tx, name: leaseName, token: term.token });
    return Object.freeze({
      name: this.daemon.name,
      leaseName,
      fencingToken: term.token,
      signal,
      log: this.s.logger.child({ daemon: this.daemon.name, fencingToken: term.token }),
      db: guardedExecutor(database.executor, term, leaseName),
      fence,
      transaction: <T>(fn: (tx: Parameters<DaemonContext['fence']>[0]) => Promise<T>) =>
        database.transaction(async (tx) => {
          await fence(tx);
          return fn(tx);
        }),
    });
  }
}

/**
 * The pool as a daemon sees it: every query first checks that the term still holds by this
 * process's clock, and refuses (LeadershipLostError) once it does not, so a run that wakes from a
 * freeze writes nothing more through `ctx.db`. A query sent just before the term ran out can still
 * land after a successor took over: only writes fenced by the token (`ctx.transaction`,
 * `ctx.fence`, `assert_lease`) are refused by the database itself (docs/leadership.md).
 */
function guardedExecutor(pool: Executor, term: LeaderTerm, leaseName: string): Executor {
  const check = () => {
    if (!term.held()) throw new LeadershipLostError(leaseName, term.token, 'expired');
  };
  return {
    query: ((...args: Parameters<Executor['query']>) => {
      check();
      return pool.query(...args);
    }) as Executor['query'],
  };
}

function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}

function errorCode(err: unknown): { code?: string } {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? { code: code.slice(0, 100) } : {};
}

/** Message and stack cleaned as they are for storage (no `data:` URLs, bounded). */
function loggableError(err: unknown): Record<string, unknown> {
  return { name: errorName(err), ...describeError(err) };
}
