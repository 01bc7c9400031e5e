/**
 * Orders the starts a worker records before their handlers run — at-most-once jobs, and suspects:
 * jobs whose lease was lost with no start recorded UNSTARTED_RESCUES times (the claim's
 * `start_first`, SUSPECT in jobs-run.ts), because a handler that kills its process at once leaves
 * no start otherwise. A recorded start makes a crash charge the attempt (at-least-once) or abandon
 * the job (at-most-once), so it must not be recorded for a job whose handler was then never called
 * because a suspect beside it took the process down in that same moment:
 *
 * - a suspect waits for the suspects before it, then until every start recorded so far has had
 *   its handler called; from then its window is open — its own start is recorded alone — until
 *   its handler has run MARK_DELAY_MS or returned (the caller says when, with the pass);
 * - any other recorded start waits while a suspect's window is open, and holds its pass until its
 *   handler has been called.
 *
 * Suspects are rare (a job lost unstarted three times): without one, nothing waits.
 */
export class StartGate {
  /** Recorded starts let through whose handlers have not been called yet. */
  private pending = 0;
  private idle: (() => void)[] = [];
  /** The open suspect window, if any. */
  private window: Promise<void> | undefined;
  /** Ends when the last suspect queued so far has closed its window. */
  private chain: Promise<void> = Promise.resolve();

  /** For a start that is not a suspect's: waits while a suspect's window is open; call the pass once the handler was called (or will not be). */
  async shared(): Promise<() => void> {
    while (this.window) await this.window;
    this.pending++;
    return once(() => {
      this.pending--;
      if (this.pending === 0) for (const f of this.idle.splice(0)) f();
    });
  }

  /** For a suspect's start: waits for its turn (see the class); call the pass to close its window. */
  async exclusive(): Promise<() => void> {
    const prev = this.chain;
    let close!: () => void;
    const done = new Promise<void>((r) => (close = r));
    this.chain = done;
    await prev;
    this.window = done;
    void done.then(() => {
      if (this.window === done) this.window = undefined;
    });
    while (this.pending > 0) await new Promise<void>((r) => this.idle.push(r));
    return once(close);
  }
}

function once(f: () => void): () => void {
  let called = false;
  return () => {
    if (called) return;
    called = true;
    f();
  };
}
