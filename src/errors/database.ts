/** Errors of the database: its schema (migrations), its connections, its statements. */
import { NightshiftError } from './base.js';

/** The database schema is missing or older than this version of nightshift. */
export class NotMigratedError extends NightshiftError {
  constructor(schema: string, have: number, want: number) {
    super('NS_NOT_MIGRATED', `schema "${schema}" is at migration ${have}, this version needs ${want}`, {
      hint: 'run `nightshift migrate` (or call migrate()) before starting workers',
    });
  }
}

/** The database schema is newer than this version of nightshift understands. */
export class SchemaTooNewError extends NightshiftError {
  constructor(schema: string, have: number, want: number, blocking?: number) {
    super('NS_SCHEMA_TOO_NEW', `schema "${schema}" is at migration ${have}, newer than this version's ${want}`, {
      hint:
        blocking === undefined
          ? 'upgrade nightshift in this process; an older version must not write to a newer schema'
          : `migration ${blocking} changed what older versions rely on: upgrade nightshift in this process (migrations marked compatible would have let it run)`,
    });
  }
}

/** The database could not be reached or refused the operation for a reason outside nightshift. */
export class DatabaseError extends NightshiftError {
  readonly sqlState: string | undefined;
  /**
   * True when the database could not be reached or the connection failed under the operation
   * (refused, reset, cut, timed out, or ended by the server: SQLSTATE class 08, 57P01–57P03), as
   * opposed to the database refusing the operation itself. Decided from the error's code and
   * class where the driver's error is translated, never from its message: a retry of the same
   * operation may succeed once the database is back.
   */
  readonly unavailable: boolean;
  constructor(message: string, sqlState: string | undefined, cause: unknown, hint?: string, unavailable = false) {
    super('NS_DATABASE', message, { cause, ...(hint ? { hint } : {}) });
    this.sqlState = sqlState;
    this.unavailable = unavailable;
  }
}

/**
 * A named prepared statement of nightshift's was not the one on the server connection (SQLSTATE
 * 42P05 or 26000): a transaction-mode pooler (PgBouncer) handed the client another server
 * connection. Raised where the statement cannot be re-run — inside a transaction, which the failure
 * aborted — or when `preparedStatements: true` forbids switching them off.
 */
export class PreparedStatementsError extends NightshiftError {
  readonly sqlState: string;
  constructor(statement: string, sqlState: string, cause: unknown) {
    super(
      'NS_PREPARED_STATEMENTS',
      `prepared statement "${statement}" ${sqlState === '42P05' ? 'already exists' : 'does not exist'} on this server connection (SQLSTATE ${sqlState}): a connection pooler in transaction mode (PgBouncer) shares server connections between clients, so statements prepared on one are missing or taken on another; the transaction is aborted`,
      {
        cause,
        hint: "behind a transaction-mode pooler set preparedStatements: false (database.preparedStatements in nightshift.config.ts), or leave it unset ('auto'), which sends unnamed statements on connections through a pooler and re-runs a collided one on the pool; or connect in session mode, or use PgBouncer ≥ 1.21 with max_prepared_statements > 0 (docs/poolers.md)",
      },
    );
    this.sqlState = sqlState;
  }
}

/** A migration failed: nothing of it (nor of the migrations after it) was applied. */
export class MigrationFailedError extends NightshiftError {
  readonly sqlState: string | undefined;
  constructor(schema: string, migration: { version: number; name: string }, cause: unknown) {
    const sqlState = typeof (cause as { code?: unknown } | null)?.code === 'string' ? (cause as { code: string }).code : undefined;
    const detail = cause instanceof Error ? cause.message : String(cause);
    // Duplicates (42P07 table or sequence, 42710 object, 42723 function, 42701 column) and a
    // same-named table of another shape (42703 no such column, 42804 wrong type, 42P16 bad table
    // definition): the schema holds objects that are not nightshift's.
    const foreign = sqlState !== undefined && ['42P07', '42710', '42723', '42701', '42703', '42P16', '42804'].includes(sqlState);
    super('NS_MIGRATION_FAILED', `migration ${String(migration.version).padStart(4, '0')} ${migration.name} failed on schema "${schema}": ${detail}`, {
      cause,
      hint: foreign
        ? `schema "${schema}" holds tables or functions nightshift did not create (an application's own jobs table?); give nightshift a schema of its own (database.schema, --schema, or the schema option); nothing was applied`
        : 'nothing was applied (migrations run in one transaction); fix the cause and run migrate again',
    });
    this.sqlState = sqlState;
  }
}

/** The connections the fleet would need exceed what the server allows. */
export class BudgetExceededError extends NightshiftError {
  constructor(message: string) {
    super('NS_BUDGET_EXCEEDED', message, {
      hint: 'lower maxConnections per process or the number of replicas, raise max_connections on the server, or put a pooler in front (docs/poolers.md)',
    });
  }
}
