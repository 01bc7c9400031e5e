import net from 'node:net';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { Listener, type ListenerEvents } from '../../src/db/listener.js';
import { freePort } from '../../src/dev/embedded-postgres.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

// The listener's proof on a direct connection (where notifications do arrive), and when the proof
// notification itself cannot be sent.
const t = useTestDatabase('lproof');

describe('Listener proof', () => {
  const cleanup: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  function recorder() {
    const log = { notified: [] as { channel: string; payload: string }[], proofs: [] as { proven: boolean; reason?: string }[], connected: 0, order: [] as string[] };
    const events: ListenerEvents = {
      onNotify: (channel, payload) => log.notified.push({ channel, payload }),
      onConnected: () => {
        log.connected++;
        log.order.push('connected');
      },
      onLost: () => undefined,
      onProof: (proven, reason) => {
        log.proofs.push({ proven, ...(reason ? { reason } : {}) });
        log.order.push(`proof:${proven}`);
      },
    };
    return { log, events };
  }

  function listener(via: pg.Pool, events: ListenerEvents, healthCheckMs = 60_000) {
    const channel = `${t.schema}:control`;
    const l = new Listener({ connectionString: t.url, channels: [channel], healthCheckMs, maxReconnectDelayMs: 1_000, applicationName: 'proof-test', proof: { via, timeoutMs: 5_000 } }, events);
    cleanup.push(() => l.stop());
    return { l, channel };
  }

  it('proves its connection through the pool first, then listens on its channels', async () => {
    const pool = new pg.Pool({ connectionString: t.url, max: 2 });
    cleanup.push(() => pool.end());
    const { log, events } = recorder();
    const { l, channel } = listener(pool, events);
    expect(l.proof).toEqual({ proven: undefined });
    await l.start();
    await waitFor('the listener to be listening', () => l.connected);
    expect(log.order).toEqual(['proof:true', 'connected']);
    expect(l.proof).toEqual({ proven: true });
    await pool.query('SELECT pg_notify($1, $2)', [channel, 'cancel:42']);
    await waitFor('the notification', () => log.notified.length > 0);
    // The proof's own notification was not passed on: only the real one.
    expect(log.notified).toEqual([{ channel, payload: 'cancel:42' }]);
  });

  it('reports a proof it cannot send, and sends it again at the next health check once it can', async () => {
    // The pool's address has nothing behind it at first; then a forwarder to PostgreSQL opens there.
    const port = await freePort();
    const pool = new pg.Pool({ connectionString: t.url.replace(/@[^/]+\//, `@127.0.0.1:${port}/`), max: 1, connectionTimeoutMillis: 2_000 });
    const target = new URL(t.url);
    const forwarder = net.createServer((client) => {
      const upstream = net.connect(Number(target.port), target.hostname);
      client.pipe(upstream).pipe(client);
      client.on('error', () => upstream.destroy());
      upstream.on('error', () => client.destroy());
    });
    // Runs after the listener's stop (cleanups run in reverse): the pool, then the forwarder.
    cleanup.push(async () => {
      await pool.end();
      await new Promise((resolve) => (forwarder.listening ? forwarder.close(resolve) : resolve(undefined)));
    });
    const { log, events } = recorder();
    const { l } = listener(pool, events, 200);
    await l.start();
    await waitFor('the failed proof', () => log.proofs.length > 0);
    expect(log.proofs[0]!.proven).toBe(false);
    expect(log.proofs[0]!.reason).toMatch(/could not be sent through the pool \(ECONNREFUSED\); trying again at the next health check/);
    expect(l.proof.proven).toBe(false);
    expect(l.connected).toBe(false);
    await new Promise<void>((resolve) => forwarder.listen(port, '127.0.0.1', resolve));
    await waitFor('the proof to succeed on a later health check, and the listener to listen', () => l.connected);
    expect(log.proofs.at(-1)).toEqual({ proven: true });
    expect(log.order.at(-1)).toBe('connected');
    expect(log.connected).toBe(1);
  });
});
