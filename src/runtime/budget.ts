import type { Database } from '../db/database.js';
import type { PgPool } from '../db/pool.js';
import { BudgetExceededError } from '../errors.js';

/** The connection budget of a process and a fleet against the server's limit. */
export interface BudgetReport {
  perProcess: { pool: number; listener: number; total: number };
  replicas: number;
  fleet: number;
  server: { maxConnections: number; reserved: number; available: number; inUse: number; version: string };
  /** Connections left for everything else (other apps, admin sessions, migrations). */
  headroom: number;
  ok: boolean;
}

/**
 * What one process needs (its shared pool plus the listener's dedicated connection) and what
 * `replicas` processes need, against `max_connections` minus the reserved slots (seed 003: one
 * shared pool with an explicit budget).
 */
export async function connectionBudget(db: Database, o: { pool: number; listener: boolean; replicas: number }): Promise<BudgetReport> {
  const server = await db.serverConnections();
  const listener = o.listener ? 1 : 0;
  const total = o.pool + listener;
  const fleet = total * o.replicas;
  const available = server.maxConnections - server.reserved;
  return {
    perProcess: { pool: o.pool, listener, total },
    replicas: o.replicas,
    fleet,
    server: { ...server, available },
    headroom: available - fleet,
    ok: fleet <= available,
  };
}

/**
 * Connections in this process's shared pool: the size of a pool handed in (`pool.options.max`,
 * pg's default 10 when unset), else `maxConnections` for the pool nightshift creates.
 */
export function poolSize(o: { pool?: PgPool | undefined; maxConnections: number }): number {
  if (!o.pool) return o.maxConnections;
  const max = (o.pool as unknown as { options?: { max?: unknown } }).options?.max;
  return typeof max === 'number' && Number.isInteger(max) && max > 0 ? max : 10;
}

/** Fails closed when the configured fleet would exceed the server's connections. */
export async function assertBudget(db: Database, o: { pool: number; listener: boolean; replicas: number; maxPerProcess?: number }): Promise<BudgetReport> {
  const report = await connectionBudget(db, o);
  if (o.maxPerProcess !== undefined && report.perProcess.total > o.maxPerProcess) {
    throw new BudgetExceededError(`this process needs ${report.perProcess.total} connections (pool ${o.pool} + listener ${report.perProcess.listener}), over its budget of ${o.maxPerProcess}`);
  }
  if (!report.ok) {
    throw new BudgetExceededError(
      `${o.replicas} replicas × ${report.perProcess.total} connections = ${report.fleet}, over the server's ${report.server.available} (max_connections ${report.server.maxConnections} − ${report.server.reserved} reserved)`,
    );
  }
  return report;
}
