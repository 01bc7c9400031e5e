import pg from 'pg';
import { trackResource } from '../lifecycle/resources.js';
import type { Executor } from './executor.js';
import { translateDbError } from './pg-errors.js';

/** The pg Pool type, for options that accept a user's pool. */
export type PgPool = pg.Pool;

// bigint (int8) as string: job ids and fencing tokens can pass 2^53 in a long-lived system.
// timestamptz stays a Date.

/** A pool of connections owned by nightshift (or handed in by the user). */
export interface PoolHandle {
  readonly pool: pg.Pool;
  /** Ends the pool when nightshift created it; leaves a user's pool alone. */
  close(): Promise<void>;
  /** Runs `fn` inside a transaction on one client of the pool. */
  transaction<T>(fn: (client: Executor) => Promise<T>): Promise<T>;
  /** Connections: total, idle, waiting. */
  stats(): { total: number; idle: number; waiting: number; max: number };
  /** How the pool connects (its options), for a dedicated connection to the same place (the listener). */
  clientConfig(): pg.ClientConfig;
}

export interface PoolOptions {
  connectionString?: string;
  pool?: pg.Pool;
  max: number;
  applicationName: string;
  /** `statement_timeout` (ms) on every connection of a pool created here. */
  statementTimeoutMs?: number;
}

/** Creates or wraps the one shared pool of a process. */
export function createPool(options: PoolOptions): PoolHandle {
  const owned = !options.pool;
  const pool =
    options.pool ??
    new pg.Pool({
      connectionString: options.connectionString,
      max: options.max,
      application_name: options.applicationName,
      ...(options.statementTimeoutMs !== undefined ? { statement_timeout: options.statementTimeoutMs } : {}),
      idleTimeoutMillis: 30_000,
      keepAlive: true,
    });
  // An idle client's socket error must not crash the process; the pool drops the client.
  const onError = () => undefined;
  pool.on('error', onError);
  const release = owned ? trackResource('pool', options.applicationName) : () => undefined;
  let closed = false;
  return {
    pool,
    async close() {
      if (closed) return;
      closed = true;
      if (owned) {
        // The error handler stays: a socket can still report an error while the pool ends.
        await pool.end();
        release();
      } else pool.off('error', onError);
    },
    async transaction<T>(fn: (client: Executor) => Promise<T>): Promise<T> {
      const client = await pool.connect().catch((err: unknown) => {
        throw translateDbError(err);
      });
      let broken = false;
      // pg-pool takes its own 'error' listener off a client it hands out: while checked out, a
      // connection the server ends (a fenced transaction past idle_in_transaction_session_timeout,
      // a terminated backend) would otherwise be an unhandled 'error' event that ends the process.
      // The statement in flight fails with the error anyway; here it only marks the client broken.
      const onError = () => {
        broken = true;
      };
      client.on('error', onError);
      try {
        await client.query('BEGIN');
        const result = await fn(client);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        try {
          await client.query('ROLLBACK');
        } catch {
          broken = true;
        }
        throw err;
      } finally {
        client.off('error', onError);
        client.release(broken);
      }
    },
    stats() {
      return { total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount, max: options.max };
    },
    clientConfig() {
      // pg keeps a pool's options on it (not in its types).
      return ((pool as unknown as { options?: pg.ClientConfig }).options ?? {}) as pg.ClientConfig;
    },
  };
}
