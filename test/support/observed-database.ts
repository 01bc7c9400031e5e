import { Database } from '../../src/db/database.js';
import { createPool } from '../../src/db/pool.js';

/** A statement as it was sent: its stable name without the schema's prefix (`job_complete`), and its values. */
export interface SentStatement {
  name: string;
  values: unknown[];
}

type QueryConfig = { name?: string; text: string; values?: unknown[] };

/**
 * nightshift's Database on a real pool of the test schema, with every statement recorded as it
 * is sent — and, on request, held back until the test lets it go, or failed once. The statements still run on the
 * real PostgreSQL: this observes and orders them, it replaces nothing. For tests of the batching
 * parts (completer, start marks) that must see which statement carried what, or keep one in flight.
 */
export function observedDatabase(url: string, schema: string) {
  const handle = createPool({ connectionString: url, max: 2, applicationName: 'observed-database' });
  const sent: SentStatement[] = [];
  const holds: { name: string; release: Promise<void> }[] = [];
  const arrivals: (() => void)[] = [];
  const failures: string[] = [];
  const query = handle.pool.query.bind(handle.pool) as (config: QueryConfig) => Promise<unknown>;
  const observed = async (config: QueryConfig) => {
    const name = config.name?.match(/_(job_[a-z_]+)$/)?.[1] ?? config.name ?? 'unnamed';
    sent.push({ name, values: config.values ?? [] });
    arrivals.splice(0).forEach((a) => a());
    const i = holds.findIndex((h) => h.name === name);
    if (i >= 0) await holds.splice(i, 1)[0]!.release;
    const f = failures.indexOf(name);
    if (f >= 0) {
      failures.splice(f, 1);
      throw new Error(`${name} failed on purpose (observedDatabase.fail)`);
    }
    return query(config);
  };
  (handle.pool as unknown as { query: typeof observed }).query = observed;
  return {
    db: new Database(handle, schema),
    /** Every statement sent so far, in order. */
    sent,
    /** The names of the statements sent so far. */
    names: () => sent.map((s) => s.name),
    /** Forgets what was sent so far (say, the setup's claim). */
    reset: () => void sent.splice(0),
    /** Holds the next statement named `name` before it reaches the server; returns the function that lets it go. */
    hold(name: string): () => void {
      let release!: () => void;
      holds.push({ name, release: new Promise<void>((r) => (release = r)) });
      return () => release();
    },
    /** Fails the next statement named `name` before it reaches the server (as a dropped connection would). */
    fail(name: string): void {
      failures.push(name);
    },
    /** Resolves once `n` statements have been sent (held ones count: they were sent to the pool). */
    async sentCount(n: number): Promise<void> {
      while (sent.length < n) await new Promise<void>((r) => arrivals.push(r));
    },
    close: () => handle.close(),
  };
}
