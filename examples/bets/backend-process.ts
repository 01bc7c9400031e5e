/**
 * One bets-backend replica as a process (`npm start`'s tour runs it): REDIS_URL, DATABASE_URL,
 * SCHEMA (where bet_orders is). It creates the table if needed, applies the operator's updates
 * through its consumer group, prints `ready`, and drains on SIGTERM.
 */
import { createPool } from '../../src/db/pool.js';
import { createBackendRunner, createBetTables } from './backend.js';

const env = process.env;
const handle = createPool({ connectionString: env.DATABASE_URL, max: 2, applicationName: `bets-backend:${process.pid}` });
await createBetTables(handle.pool, env.SCHEMA!);
const runner = createBackendRunner({ pool: handle.pool, schema: env.SCHEMA!, redisUrl: env.REDIS_URL! });
await runner.start();
process.stdout.write('ready\n');
process.on(
  'SIGTERM',
  () =>
    void runner
      .stop()
      .then(() => handle.close())
      .then(() => process.exit(0)),
);
