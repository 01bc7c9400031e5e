/**
 * One polymarket-operator process, for the test that kills it for real inside an intent's handler:
 * REDIS_URL, DATABASE_URL, SCHEMA (its lease rows), EXCHANGE_URL, CLAIM_IDLE_MS, MAX_INTENT_AGE_MS
 * (default 300 s). Prints `ready`. `npm start`'s tour runs it too.
 */
import { Database } from '../../src/db/database.js';
import { createPool } from '../../src/db/pool.js';
import { LeaseElector } from '../../src/leadership/lease-elector.js';
import { createOperator } from './operator.js';

const env = process.env;
const handle = createPool({ connectionString: env.DATABASE_URL, max: 2, applicationName: `bets-operator:${process.pid}` });
const database = new Database(handle, env.SCHEMA!);
const operator = createOperator({
  redisUrl: env.REDIS_URL!,
  exchangeUrl: env.EXCHANGE_URL!,
  claimIdleMs: Number(env.CLAIM_IDLE_MS ?? 60_000),
  ...(env.MAX_INTENT_AGE_MS ? { maxIntentAgeMs: Number(env.MAX_INTENT_AGE_MS) } : {}),
  leaderLease: (name) => new LeaseElector({ database, name, holder: `operator-${process.pid}`, ttlMs: 1_000 }),
});
await operator.start();
process.stdout.write('ready\n');
process.on(
  'SIGTERM',
  () =>
    void operator
      .stop()
      .then(() => handle.close())
      .then(() => process.exit(0)),
);
