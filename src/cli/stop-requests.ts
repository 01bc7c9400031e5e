/** Called for each request to stop: `nth` is 1 for the first (stop gracefully), 2 and up after. */
export type StopListener = (reason: string, nth: number) => void;

/**
 * Requests to stop a command that runs until stopped (`worker`, `dev`). The binary forwards
 * SIGINT and SIGTERM here; a test or an embedding program calls {@link StopRequests.request}
 * itself. The first request asks for a graceful stop, a second for one at once — each command
 * says what that means for it.
 */
export class StopRequests {
  private readonly listeners = new Set<StopListener>();
  private readonly onFirstListener: (() => void) | undefined;
  private last: string | undefined;
  private count = 0;
  private heard = false;

  /** `onFirstListener` runs when a command first listens: the binary installs its signal handlers then, not for short commands. */
  constructor(options: { onFirstListener?: () => void } = {}) {
    this.onFirstListener = options.onFirstListener;
  }

  /** How many stops were requested so far. */
  get requested(): number {
    return this.count;
  }

  /** Whether a command has listened (it runs until stopped). */
  get listened(): boolean {
    return this.heard;
  }

  /** Asks the running command to stop; `reason` is what it prints (e.g. `SIGTERM`). */
  request(reason: string): void {
    this.count++;
    this.last = reason;
    for (const listener of [...this.listeners]) listener(reason, this.count);
  }

  /**
   * Listens for requests; returns a function that stops listening. A request made before the
   * command listened is not lost: the listener hears it at once (on the next microtask).
   */
  listen(listener: StopListener): () => void {
    this.listeners.add(listener);
    if (!this.heard) {
      this.heard = true;
      this.onFirstListener?.();
    }
    if (this.count > 0) {
      const [reason, nth] = [this.last!, this.count];
      queueMicrotask(() => {
        if (this.listeners.has(listener)) listener(reason, nth);
      });
    }
    return () => this.listeners.delete(listener);
  }
}

/** A command's wait for its stop: `done` resolves with the exit code; `cancel` stops listening (it ended otherwise). */
export interface StopWait {
  done: Promise<number>;
  cancel(): void;
}

/**
 * Waits for a stop request: on the first, runs `stop` and resolves with 0 (1 if it failed); on a
 * second, resolves with 1 at once — the binary then exits without waiting for the first to end.
 */
export function untilStopped(stops: StopRequests, note: (text: string) => void, stop: (reason: string) => Promise<void>): StopWait {
  let off: () => void = () => undefined;
  const done = new Promise<number>((resolve) => {
    const unlisten = stops.listen((reason, nth) => {
      if (nth > 1) {
        off();
        note(`${reason} again: exiting without waiting`);
        return resolve(1);
      }
      stop(reason).then(
        () => resolve(0),
        (err: unknown) => {
          note(`stopping failed: ${err instanceof Error ? err.message : String(err)}`);
          resolve(1);
        },
      );
    });
    off = () => void unlisten();
  });
  return { done, cancel: () => off() };
}
