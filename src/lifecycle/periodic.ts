import { trackResource } from './resources.js';

/**
 * A service that runs `task` every `intervalMs` (± jitter), never overlapping itself. `start` and
 * `stop` follow the shared lifecycle: stop is safe before start and twice, and waits for a run in
 * progress. Errors go to `onError` and the loop carries on.
 */
export class PeriodicTask {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private started = false;
  private release: (() => void) | undefined;

  constructor(
    private readonly name: string,
    private readonly intervalMs: number,
    private readonly task: () => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
    private readonly jitter = 0.2,
  ) {}

  start(options: { runNow?: boolean } = {}): void {
    if (this.started) return;
    this.started = true;
    this.release = trackResource('timer', this.name);
    if (options.runNow) this.tick();
    else this.schedule();
  }

  /** Runs the task now (unless a run is in progress, which is awaited instead). */
  async runNow(): Promise<void> {
    if (this.running) return this.running;
    this.running = this.task()
      .then(() => undefined, this.onError)
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    this.release?.();
  }

  private schedule(): void {
    if (!this.started) return;
    const delay = this.intervalMs * (1 - this.jitter / 2 + Math.random() * this.jitter);
    this.timer = setTimeout(() => this.tick(), delay);
  }

  private tick(): void {
    void this.runNow().finally(() => this.schedule());
  }
}
