import { PreparedStatementsError } from '../errors.js';
import { preparedStatementCollision, translateDbError } from './pg-errors.js';
import type { PreparedStatements } from './statements.js';

/**
 * A statement with a stable name (prepared once per connection) or an anonymous one. `R` is the
 * row it returns and `P` its parameters ($1, $2, … in order), both written where the SQL is, so
 * {@link run} returns `R[]` without a cast at the call site and refuses values of the wrong
 * type or order.
 */
export interface Statement<R = unknown, P extends readonly unknown[] = readonly unknown[]> {
  readonly name?: string;
  readonly text: string;
  /** The policy deciding, per executor, whether `name` is used (see PreparedStatementsMode). */
  readonly prepared?: PreparedStatements;
  /** Types only, never set: the row and the parameters. */
  readonly __types?: { row: R; params: P };
}

/** An anonymous statement of fixed text (migrations, diagnostics): `R` is the row it returns. */
export function sql<R = unknown, P extends readonly unknown[] = readonly unknown[]>(text: string): Statement<R, P> {
  return { text };
}

/**
 * The database seam: anything with pg's `query({ text, values, name })` — the shared pool, or the
 * caller's own client inside its transaction. Passing the caller's client as `{ db }` makes a write
 * part of the caller's transaction (the outbox pattern).
 */
export interface Executor {
  query(config: { text: string; values?: unknown[]; name?: string }): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/**
 * Runs a statement, by name when its policy says so. A named statement that collides behind a
 * transaction-mode pooler (the server connection is not the one it was prepared on: SQLSTATE
 * 26000 or 42P05) failed at Parse/Bind, before anything ran — so in `'auto'` mode on a pool it is
 * run again unnamed (once); inside a transaction, which the failure has aborted, and with
 * `preparedStatements: true`, it becomes NS_PREPARED_STATEMENTS.
 */
async function execute(db: Executor, stmt: Statement<unknown, readonly unknown[]>, values: readonly unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }> {
  let named = stmt.name !== undefined;
  if (named && stmt.prepared) {
    const use = stmt.prepared.useName(db);
    named = typeof use === 'boolean' ? use : await use;
  }
  try {
    return await db.query(named ? { name: stmt.name, text: stmt.text, values: values as unknown[] } : { text: stmt.text, values: values as unknown[] });
  } catch (err) {
    const collision = named ? preparedStatementCollision(err, stmt.name!) : undefined;
    if (!collision) throw translateDbError(err);
    if (stmt.prepared?.collided(db, { statement: stmt.name!, sqlState: collision })) {
      try {
        return await db.query({ text: stmt.text, values: values as unknown[] });
      } catch (again) {
        throw translateDbError(again);
      }
    }
    throw new PreparedStatementsError(stmt.name!, collision, err);
  }
}

/**
 * Runs a statement on an executor, turning driver errors into nightshift errors. The rows are of
 * the type the statement declares: this is the one place that takes the driver's word for it.
 */
export async function run<R, P extends readonly unknown[]>(db: Executor, stmt: Statement<R, P>, values: NoInfer<P>): Promise<R[]> {
  return (await execute(db, stmt, values)).rows as R[];
}

/** Checks that a value given as `{ db }` looks like a pg client or pool. */
export function isExecutor(value: unknown): value is Executor {
  return typeof value === 'object' && value !== null && typeof (value as Executor).query === 'function';
}

/** Runs a statement that returns no rows; resolves to the number of rows it touched. */
export async function runCount<P extends readonly unknown[]>(db: Executor, stmt: Statement<unknown, P>, values: NoInfer<P>): Promise<number> {
  return (await execute(db, stmt, values)).rowCount ?? 0;
}
