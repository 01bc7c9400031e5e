import type { Executor } from './executor.js';
import { validateSchemaName } from './identifiers.js';
import { JobLogQueries } from './job-logs.js';
import { JobStatsQueries } from './job-stats.js';
import { JobAdminQueries } from './jobs-admin.js';
import { JobInsertQueries } from './jobs-insert.js';
import { JobMaintenanceQueries } from './jobs-maintenance.js';
import { JobRunQueries } from './jobs-run.js';
import { JobSearchQueries } from './jobs-search.js';
import { LeaseQueries } from './leases.js';
import { LimitQueries } from './limits.js';
import { assertMigrated, migrate, type MigrateResult } from './migrator.js';
import { PipelineArtifactQueries } from './pipelines-artifacts.js';
import { PipelineMaintenanceQueries } from './pipelines-maintenance.js';
import { PipelineRunQueries } from './pipelines-runs.js';
import { PipelineStepQueries } from './pipelines-steps.js';
import type { PoolHandle } from './pool.js';
import { ProcessQueries } from './processes.js';
import { QueueQueries } from './queues.js';
import { ScheduleQueries } from './schedules.js';
import { serverConnections, type ServerConnections } from './server-info.js';
import { PreparedStatements, StatementSet, type PreparedStatementsMode, type PreparedStatementsOff } from './statements.js';
import { TestJobQueries } from './test-jobs.js';
import { WatchdogBuiltinQueries } from './watchdog-builtins.js';
import { WatchdogQueries } from './watchdog.js';

/** The statements of the pipeline tables, one group per table (`db.pipelines.runs.lock({ tx, id })`). */
export interface PipelineTableQueries {
  readonly runs: PipelineRunQueries;
  readonly steps: PipelineStepQueries;
  readonly artifacts: PipelineArtifactQueries;
  /** The sweep (deadlines, stale and unhosted steps, publication, pruning), follow-ups and savepoints. */
  readonly maintenance: PipelineMaintenanceQueries;
}

/**
 * The database of one client: its pool, and every statement of its schema bound to that pool
 * once, grouped by table (`db.jobs.claim({ queue, kinds, limit, … })`). Callers name what they
 * want and pass parameters by name; the pool, the statement and the order of its parameters are
 * decided here. A statement that may run in a caller's transaction takes it as `db` (or `tx`).
 */
export class Database {
  readonly schema: string;
  /** The worker's statements: claim, start marks, completion, failure, heartbeat, hand-back, fence. */
  readonly jobs: JobRunQueries;
  /** Enqueue: batched inserts and the SQL function. */
  readonly inserts: JobInsertQueries;
  /** The operator's reads and changes of jobs, with their audit rows. */
  readonly admin: JobAdminQueries;
  /** Rescue, expiry and pruning. */
  readonly maintenance: JobMaintenanceQueries;
  /** Queues (pause, counts), kinds, settings and the audit log. */
  readonly queues: QueueQueries;
  readonly leases: LeaseQueries;
  /** Flow control: the limited claim, the limits' registration, and their use for operators. */
  readonly limits: LimitQueries;
  readonly schedules: ScheduleQueries;
  readonly processes: ProcessQueries;
  readonly jobLogs: JobLogQueries;
  /** Checks, their runs and subjects, and alerts: the watchdog's state machine. */
  readonly watchdog: WatchdogQueries;
  /** The built-in checks' reads (read-only, over jobs, leases and processes). */
  readonly watchdogBuiltins: WatchdogBuiltinQueries;
  /** Searches of jobs by payload and time (bounded to the newest jobs), and capped counts. */
  readonly search: JobSearchQueries;
  /** The per-minute aggregates of the charts. */
  readonly stats: JobStatsQueries;
  /** Runs, steps, artifacts and the sweep of pipelines. */
  readonly pipelines: PipelineTableQueries;
  readonly channels: { jobs: string; control: string };
  /** The schema's statement builder (the prepared-statement policy every statement shares). */
  readonly statements: StatementSet;
  private testJobs_: TestJobQueries | undefined;

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
    this.channels = { jobs: `${schema}:jobs`, control: `${schema}:control` };
    const db = pool.pool;
    this.jobs = new JobRunQueries(db, set, this.channels.jobs);
    this.inserts = new JobInsertQueries(db, set);
    this.admin = new JobAdminQueries(db, set, this.channels);
    this.maintenance = new JobMaintenanceQueries(db, set, this.channels.jobs);
    this.queues = new QueueQueries(db, set, this.channels.control);
    this.leases = new LeaseQueries(db, set);
    this.limits = new LimitQueries(db, set);
    this.schedules = new ScheduleQueries(db, set);
    this.processes = new ProcessQueries(db, set);
    this.jobLogs = new JobLogQueries(db, set);
    this.watchdog = new WatchdogQueries(db, set);
    this.watchdogBuiltins = new WatchdogBuiltinQueries(db, set);
    this.search = new JobSearchQueries(db, set);
    this.stats = new JobStatsQueries(db, set);
    this.pipelines = {
      runs: new PipelineRunQueries(db, set),
      steps: new PipelineStepQueries(db, set),
      artifacts: new PipelineArtifactQueries(db, set),
      maintenance: new PipelineMaintenanceQueries(db, set),
    };
  }

  /** The statements of nightshift/testing (made on first use: no worker needs them). */
  get testJobs(): TestJobQueries {
    return (this.testJobs_ ??= new TestJobQueries(this.pool.pool, this.statements));
  }

  /** The shared pool as an executor: for the queries of users' code (`ctx.db`, `ns.db`), never for nightshift's own. */
  get executor(): Executor {
    return this.pool.pool;
  }

  /** Runs `fn` inside a transaction on one connection of the pool (committed when it resolves, rolled back when it throws). */
  transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
    return this.pool.transaction(fn);
  }

  /** Creates or upgrades the schema (see migrate). */
  migrate(): Promise<MigrateResult> {
    return migrate(this.pool, this.schema);
  }

  /**
   * Throws NS_NOT_MIGRATED unless every migration of this version is applied, or NS_SCHEMA_TOO_NEW
   * when a newer version applied one not marked compatible; resolves with the newer (compatible)
   * versions this code does not know, for a warning.
   */
  checkMigrated(): Promise<{ newer: number[] }> {
    return assertMigrated(this.pool.pool, this.schema);
  }

  /** The server's connection limits and current use. */
  serverConnections(): Promise<ServerConnections> {
    return serverConnections(this.pool.pool);
  }
}
