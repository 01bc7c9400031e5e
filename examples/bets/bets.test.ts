import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { Database } from '../../src/db/database.js';
import { createPool, type PoolHandle } from '../../src/db/pool.js';
import { LeaseElector } from '../../src/leadership/lease-elector.js';
import type { ConsumerRunner } from '../../src/streams/consumer-runner.js';
import { StreamClient } from '../../src/streams/stream-client.js';
import { EventBus } from '../../src/telemetry/events.js';
import { useTestDatabase } from '../../test/support/db.js';
import { startScript } from '../../test/support/processes.js';
import { describeWithRedis, useRedisServer } from '../../test/support/redis.js';
import { waitFor } from '../../test/support/wait.js';
import { backendConsumer, betOf, createBackendRunner, createBetTables, placeBet } from './backend.js';
import { orderUpdates } from './contract.js';
import { FakeExchange } from './fake-exchange.js';
import { createOperator, operatorConsumer } from './operator.js';

describeWithRedis('seed 004: bets through two streams', () => {
  const db = useTestDatabase('bets');
  db.migrateBeforeAll();
  const redis = useRedisServer();
  let handle: PoolHandle;
  let database: Database;
  let exchange: FakeExchange;
  let exchangeUrl: string;
  const running: { stop(): Promise<unknown> }[] = [];

  beforeAll(async () => {
    await createBetTables(db.sql, db.schema);
    handle = createPool({ connectionString: db.url, max: 4, applicationName: 'bets-example' });
    database = new Database(handle, db.schema);
  });
  afterAll(async () => {
    await handle.close();
  });
  afterEach(async () => {
    for (const r of running.splice(0).reverse()) await r.stop();
    // Each test starts from empty streams.
    const raw = new Redis(redis.server().url);
    await raw.flushall();
    raw.disconnect();
  });

  async function startSystem(options: { operators?: number; maxIntentAgeMs?: number; balances?: Record<string, number> } = {}) {
    exchange = new FakeExchange(options.balances ?? { alice: 100, bob: 1 }, 50);
    exchangeUrl = await exchange.start();
    running.push(exchange);
    const streams = new StreamClient({ redisUrl: redis.server().url });
    running.push(streams);
    const backend = createBackendRunner({ pool: db.sql, schema: db.schema, redisUrl: redis.server().url });
    running.push(backend);
    await backend.start();
    const operators = Array.from({ length: options.operators ?? 0 }, (_, i) => makeOperator(i, options.maxIntentAgeMs));
    for (const o of operators) await o.runner.start();
    return { streams, backend, operators };
  }

  function makeOperator(i: number, maxIntentAgeMs?: number, claimIdleMs?: number): { runner: ConsumerRunner; events: EventBus } {
    const events = new EventBus();
    const runner = createOperator({
      redisUrl: redis.server().url,
      exchangeUrl,
      events,
      ...(maxIntentAgeMs ? { maxIntentAgeMs } : {}),
      ...(claimIdleMs ? { claimIdleMs } : {}),
      leaderLease: (name) => new LeaseElector({ database, name, holder: `operator-${i}`, ttlMs: 2_000 }),
    });
    running.push(runner);
    return { runner, events };
  }

  const terminal = (pool: typeof db.sql, id: string) => async () => {
    const bet = await betOf(pool, db.schema, id);
    return ['filled', 'killed', 'rejected'].includes(bet.status) ? bet : undefined;
  };

  it('a bet is escrowed once, filled or killed by the FOK order, and the status flows back; contract reverts become stable codes', async () => {
    const { streams, operators } = await startSystem({ operators: 2 });
    const filled = await placeBet(db.sql, db.schema, streams, { userId: 'alice', marketId: 'm1', side: 'buy', price: 0.5, size: 10 });
    const killed = await placeBet(db.sql, db.schema, streams, { userId: 'alice', marketId: 'm1', side: 'buy', price: 0.5, size: 80 });
    const poor = await placeBet(db.sql, db.schema, streams, { userId: 'bob', marketId: 'm1', side: 'sell', price: 0.4, size: 10 });

    expect(await waitFor('filled', terminal(db.sql, filled))).toEqual({ status: 'filled', reason: null });
    expect(await waitFor('killed', terminal(db.sql, killed))).toEqual({ status: 'killed', reason: null });
    expect(await waitFor('rejected', terminal(db.sql, poor))).toEqual({ status: 'rejected', reason: 'insufficient_balance' });
    expect(Object.fromEntries(exchange.escrows)).toEqual({ [filled]: 1, [killed]: 1, [poor]: 1 });
    expect(Object.fromEntries(exchange.settled)).toEqual({ [filled]: 'filled', [killed]: 'empty' });
    // Two operator replicas, one elected: only one ever consumed.
    const consumed = operators.map((o) => o.runner.active.length);
    expect(consumed.sort()).toEqual([0, 1]);
  });

  it('an intent older than the age limit (the operator was down) is rejected as intent_expired, never escrowed', async () => {
    const { streams } = await startSystem({ operators: 0 });
    const raw = new Redis(redis.server().url);
    try {
      const orderId = await placeBet(db.sql, db.schema, streams, { userId: 'alice', marketId: 'm1', side: 'buy', price: 0.5, size: 1 });
      // The operator stays down until the intent is older than its limit, by Redis's clock.
      const [entry] = (await raw.xrange('polymarket:order', '-', '+')) as [string, string[]][];
      const written = Number(entry![0].split('-')[0]);
      await waitFor('the intent to age', async () => {
        const [sec, usec] = (await raw.time()) as unknown as [string, string];
        return Number(sec) * 1_000 + Number(usec) / 1_000 - written > 300;
      });
      const operator = makeOperator(0, 300);
      await operator.runner.start();
      expect(await waitFor('rejected', terminal(db.sql, orderId))).toEqual({ status: 'rejected', reason: 'intent_expired' });
      expect(exchange.escrows.size).toBe(0);
    } finally {
      raw.disconnect();
    }
  });

  it('updates that arrive late, twice or out of order never move a bet backwards', async () => {
    const { streams } = await startSystem({ operators: 0 });
    const orderId = await placeBet(db.sql, db.schema, streams, { userId: 'alice', marketId: 'm1', side: 'buy', price: 0.5, size: 1 });
    const replica = createBackendRunner({ pool: db.sql, schema: db.schema, redisUrl: redis.server().url });
    running.push(replica);
    await replica.start();
    const consumers = [backendConsumer(db.sql, db.schema)];
    const allHandled = () =>
      waitFor('every update handled', async () => {
        const g = (await streams.diagnose({ consumers })).streams[0]!.groups[0]!;
        return g.pending === 0 && g.lag === 0;
      });
    // The operator said open, then filled; the backend sees filled first, open late, and both twice.
    // Two replicas share the group, so even the order of application is not the order of publication.
    for (const status of ['filled', 'open', 'open', 'filled'] as const) await streams.publish(orderUpdates, { orderId, status });
    await allHandled();
    expect(await betOf(db.sql, db.schema, orderId)).toEqual({ status: 'filled', reason: null });
    // A terminal status is final.
    await streams.publish(orderUpdates, { orderId, status: 'rejected', reason: 'escrow_failed: late' });
    await allHandled();
    expect(await betOf(db.sql, db.schema, orderId)).toEqual({ status: 'filled', reason: null });
  });

  it('an operator killed after escrow (SIGKILL, a real process) leaves the bet recorded as abandoned, and the next operator releases the escrow (settleEmpty)', async () => {
    const { streams } = await startSystem({ operators: 0 });
    const orderId = await placeBet(db.sql, db.schema, streams, { userId: 'alice', marketId: 'm1', side: 'buy', price: 0.5, size: 10 });
    exchange.hangOrders.add(orderId);
    const common = { REDIS_URL: redis.server().url, DATABASE_URL: db.url, SCHEMA: db.schema, EXCHANGE_URL: exchangeUrl, CLAIM_IDLE_MS: '300' };
    const proc = startScript('examples/bets/operator-process.ts', common);
    try {
      await proc.waitForLine('ready');
      await waitFor('the bet open, escrowed', async () => (await betOf(db.sql, db.schema, orderId)).status === 'open' && exchange.escrows.get(orderId) === 1);
      proc.kill('SIGKILL');
      await proc.exited;
    } finally {
      proc.kill('SIGKILL');
    }
    // Funds locked, the bet open: the diagnosis (what `nightshift streams` and the dashboard show) says so.
    const consumers = [operatorConsumer({ exchangeUrl, claimIdleMs: 300 })];
    const g = await waitFor('abandoned in the diagnosis', async () => {
      const group = (await streams.diagnose({ consumers })).streams[0]!.groups[0]!;
      return group.abandoned === 1 ? group : undefined;
    });
    expect(g.statuses).toContain('abandoned');
    expect(await betOf(db.sql, db.schema, orderId)).toEqual({ status: 'open', reason: null });

    exchange.hangOrders.clear();
    const next = makeOperator(1, undefined, 300);
    await next.runner.start();
    expect(await waitFor('killed', terminal(db.sql, orderId))).toEqual({ status: 'killed', reason: 'operator_abandoned: escrow released (settleEmpty)' });
    expect([...exchange.released]).toEqual([orderId]);
    expect(exchange.escrows.get(orderId)).toBe(1);
    const after = (await streams.diagnose({ consumers })).streams[0]!.groups[0]!;
    expect(after).toMatchObject({ abandoned: 0, started: 0 });
  });

  it('diagnosis tells "operator not running" from "update consumer silent" (seed 004 symptom table)', async () => {
    const { streams } = await startSystem({ operators: 0 });
    await placeBet(db.sql, db.schema, streams, { userId: 'alice', marketId: 'm1', side: 'buy', price: 0.5, size: 1 });
    const consumers = [operatorConsumer({ exchangeUrl }), backendConsumer(db.sql, db.schema)];
    // The backend joins its group with its first read.
    const d = await streams.diagnose({ consumers });
    const byStream = Object.fromEntries(d.streams.map((s) => [s.stream, s]));
    expect(byStream['polymarket:order']!.length).toBe(1);
    expect(byStream['polymarket:order']!.groups[0]).toMatchObject({ group: 'polymarket-operator', status: 'never-started', singleton: true, delivery: 'at-most-once' });
    expect(byStream['polymarket:order']!.groups[0]!.statusText).toContain('consumer never started');
    expect(byStream['polymarket:order-update']!.groups[0]).toMatchObject({ group: 'bets-backend', status: 'ok' });
  });
});
