import { randomBytes, randomUUID } from 'node:crypto';
import { run, type Executor } from './executor.js';

/** Where a listener's proof stands. */
export interface ProofState {
  /** `true` heard, `false` not heard in time (or not sent), `undefined` not connected or still waiting. */
  proven: boolean | undefined;
  reason?: string;
}

/**
 * One listener's proof that notifications sent through the pool reach its connection. A LISTEN
 * can succeed and hear nothing: through a transaction-mode pooler (PgBouncer) it registers on
 * whichever server connection ran it, which then serves other clients' transactions. The proof
 * is a NOTIFY with a fresh token on a channel of this listener alone — sent through the pool,
 * the path every real notification takes (an echo on the listener's own connection would come
 * back inside the same transaction even through a pooler) — and nobody else listens to that
 * channel, so the proof wakes no worker anywhere.
 */
export class ListenerProof {
  /** The proof's channel, unique to this listener (short: channel names stop at 63 bytes). */
  readonly channel = `nightshift_proof_${randomBytes(8).toString('hex')}`;
  private token: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private resend = false;
  private current: ProofState = { proven: undefined };

  constructor(
    private readonly via: Executor,
    private readonly timeoutMs: number,
    private readonly settled: (proven: boolean, reason?: string) => void,
  ) {}

  /** The state of the proof since the connection came up. */
  get state(): ProofState {
    return this.current;
  }

  /** Sends a new proof (a NOTIFY with a fresh token) and arms its deadline once it is sent. */
  begin(): void {
    this.reset();
    const token = randomUUID();
    this.token = token;
    run(this.via, { text: 'SELECT pg_notify($1, $2)' }, [this.channel, token]).then(
      () => {
        // The echo can arrive before the NOTIFY's own reply: then it is settled already.
        if (this.token !== token || this.current.proven !== undefined) return;
        this.timer = setTimeout(() => {
          if (this.token !== token || this.current.proven !== undefined) return;
          this.fail(`the listener did not hear its own notification, sent through the pool, within ${this.timeoutMs} ms`);
        }, this.timeoutMs);
        this.timer.unref();
      },
      (err: unknown) => {
        if (this.token !== token) return;
        // The driver's code (a SQLSTATE, ECONNREFUSED…), never the message.
        const { sqlState, code } = err as { sqlState?: unknown; code?: unknown };
        const why = typeof sqlState === 'string' ? sqlState : typeof code === 'string' ? code : 'database error';
        this.resend = true;
        this.fail(`the proof notification could not be sent through the pool (${why}); trying again at the next health check`);
      },
    );
  }

  /** A notification on {@link channel} arrived; settles the proof when it carries the current token (late echoes count). */
  heard(payload: string): void {
    if (payload !== this.token || this.current.proven === true) return;
    clearTimeout(this.timer);
    this.current = { proven: true };
    this.settled(true);
  }

  /** At a health check: sends the proof again if it could not be sent before. */
  retryIfUnsent(): void {
    if (this.resend) this.begin();
  }

  /** Forgets the current proof (the connection is gone, or the listener stopped). */
  reset(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.token = undefined;
    this.resend = false;
    this.current = { proven: undefined };
  }

  private fail(reason: string): void {
    this.current = { proven: false, reason };
    this.settled(false, reason);
  }
}
