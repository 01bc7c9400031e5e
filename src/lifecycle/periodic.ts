import type { Timer } from './clock.js';
import { BaseService, type ServiceOptions } from './service.js';

/** The options of a {@link PeriodicTask}. */
export interface PeriodicTaskOptions extends ServiceOptions {
  name: string;
  /** Time between the end of one run and the start of the next, in ms (± jitter). */
  intervalMs: number;
  task: () => Promise<unknown>;
  /** Where a run's error goes; the loop carries on. */
  onError: (err: unknown) => void;
  /** Spread of each interval, as a fraction of it (0.2: ±10 %). Default 0.2. */
  jitter?: number;
  /** Run once as soon as it starts, rather than after the first interval. Default false. */
  runFirst?: boolean;
}

/**
 * A service that runs `task` every `intervalMs` (± jitter), never overlapping itself. Stop waits
 * for a run in progress; it may be started again after a stop.
 */
export class PeriodicTask extends BaseService {
  private timer: Timer | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly o: PeriodicTaskOptions) {
    super({ ...o, kind: 'timer', restartable: true });
  }

  /** Runs the task now (unless a run is in progress, which is awaited instead). */
  async runNow(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.o
      .task()
      .then(() => undefined, this.o.onError)
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  protected onStart(): void {
    if (this.o.runFirst) this.tick();
    else this.schedule();
  }

  protected async onStop(): Promise<void> {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  private schedule(): void {
    if (!this.live) return;
    const jitter = this.o.jitter ?? 0.2;
    const delay = this.o.intervalMs * (1 - jitter / 2 + Math.random() * jitter);
    this.timer = this.clock.setTimeout(() => this.tick(), delay);
  }

  private tick(): void {
    void this.runNow().finally(() => this.schedule());
  }
}
