import type { Database } from '../db/database.js';

/** A lease as listings show it (`nightshift daemons`, the dashboard). */
export interface LeaseInfo {
  /** The lease's name; daemons are elected under `daemon:<name>`. */
  name: string;
  /** The current holder, or the last one when `expired`. */
  holder: string;
  /** The fencing token of the current (or last) term. */
  token: string;
  /** When the term ends unless renewed (database clock). */
  expiresAt: Date;
  /** When the current (or last) term began. */
  acquiredAt: Date;
  /** When the holder last renewed. */
  renewedAt: Date;
  /** True when nobody holds the lease now: its holder released it, died, or was cut off. */
  expired: boolean;
}

/**
 * Lists the leases of the schema, ordered by name, with whether each has expired by the database
 * clock. With `prefix` (e.g. `'daemon:'`) only names starting with it.
 */
export async function listLeases(database: Database, options: { prefix?: string } = {}): Promise<LeaseInfo[]> {
  const rows = await database.leases.list(options);
  return rows.map((r) => ({
    name: r.name,
    holder: r.holder,
    token: r.token,
    expiresAt: r.expires_at,
    acquiredAt: r.acquired_at,
    renewedAt: r.renewed_at,
    expired: r.expired,
  }));
}
