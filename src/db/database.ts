import { jobAdminStatements } from './jobs-admin.js';
import { jobInsertStatements } from './jobs-insert.js';
import { jobMaintenanceStatements } from './jobs-maintenance.js';
import { jobRunStatements } from './jobs-run.js';
import type { PoolHandle } from './pool.js';
import { queueStatements } from './queues.js';
import { PreparedStatements, StatementSet, type PreparedStatementsMode, type PreparedStatementsOff } from './statements.js';
import { validateSchemaName } from './identifiers.js';

/** The database of one client: its pool, its schema's statements, and its notification channels. */
export class Database {
  readonly schema: string;
  readonly insert;
  readonly run;
  readonly maintenance;
  readonly admin;
  readonly queues;
  readonly channels: { jobs: string; control: string };
  /** The schema's statement builder, for modules that keep their statements in their own db/ file. */
  readonly statements: StatementSet;

  /**
   * @param preparedStatements see {@link PreparedStatementsMode} (default `'auto'`).
   * @param onPreparedStatementsOff called once when `'auto'` switches this client to unnamed statements.
   */
  constructor(
    readonly pool: PoolHandle,
    schema: string,
    preparedStatements: PreparedStatementsMode = 'auto',
    onPreparedStatementsOff?: (info: PreparedStatementsOff) => void,
  ) {
    this.schema = validateSchemaName(schema);
    const set = new StatementSet(schema, new PreparedStatements(preparedStatements, onPreparedStatementsOff));
    this.statements = set;
    this.insert = jobInsertStatements(set);
    this.run = jobRunStatements(set);
    this.maintenance = jobMaintenanceStatements(set);
    this.admin = jobAdminStatements(set);
    this.queues = queueStatements(set);
    this.channels = { jobs: `${schema}:jobs`, control: `${schema}:control` };
  }
}
