import { StoppedError } from '../errors.js';
import { silentLogger, type Logger } from '../telemetry/logger.js';
import { systemClock, type Clock } from './clock.js';
import { trackResource } from './resources.js';

/**
 * A long-lived part of a process (a worker, a listener, an elector, a ticker, a server…): one
 * shape for all of them, so a host can hold an ordered list and tests can stop whatever they
 * started. `start` resolves once the part is running; `stop` once it has let go of everything.
 */
export interface Service {
  /** What it is, for logs and the resource registry (`liveResources()`). */
  readonly name: string;
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Where a service is in its life: see {@link BaseService}. */
export type ServiceState = 'idle' | 'starting' | 'running' | 'stopping' | 'stopped';

/** What every service may be given: where it logs, and where it reads time and sets timers. */
export interface ServiceOptions {
  /** Default: silent. */
  logger?: Logger;
  /** Default: {@link systemClock}. Tests pass a clock they move by hand. */
  clock?: Clock;
}

let silent: Logger | undefined;

/**
 * The one start/stop state machine of nightshift (River's `startstop`): a subclass writes
 * `onStart` and `onStop`, and the base gives every service the same rules:
 *
 * | call      | idle                 | starting            | running  | stopping         | stopped     |
 * | --------- | -------------------- | ------------------- | -------- | ---------------- | ----------- |
 * | `start()` | runs `onStart`       | the same promise    | no-op    | (see restartable) | NS_STOPPED  |
 * | `stop()`  | no-op (→ stopped)    | waits, then stops   | `onStop` | the same promise | no-op       |
 *
 * - stop is safe before start and twice; start twice is safe.
 * - a start that fails stops what it started part-way (`onStop`, which must therefore cope with a
 *   half-done `onStart`), goes back to `idle` and throws; `start` may be tried again, `stop` is a no-op.
 * - a restartable service (a periodic task, a ticker, a server) goes back to `idle` after stop and
 *   may start again (a start during a stop waits for the stop); any other refuses with NS_STOPPED.
 * - while running it is listed by `liveResources()`, so a test that leaves it running fails.
 */
export abstract class BaseService implements Service {
  readonly name: string;
  protected readonly clock: Clock;
  protected readonly logger: Logger;
  readonly #kind: string;
  readonly #restartable: boolean;
  #state: ServiceState = 'idle';
  #starting: Promise<void> | undefined;
  #stopping: Promise<void> | undefined;
  #stopAsked = false;
  #untrack: (() => void) | undefined;

  protected constructor(settings: ServiceOptions & { name: string; kind: string; restartable?: boolean }) {
    this.name = settings.name;
    this.#kind = settings.kind;
    this.#restartable = settings.restartable ?? false;
    this.clock = settings.clock ?? systemClock;
    this.logger = settings.logger ?? (silent ??= silentLogger());
  }

  /** Where the service is in its life. */
  get state(): ServiceState {
    return this.#state;
  }

  /**
   * Starting or running, and not asked to stop: what loops and callbacks check before each step
   * (true from the moment `onStart` is called, so a start may begin its loops).
   */
  protected get live(): boolean {
    return !this.#stopAsked && (this.#state === 'starting' || this.#state === 'running');
  }

  /** Starts the service (see the class's table); resolves once it runs. */
  start(): Promise<void> {
    switch (this.#state) {
      case 'running':
        return Promise.resolve();
      case 'starting':
        return this.#starting!;
      case 'idle':
        this.#starting = this.#runStart();
        return this.#starting;
      default:
        if (!this.#restartable) return Promise.reject(new StoppedError(`start ${this.name}`));
        return (this.#stopping ?? Promise.resolve()).then(() => this.start());
    }
  }

  /** Stops the service (see the class's table); resolves once it has let go of everything. */
  stop(): Promise<void> {
    if (this.#state === 'idle') {
      if (!this.#restartable) this.#state = 'stopped';
      return Promise.resolve();
    }
    if (this.#state === 'stopped') return Promise.resolve();
    this.#stopAsked = true;
    this.#stopping ??= this.#runStop();
    return this.#stopping;
  }

  /** Brings the service up; may throw (then `onStop` undoes what it did). */
  protected abstract onStart(): Promise<void> | void;

  /** Lets go of everything `onStart` took: also after a start that failed part-way. */
  protected abstract onStop(): Promise<void> | void;

  async #runStart(): Promise<void> {
    this.#state = 'starting';
    this.#stopAsked = false;
    this.#untrack = trackResource(this.#kind, this.name);
    try {
      await this.onStart();
    } catch (err) {
      try {
        await this.onStop();
      } catch (cleanup) {
        this.logger.warn({ err: cleanup, service: this.name }, 'stopping what a failed start began failed too');
      }
      this.#release();
      this.#state = 'idle';
      this.#starting = undefined;
      throw err;
    }
    this.#starting = undefined;
    this.#state = 'running';
  }

  async #runStop(): Promise<void> {
    // A start in progress settles first; one that failed has stopped what it began. (No await
    // otherwise: a running service is `stopping` before stop() returns, so a start right after
    // it waits for the stop.)
    if (this.#state === 'starting') await this.#starting?.catch(() => undefined);
    if (this.#state !== 'running') {
      if (this.#state === 'idle' && !this.#restartable) this.#state = 'stopped';
      this.#stopping = undefined;
      return;
    }
    this.#state = 'stopping';
    try {
      await this.onStop();
    } finally {
      this.#release();
      this.#state = this.#restartable ? 'idle' : 'stopped';
      this.#stopping = undefined;
    }
  }

  #release(): void {
    this.#untrack?.();
    this.#untrack = undefined;
  }
}

/**
 * Services started one after another in the order given and stopped in reverse. A start that
 * fails part-way stops what it had started (the failed one included: its stop is a no-op), in
 * reverse, and throws the start's error. Stop goes on past a part that fails to stop and throws
 * the first such error at the end, so one broken part never keeps the others running.
 */
export class ServiceGroup extends BaseService {
  private started: Service[] = [];

  constructor(
    name: string,
    private readonly services: readonly Service[],
    options: ServiceOptions = {},
  ) {
    super({ ...options, name, kind: 'services' });
  }

  /** The parts, in start order. */
  get parts(): readonly Service[] {
    return this.services;
  }

  protected async onStart(): Promise<void> {
    for (const s of this.services) {
      this.started.push(s);
      await s.start();
    }
  }

  protected async onStop(): Promise<void> {
    const parts = this.started.reverse();
    this.started = [];
    let first: { err: unknown } | undefined;
    for (const s of parts) {
      try {
        await s.stop();
      } catch (err) {
        first ??= { err };
        this.logger.error({ err, service: s.name }, 'a service failed to stop; stopping the others');
      }
    }
    if (first) throw first.err;
  }
}
