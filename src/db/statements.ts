import { createHash } from 'node:crypto';
import { quoteIdent } from './identifiers.js';
import type { Statement } from './executor.js';

/**
 * When nightshift names its hot-path statements (so the server parses and plans them once per
 * connection):
 * - `'auto'` (the default): named on a pool, where a statement that collides behind a
 *   transaction-mode pooler (PgBouncer) can be re-run; unnamed inside a transaction (yours as
 *   `{ db }`, or nightshift's own), where a failed statement aborts the transaction. The first
 *   collision switches the client to unnamed statements for the rest of the process, with one
 *   warning.
 * - `true`: named everywhere; a collision is an error (NS_PREPARED_STATEMENTS). For a direct
 *   connection, a session-mode pooler, or PgBouncer ≥ 1.21 with `max_prepared_statements`.
 * - `false`: never named.
 */
export type PreparedStatementsMode = boolean | 'auto';

/** What the switch to unnamed statements reports (once per client). */
export interface PreparedStatementsOff {
  /** The statement the server reported. */
  statement: string;
  /** Its SQLSTATE: 42P05 (already exists) or 26000 (does not exist). */
  sqlState: string;
}

/**
 * The prepared-statement policy of one schema's statements, shared by all of them, so that one
 * collision switches the whole client at once.
 */
export class PreparedStatements {
  private off = false;

  constructor(
    readonly mode: PreparedStatementsMode,
    private readonly onOff?: (info: PreparedStatementsOff) => void,
  ) {}

  /** Whether named statements are still in use (false once `'auto'` has switched them off). */
  get active(): boolean {
    return this.mode !== false && !this.off;
  }

  /** Whether a named statement is sent by name on `db`. */
  useName(db: unknown): boolean {
    if (this.mode === true) return true;
    return this.active && isPool(db);
  }

  /**
   * Called when the server reported a collision of a named statement sent on `db`: true when the
   * statement may be re-run unnamed (auto mode on a pool — it failed at Parse/Bind and ran nothing),
   * after switching the client to unnamed statements.
   */
  collided(db: unknown, info: PreparedStatementsOff): boolean {
    if (this.mode !== 'auto' || !isPool(db)) return false;
    if (!this.off) {
      this.off = true;
      try {
        this.onOff?.(info);
      } catch {
        // Reporting must not fail the statement.
      }
    }
    return true;
  }
}

/**
 * A pool (pg's or a compatible one) runs each query on whichever connection is free, outside any
 * transaction; a client may be inside one. Duck-typed: a user's pool may come from another copy of pg.
 */
function isPool(db: unknown): boolean {
  const p = db as { totalCount?: unknown; connect?: unknown };
  return typeof p === 'object' && p !== null && typeof p.connect === 'function' && typeof p.totalCount === 'number';
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

  /** A named statement; `text` receives the quoted schema to qualify table names with. */
  named(name: string, text: (schema: string) => string): Statement {
    const body = text(this.q);
    return this.prepared.mode === false ? { text: body } : { name: `ns_${this.tag}_${name}`, text: body, prepared: this.prepared };
  }

  /** A statement run rarely (admin, maintenance): not prepared. */
  plain(text: (schema: string) => string): Statement {
    return { text: text(this.q) };
  }
}
