import pg from 'pg';
import { trackResource } from '../lifecycle/resources.js';
import { quoteIdent } from './identifiers.js';

/** What the listener reports. */
export interface ListenerEvents {
  /** A notification on one of the channels. */
  onNotify(channel: string, payload: string): void;
  /** (Re)connected and listening: callers fetch at once, since notifications may have been missed. */
  onConnected(): void;
  /** The connection was lost (or a health check failed); it reconnects by itself. */
  onLost(error: Error): void;
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
}

/**
 * A dedicated connection that LISTENs for wake-up hints. Notifications are only hints: it
 * reconnects with back-off when the link dies (including a silent cut, found by a periodic probe),
 * and reports every (re)connect so the worker fetches at once.
 */
export class Listener {
  private client: pg.Client | undefined;
  private stopped = true;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private healthTimer: NodeJS.Timeout | undefined;
  private attempts = 0;
  private release: (() => void) | undefined;
  private connecting: Promise<void> | undefined;

  constructor(
    private readonly options: ListenerOptions,
    private readonly events: ListenerEvents,
  ) {}

  /** Whether the listener holds a live, listening connection right now. */
  get connected(): boolean {
    return this.client !== undefined;
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
    this.reconnectTimer = undefined;
    this.healthTimer = undefined;
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
    client.on('notification', (msg) => this.events.onNotify(msg.channel, msg.payload ?? ''));
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
    this.healthTimer = undefined;
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
