// Seed 004, the bets service (examples/bets) on Redis Streams: a bets-backend process (its
// backend-process.ts) and the singleton polymarket-operator (its operator-process.ts), against the
// fake exchange on loopback. The scripted step: a bet placed while the operator is down; by the
// time it comes up the intent is older than its age limit (MAX_INTENT_AGE_MS), so it is rejected
// as intent_expired and never escrowed. A bet placed after that goes through and is filled.
import { Redis } from 'ioredis';
import { createNightshift } from '../../../src/index.js';
import { StreamClient } from '../../../src/streams/stream-client.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { backendConsumer, betOf, placeBet } from '../../bets/backend.js';
import { orderIntents, orderUpdates } from '../../bets/contract.js';
import { FakeExchange } from '../../bets/fake-exchange.js';
import { operatorConsumer } from '../../bets/operator.js';
import { waitFor } from './fleet.js';
import { guarded, type TourContext, type TourSystem } from './system.js';

const SCHEMA = 'bets';
const MAX_AGE_MS = 1_000;

/** Starts the bets backend (the operator starts during the step). */
export async function startBets(ctx: TourContext, redisUrl: string): Promise<TourSystem> {
  const exchange = new FakeExchange({ alice: 100 }, 50);
  const exchangeUrl = await exchange.start();
  // nightshift's tables hold the operator's leader lease.
  const options = {
    databaseUrl: ctx.databaseUrl,
    schema: SCHEMA,
    redisUrl,
    streams: [orderIntents, orderUpdates],
    consumers: [operatorConsumer({ exchangeUrl, maxIntentAgeMs: MAX_AGE_MS }), backendConsumer(ctx.sql, SCHEMA)],
  };
  const ns = createNightshift({ ...options, logger: silentLogger(), registerProcess: false });
  await ns.migrate();
  await ns.stop();
  const env = { DATABASE_URL: ctx.databaseUrl, SCHEMA, REDIS_URL: redisUrl, EXCHANGE_URL: exchangeUrl, MAX_INTENT_AGE_MS: String(MAX_AGE_MS) };
  await ctx.fleet.start('bets-backend', 'examples/bets/backend-process.ts', env).waitForLine('ready');
  const streams = new StreamClient({ redisUrl, streams: [orderIntents, orderUpdates] });
  const redis = new Redis(redisUrl);
  const terminal = (id: string) => async () => {
    const bet = await betOf(ctx.sql, SCHEMA, id);
    return ['filled', 'killed', 'rejected'].includes(bet.status) ? bet : undefined;
  };

  const play = () =>
    guarded(async () => {
      const lines: string[] = [];
      const stale = await placeBet(ctx.sql, SCHEMA, streams, { userId: 'alice', marketId: 'm1', side: 'buy', price: 0.5, size: 10 });
      lines.push(`bet ${stale.slice(0, 8)}… queued while the operator is down`);
      // Wait until the intent is older than the limit by Redis's clock (the one the operator judges by).
      const [entry] = (await redis.xrange('polymarket:order', '-', '+')) as [string, string[]][];
      const written = Number(entry![0].split('-')[0]);
      await waitFor('the intent to age', async () => {
        const [sec, usec] = (await redis.time()) as unknown as [string, string];
        return Number(sec) * 1_000 + Number(usec) / 1_000 - written > MAX_AGE_MS;
      });
      await ctx.fleet.start('polymarket-operator', 'examples/bets/operator-process.ts', env).waitForLine('ready');
      const expired = await waitFor('the stale bet to be decided', terminal(stale));
      lines.push(`operator up after ${MAX_AGE_MS} ms: ${expired.status} (${expired.reason ?? ''}), escrow calls: ${exchange.escrows.get(stale) ?? 0}`);
      const fresh = await placeBet(ctx.sql, SCHEMA, streams, { userId: 'alice', marketId: 'm1', side: 'buy', price: 0.5, size: 10 });
      const done = await waitFor('the fresh bet to be decided', terminal(fresh));
      lines.push(`a fresh bet: ${done.status}, escrowed ${exchange.escrows.get(fresh) ?? 0} time(s)`);
      const ok = expired.status === 'rejected' && expired.reason === 'intent_expired' && !exchange.escrows.has(stale) && done.status === 'filled';
      return { ok, lines };
    });

  return {
    dashboard: { id: 'bets', title: 'bets (seed 004): two Redis streams, the singleton at-most-once operator', options },
    play,
    stop: async () => {
      redis.disconnect();
      await streams.stop();
      await exchange.stop();
    },
  };
}
