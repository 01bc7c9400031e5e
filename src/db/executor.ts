import { translateDbError } from './pg-errors.js';

/** A statement with a stable name (prepared once per connection) or an anonymous one. */
export interface Statement {
  readonly name?: string;
  readonly text: string;
}

/**
 * The database seam: anything with pg's `query({ text, values, name })` — the shared pool, or the
 * caller's own client inside its transaction. Passing the caller's client as `{ db }` makes a write
 * part of the caller's transaction (the outbox pattern).
 */
export interface Executor {
  query(config: { text: string; values?: unknown[]; name?: string }): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/** Runs a statement on an executor, turning driver errors into nightshift errors. */
export async function run<R>(db: Executor, stmt: Statement, values: unknown[] = []): Promise<R[]> {
  try {
    const config = stmt.name ? { name: stmt.name, text: stmt.text, values } : { text: stmt.text, values };
    const result = await db.query(config);
    return result.rows as R[];
  } catch (err) {
    throw translateDbError(err);
  }
}

/** Checks that a value given as `{ db }` looks like a pg client or pool. */
export function isExecutor(value: unknown): value is Executor {
  return typeof value === 'object' && value !== null && typeof (value as Executor).query === 'function';
}

/** Runs a statement that returns no rows; resolves to the number of rows it touched. */
export async function runCount(db: Executor, stmt: Statement, values: unknown[] = []): Promise<number> {
  try {
    const config = stmt.name ? { name: stmt.name, text: stmt.text, values } : { text: stmt.text, values };
    const result = await db.query(config);
    return result.rowCount ?? 0;
  } catch (err) {
    throw translateDbError(err);
  }
}
