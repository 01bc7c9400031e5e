import { Database } from '../../src/db/database.js';
import { createPool } from '../../src/db/pool.js';

/** A Database on the test schema with a pool of its own (closed by the returned `close`). */
export function openDatabase(url: string, schema: string, label = 'leadership-test', max = 4): { database: Database; close: () => Promise<void> } {
  const pool = createPool({ connectionString: url, max, applicationName: label });
  const database = new Database(pool, schema);
  return { database, close: () => pool.close() };
}
