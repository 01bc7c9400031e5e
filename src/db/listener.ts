import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { trackResource } from '../lifecycle/resources.js';
import { run, type Executor } from './executor.js';
import { quoteIdent } from './identifiers.js';

/** Payloads of proof notifications start with this; the listener keeps them to itself. */
export const PROOF_PREFIX = 'nightshift-proof:';

/** What the listener reports. */
export interface ListenerEvents {
  /** A notification on one of the channels. */
  onNotify(channel: string, payload: string): void;
  /** (Re)connected and listening: callers fetch at once, since notifications may have been missed. */
  onConnected(): void;
  /** The connection was lost (or a health check failed); it reconnects by itself. */
  onLost(error: Error): void;
  /**
   * The proof after a (re)connect settled: the listener heard its own notification (`true`; also
   * when the echo comes late), or not within the bound or it could not be sent (`false`, with why).
   */
  onProof?(proven: boolean, reason?: string): void;
}

/** How the listener proves that notifications reach it (see {@link Listener}). */
export interface ListenerProof {
  /** One of the listened channels; its listeners must ignore payloads starting with {@link PROOF_PREFIX}. */
  channel: string;
  /** Where the proof NOTIFY is sent from: the shared pool, the path every real notification takes. */
  via: Executor;
  /** How long the echo may take before the proof fails. */
  timeoutMs: number;
}

export interface ListenerOptions {
  connectionString?: string;
  /** A function returning a fresh client config when the user gave a pool instead of a URL. */
  clientConfig?: pg.ClientConfig;
  channels: string[];
  /** How often the connection is probed with `SELECT 1`; a dead or silently cut link is noticed within this. */
  healthCheckMs: number;
  /** Upper bound of the reconnect back-off. */
  maxReconnectDelayMs: number;
  applicationName: string;
  /** Prove the channel after each (re)connect. Default: no proof. */
  proof?: ListenerProof;
}

/** Where the listener's proof stands. */
export interface ProofState {
  /** `true` heard, `false` not heard (or not sent), `undefined` not connected or still waiting. */
  proven: boolean | undefined;
  reason?: string;
}

/**
 * A dedicated connection that LISTENs for wake-up hints. Notifications are only hints: it
 * reconnects with back-off when the link dies (including a silent cut, found by a periodic probe),
 * and reports every (re)connect so the worker fetches at once.
 *
 * A LISTEN can succeed and still hear nothing: through a transaction-mode pooler (PgBouncer) it
 * registers on whichever server connection ran it, which then serves other clients. So after each
 * (re)connect the listener proves its channel: it sends a notification with a unique payload
 * through the pool — not its own connection, whose echo a pooler would deliver within the same
 * transaction — and reports whether it arrived within the bound.
 */
export class Listener {
  private client: pg.Client | undefined;
  private stopped = true;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private healthTimer: NodeJS.Timeout | undefined;
  private attempts = 0;
  private release: (() => void) | undefined;
  private connecting: Promise<void> | undefined;
  private proofState: ProofState = { proven: undefined };
  private proofToken: string | undefined;
  private proofTimer: NodeJS.Timeout | undefined;
  /** The proof notification could not be sent (a database error): try again at the next health check. */
  private proofRetry = false;

  constructor(
    private readonly options: ListenerOptions,
    private readonly events: ListenerEvents,
  ) {}

  /** Whether the listener holds a live, listening connection right now. */
  get connected(): boolean {
    return this.client !== undefined;
  }

  /** Whether notifications were proven to reach this listener since it last connected. */
  get proof(): ProofState {
    return this.proofState;
  }

  /** Starts listening; resolves after the first attempt (connected or scheduled to retry). */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    this.release = trackResource('listener', this.options.applicationName);
    await this.connect();
  }

  /** Stops listening and closes the connection. Safe before start and twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    clearInterval(this.healthTimer);
    clearTimeout(this.proofTimer);
    this.reconnectTimer = undefined;
    this.healthTimer = undefined;
    this.proofTimer = undefined;
    this.proofToken = undefined;
    this.proofState = { proven: undefined };
    await this.connecting?.catch(() => undefined);
    const client = this.client;
    this.client = undefined;
    if (client) await client.end().catch(() => undefined);
    this.release?.();
  }

  /** Kills the current connection as if the network dropped it (used by fault tests and probes). */
  dropConnection(error = new Error('connection dropped')): void {
    const client = this.client;
    if (!client) return;
    this.lost(client, error);
  }

  private connect(): Promise<void> {
    this.connecting = this.doConnect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async doConnect(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({
      ...(this.options.clientConfig ?? {}),
      ...(this.options.connectionString ? { connectionString: this.options.connectionString } : {}),
      application_name: `${this.options.applicationName}:listener`,
      keepAlive: true,
      keepAliveInitialDelayMillis: 5_000,
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('listener connection ended')));
    client.on('notification', (msg) => this.notified(client, msg.channel, msg.payload ?? ''));
    try {
      await client.connect();
      for (const channel of this.options.channels) await client.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      if (!this.stopped) this.events.onLost(err instanceof Error ? err : new Error(String(err)));
      this.scheduleReconnect();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.attempts = 0;
    clearInterval(this.healthTimer);
    this.healthTimer = setInterval(() => this.probe(client), this.options.healthCheckMs);
    this.healthTimer.unref();
    this.events.onConnected();
    this.prove(client);
  }

  private notified(client: pg.Client, channel: string, payload: string): void {
    const proof = this.options.proof;
    if (proof && channel === proof.channel && payload.startsWith(PROOF_PREFIX)) {
      // Ours settles the proof (even late); another process's proof is no business of ours.
      if (payload === this.proofToken && this.client === client && this.proofState.proven !== true) {
        clearTimeout(this.proofTimer);
        this.proofState = { proven: true };
        this.events.onProof?.(true);
      }
      return;
    }
    this.events.onNotify(channel, payload);
  }

  private prove(client: pg.Client): void {
    const proof = this.options.proof;
    if (!proof || this.client !== client) return;
    const token = `${PROOF_PREFIX}${randomUUID()}`;
    this.proofToken = token;
    this.proofState = { proven: undefined };
    this.proofRetry = false;
    clearTimeout(this.proofTimer);
    const current = () => this.client === client && this.proofToken === token;
    run(proof.via, { text: 'SELECT pg_notify($1, $2)' }, [proof.channel, token]).then(
      () => {
        // The echo can arrive before the NOTIFY's own reply: then it is settled already.
        if (!current() || this.proofState.proven !== undefined) return;
        this.proofTimer = setTimeout(() => {
          if (!current() || this.proofState.proven !== undefined) return;
          const reason = `the listener did not hear its own notification within ${proof.timeoutMs} ms (sent through the pool on "${proof.channel}")`;
          this.proofState = { proven: false, reason };
          this.events.onProof?.(false, reason);
        }, proof.timeoutMs);
        this.proofTimer.unref();
      },
      (err: unknown) => {
        if (!current()) return;
        const code = (err as { code?: unknown }).code;
        const reason = `the proof notification could not be sent through the pool (${typeof code === 'string' ? code : 'database error'}); trying again at the next health check`;
        this.proofState = { proven: false, reason };
        this.proofRetry = true;
        this.events.onProof?.(false, reason);
      },
    );
  }

  private probe(client: pg.Client): void {
    let settled = false;
    const timer = setTimeout(() => {
      if (!settled) this.lost(client, new Error('listener health check timed out'));
    }, Math.max(1_000, this.options.healthCheckMs));
    timer.unref();
    client.query('SELECT 1').then(
      () => {
        settled = true;
        clearTimeout(timer);
        if (this.proofRetry) this.prove(client);
      },
      (err: unknown) => {
        settled = true;
        clearTimeout(timer);
        this.lost(client, err instanceof Error ? err : new Error(String(err)));
      },
    );
  }

  private lost(client: pg.Client, error: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    clearInterval(this.healthTimer);
    clearTimeout(this.proofTimer);
    this.healthTimer = undefined;
    this.proofTimer = undefined;
    this.proofToken = undefined;
    this.proofState = { proven: undefined };
    client.removeAllListeners('end');
    // Destroy the socket outright: a silently cut link may never finish a graceful end.
    const socket = (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream;
    socket?.destroy();
    client.end().catch(() => undefined);
    if (this.stopped) return;
    this.events.onLost(error);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    const delay = Math.min(this.options.maxReconnectDelayMs, 100 * 2 ** Math.min(this.attempts, 10));
    this.attempts++;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = setTimeout(() => void this.connect(), delay * (0.5 + Math.random() / 2));
    this.reconnectTimer.unref();
  }
}
