import type { Database } from '../db/database.js';
import type { LeaseInfo } from '../db/leases.js';

export type { LeaseInfo } from '../db/leases.js';

/**
 * Lists the leases of the schema, ordered by name, with whether each has expired by the database
 * clock. With `prefix` (e.g. `'daemon:'`) only names starting with it.
 */
export function listLeases(database: Database, options: { prefix?: string } = {}): Promise<LeaseInfo[]> {
  return database.leases.list(options);
}
