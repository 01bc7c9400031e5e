import { createHash } from 'node:crypto';
import type { Statement } from './executor.js';
import { quoteIdent } from './identifiers.js';

/**
 * When nightshift names its statements (so the server parses and plans them once per connection):
 * - `'auto'` (the default): on connections straight to PostgreSQL. Each executor (the pool, a
 *   client of yours given as `{ db }`) is checked once: a connection pooler answers the start-up
 *   with a cancel key of its own, so the pid in it is not `pg_backend_pid()`. Through a pooler
 *   statements go unnamed, since a transaction-mode pooler (PgBouncer) shares server connections
 *   and named statements collide there. Should one still collide (a pooler that passes the key
 *   through), the client stops naming statements for the rest of the process, and on a pool the
 *   statement is re-run; inside a transaction, which the failure aborted, it is an error.
 * - `true`: always named; a collision is an error (NS_PREPARED_STATEMENTS). For a session-mode
 *   pooler, or PgBouncer ≥ 1.21 with `max_prepared_statements`.
 * - `false`: never named.
 */
export type PreparedStatementsMode = boolean | 'auto';

/** What `'auto'` reports when it stops naming statements somewhere (once per client). */
export interface PreparedStatementsOff {
  /** `pooler`: an executor connects through a connection pooler; `collision`: a named statement collided. */
  cause: 'pooler' | 'collision';
  /** The statement the server reported (collision). */
  statement?: string;
  /** Its SQLSTATE (collision): 42P05 (already exists) or 26000 (does not exist). */
  sqlState?: string;
}

/** What to do when `'auto'` stopped naming statements (the hint of the `database.prepared-statements-off` event). */
export function preparedStatementsOffHint(off: PreparedStatementsOff): string {
  return off.cause === 'pooler'
    ? "connected through a connection pooler (its cancel key is not the server's): nightshift sends unnamed statements there, as named ones collide in transaction mode; set preparedStatements: false (database.preparedStatements in nightshift.config.ts) to say so up front, or true for a session-mode pool (docs/poolers.md)"
    : 'a named statement collided (as behind a transaction-mode pooler, which shares server connections): nightshift sends unnamed statements for the rest of this process; set preparedStatements: false (database.preparedStatements in nightshift.config.ts) behind such a pooler (docs/poolers.md)';
}

interface PgClientLike {
  query(text: string): Promise<{ rows: { pid?: number }[] }>;
  processID?: number | null;
}

/**
 * The prepared-statement policy of one schema's statements, shared by all of them, so that one
 * collision switches the whole client at once.
 */
export class PreparedStatements {
  private off = false;
  private reported = false;
  /** Per executor (a pool, or one connection's client): straight to PostgreSQL or not. */
  private readonly direct = new WeakMap<object, boolean>();
  private readonly checking = new WeakMap<object, Promise<boolean>>();

  constructor(
    readonly mode: PreparedStatementsMode,
    private readonly onOff?: (info: PreparedStatementsOff) => void,
  ) {}

  /** Whether named statements are still in use (false once `'auto'` met a collision). */
  get active(): boolean {
    return this.mode !== false && !this.off;
  }

  /** Whether a named statement is sent by name on `db` (sync once `db` has been checked). */
  useName(db: unknown): boolean | Promise<boolean> {
    if (this.mode === true) return true;
    if (!this.active || typeof db !== 'object' || db === null) return false;
    const known = this.direct.get(db);
    if (known !== undefined) return known;
    let pending = this.checking.get(db);
    if (!pending) {
      pending = isDirect(db).then(
        (direct) => {
          this.direct.set(db, direct);
          this.checking.delete(db);
          if (!direct) this.report({ cause: 'pooler' });
          return direct;
        },
        // Not known (the database failed): unnamed this time, checked again next time.
        () => {
          this.checking.delete(db);
          return false;
        },
      );
      this.checking.set(db, pending);
    }
    return pending;
  }

  /**
   * Called when the server reported a collision of a named statement sent on `db`. In `'auto'`
   * mode the client stops naming statements; the result says whether the statement may be re-run
   * unnamed: on a pool, yes — it failed at Parse/Bind and ran nothing — but not inside a
   * transaction, which the failure aborted.
   */
  collided(db: unknown, info: { statement: string; sqlState: string }): boolean {
    if (this.mode !== 'auto') return false;
    this.off = true;
    this.report({ cause: 'collision', ...info });
    return isPool(db);
  }

  private report(info: PreparedStatementsOff): void {
    if (this.reported) return;
    this.reported = true;
    try {
      this.onOff?.(info);
    } catch {
      // Reporting must not fail the statement.
    }
  }
}

/**
 * A pool (pg's or a compatible one) runs each query on whichever connection is free, outside any
 * transaction; a client may be inside one. Duck-typed: a user's pool may come from another copy of pg.
 */
function isPool(db: unknown): db is { connect(): Promise<PgClientLike & { release(): void }> } {
  const p = db as { totalCount?: unknown; connect?: unknown };
  return typeof p === 'object' && p !== null && typeof p.connect === 'function' && typeof p.totalCount === 'number';
}

/**
 * Whether the executor's connections go straight to PostgreSQL: the pid of the start-up's cancel
 * key is the backend's own. A pooler (PgBouncer, in any mode) hands out a key of its own, as it
 * must when the server connection behind a client changes. A pool is checked on one of its
 * connections (all go to the same place); an executor that is not a pg client counts as pooled.
 */
async function isDirect(db: object): Promise<boolean> {
  if (isPool(db)) {
    const client = await db.connect();
    try {
      return await clientIsDirect(client);
    } finally {
      client.release();
    }
  }
  return clientIsDirect(db as PgClientLike);
}

async function clientIsDirect(client: PgClientLike): Promise<boolean> {
  if (typeof client.processID !== 'number' || typeof client.query !== 'function') return false;
  const { rows } = await client.query('SELECT pg_backend_pid() AS pid');
  return rows[0]?.pid === client.processID;
}

/**
 * Builds the statements of one schema. Statement texts are fixed when the client is created (the
 * only thing that varies is the quoted schema name), and each gets a name that is stable for that
 * schema, so the hot path is parsed and planned once per connection.
 */
export class StatementSet {
  readonly schema: string;
  readonly q: string;
  /** The policy every named statement of this set follows. */
  readonly prepared: PreparedStatements;
  private readonly tag: string;

  constructor(schema: string, prepared: PreparedStatementsMode | PreparedStatements = 'auto') {
    this.schema = schema;
    this.q = quoteIdent(schema);
    this.tag = createHash('sha1').update(schema).digest('hex').slice(0, 8);
    this.prepared = prepared instanceof PreparedStatements ? prepared : new PreparedStatements(prepared);
  }

  /**
   * A named statement; `text` receives the quoted schema to qualify table names with. `R` is the
   * row it returns, `P` its parameters in order.
   */
  named<R = unknown, P extends readonly unknown[] = readonly unknown[]>(name: string, text: (schema: string) => string): Statement<R, P> {
    const body = text(this.q);
    return this.prepared.mode === false ? { text: body } : { name: `ns_${this.tag}_${name}`, text: body, prepared: this.prepared };
  }

  /** A statement run rarely (admin, maintenance): not prepared. */
  plain<R = unknown, P extends readonly unknown[] = readonly unknown[]>(text: (schema: string) => string): Statement<R, P> {
    return { text: text(this.q) };
  }
}
