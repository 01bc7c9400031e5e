import pg from 'pg';
import type { Timer } from '../lifecycle/clock.js';
import { BaseService, type ServiceOptions } from '../lifecycle/service.js';
import type { Executor } from './executor.js';
import { quoteIdent } from './identifiers.js';
import { ListenerProof, type ProofState } from './listener-proof.js';

export type { ProofState } from './listener-proof.js';

/** What the listener reports. */
export interface ListenerEvents {
  /** A notification on one of the channels. */
  onNotify(channel: string, payload: string): void;
  /** (Re)connected and listening: callers fetch at once, since notifications may have been missed. */
  onConnected(): void;
  /** The connection was lost (or a health check failed); it reconnects by itself. */
  onLost(error: Error): void;
  /**
   * The proof after a (re)connect settled: the listener heard its own notification (`true`; a late
   * echo counts), or not within the bound, or it could not be sent (`false`, with why).
   */
  onProof?(proven: boolean, reason?: string): void;
}

export interface ListenerOptions extends ServiceOptions {
  connectionString?: string;
  /** A function returning a fresh client config when the user gave a pool instead of a URL. */
  clientConfig?: pg.ClientConfig;
  channels: string[];
  /** How often the connection is probed with `SELECT 1`; a dead or silently cut link is noticed within this. */
  healthCheckMs: number;
  /** Upper bound of the reconnect back-off. */
  maxReconnectDelayMs: number;
  applicationName: string;
  /**
   * Prove after each (re)connect that notifications sent through `via` (the shared pool) reach
   * this connection, waiting `timeoutMs` for the echo, before listening on `channels`. Default: no proof.
   */
  proof?: { via: Executor; timeoutMs: number };
}

/**
 * A dedicated connection that LISTENs for wake-up hints. Notifications are only hints: it
 * reconnects with back-off when the link dies (including a silent cut, found by a periodic probe),
 * and reports every (re)connect so the worker fetches at once.
 *
 * With a proof (see {@link ListenerProof}) it first listens on a channel of its own and proves it;
 * only a proven connection LISTENs on the real channels. Through a transaction-mode pooler the
 * proof fails and the real channels are never LISTENed there — which would register them on a
 * pooled server connection, where every job's notification lands in some other client's
 * transaction or in the pooler's log (`got packet 'A' from server when not linked`).
 */
export class Listener extends BaseService {
  private client: pg.Client | undefined;
  private reconnectTimer: Timer | undefined;
  private healthTimer: Timer | undefined;
  private attempts = 0;
  private connecting: Promise<void> | undefined;
  /** LISTENing on the real channels (after the proof, when there is one). */
  private listening = false;
  private readonly proofer: ListenerProof | undefined;

  constructor(
    private readonly options: ListenerOptions,
    private readonly events: ListenerEvents,
  ) {
    super({ name: options.applicationName, kind: 'listener', restartable: true, logger: options.logger, clock: options.clock });
    const proof = options.proof;
    if (proof) {
      this.proofer = new ListenerProof(proof.via, proof.timeoutMs, (proven, reason) => {
        // A proof is reported once the real channels are listened on, so "proven" means
        // notifications wake this process (and wake-ups report `notify`) from that moment.
        if (proven && this.client) void this.listenChannels(this.client);
        else if (!proven) this.events.onProof?.(false, reason);
      });
    }
  }

  /** Whether the listener holds a live connection listening on its channels right now. */
  get connected(): boolean {
    return this.client !== undefined && this.listening;
  }

  /** Whether notifications were proven to reach this listener since it last connected. */
  get proof(): ProofState {
    return this.proofer?.state ?? { proven: undefined };
  }

  /** Starts listening; resolves after the first attempt (connected or scheduled to retry). */
  protected async onStart(): Promise<void> {
    await this.connect();
  }

  /** Stops listening and closes the connection. */
  protected async onStop(): Promise<void> {
    this.clock.clearTimeout(this.reconnectTimer);
    this.clock.clearTimeout(this.healthTimer);
    this.reconnectTimer = undefined;
    this.healthTimer = undefined;
    this.proofer?.reset();
    this.listening = false;
    // Bounded: a connection attempt or a graceful end on a silently cut link may never finish
    // (found by the model-based test: stop() hung, and the process never exited).
    await within(
      this.connecting?.catch(() => undefined),
      STOP_WAIT_MS,
    );
    const client = this.client;
    this.client = undefined;
    if (client) {
      const ended = await within(
        client.end().then(
          () => true,
          () => true,
        ),
        STOP_WAIT_MS,
      );
      if (!ended) destroySocket(client);
    }
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
    if (!this.live) return;
    const client = new pg.Client({
      ...(this.options.clientConfig ?? {}),
      ...(this.options.connectionString ? { connectionString: this.options.connectionString } : {}),
      application_name: `${this.options.applicationName}:listener`,
      keepAlive: true,
      keepAliveInitialDelayMillis: 5_000,
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('listener connection ended')));
    client.on('notification', (msg) => {
      if (this.proofer && msg.channel === this.proofer.channel) {
        if (this.client === client) this.proofer.heard(msg.payload ?? '');
      } else this.events.onNotify(msg.channel, msg.payload ?? '');
    });
    try {
      await client.connect();
      const channels = this.proofer ? [this.proofer.channel] : this.options.channels;
      for (const channel of channels) await client.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (err) {
      client.removeAllListeners('end');
      await client.end().catch(() => undefined);
      if (this.live) this.events.onLost(err instanceof Error ? err : new Error(String(err)));
      this.scheduleReconnect();
      return;
    }
    if (!this.live) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.attempts = 0;
    this.scheduleProbe(client);
    if (this.proofer) this.proofer.begin();
    else {
      this.listening = true;
      this.events.onConnected();
    }
  }

  /** After the proof: trade the proof's channel for the real ones, then report the (re)connect. */
  private async listenChannels(client: pg.Client): Promise<void> {
    try {
      await client.query(`UNLISTEN ${quoteIdent(this.proofer!.channel)}`);
      for (const channel of this.options.channels) await client.query(`LISTEN ${quoteIdent(channel)}`);
    } catch (err) {
      this.lost(client, err instanceof Error ? err : new Error(String(err)));
      return;
    }
    if (this.client !== client || !this.live) return;
    this.listening = true;
    this.events.onProof?.(true);
    this.events.onConnected();
  }

  /** The next health check of `client`, `healthCheckMs` from now (one at a time, re-armed after each). */
  private scheduleProbe(client: pg.Client): void {
    this.clock.clearTimeout(this.healthTimer);
    this.healthTimer = this.clock.setTimeout(() => this.probe(client), this.options.healthCheckMs, { unref: true });
  }

  private probe(client: pg.Client): void {
    if (this.client !== client) return;
    let settled = false;
    const timer = this.clock.setTimeout(
      () => {
        if (!settled) this.lost(client, new Error('listener health check timed out'));
      },
      Math.max(1_000, this.options.healthCheckMs),
      { unref: true },
    );
    // The next check is due a period after this one was sent, as with an interval.
    this.scheduleProbe(client);
    client.query('SELECT 1').then(
      () => {
        settled = true;
        this.clock.clearTimeout(timer);
        this.proofer?.retryIfUnsent();
      },
      (err: unknown) => {
        settled = true;
        this.clock.clearTimeout(timer);
        this.lost(client, err instanceof Error ? err : new Error(String(err)));
      },
    );
  }

  private lost(client: pg.Client, error: Error): void {
    if (this.client !== client) return;
    this.client = undefined;
    this.listening = false;
    this.proofer?.reset();
    this.clock.clearTimeout(this.healthTimer);
    this.healthTimer = undefined;
    client.removeAllListeners('end');
    // Destroy the socket outright: a silently cut link may never finish a graceful end.
    destroySocket(client);
    client.end().catch(() => undefined);
    if (!this.live) return;
    this.events.onLost(error);
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (!this.live) return;
    const delay = Math.min(this.options.maxReconnectDelayMs, 100 * 2 ** Math.min(this.attempts, 10));
    this.attempts++;
    this.clock.clearTimeout(this.reconnectTimer);
    this.reconnectTimer = this.clock.setTimeout(() => void this.connect(), delay * (0.5 + Math.random() / 2), { unref: true });
  }
}

/** How long stop() waits for a connection attempt or a graceful end before cutting the socket. */
const STOP_WAIT_MS = 2_000;

/** Cuts a client's socket at once (pg keeps it on `connection.stream`). */
function destroySocket(client: pg.Client): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}

/** Waits for `p` at most `ms`; resolves with its value, or undefined when it took longer. */
async function within<T>(p: Promise<T> | undefined, ms: number): Promise<T | undefined> {
  if (!p) return undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
