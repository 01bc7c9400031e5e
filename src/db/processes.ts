import { run, runCount, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** A registered process, as stored. */
interface ProcessRow {
  id: string;
  host: string;
  pid: number;
  roles: string[];
  version: string;
  started_at: Date;
  last_seen_at: Date;
  info: Record<string, unknown>;
  age_s: number;
}

/** A live process of the fleet, as `listProcesses()` and `nightshift workers` show it. */
export interface ProcessRecord {
  /** `host:pid:random`. */
  id: string;
  host: string;
  pid: number;
  roles: string[];
  /** The nightshift version it runs. */
  version: string;
  startedAt: Date;
  lastSeenAt: Date;
  /** What it hosts and runs now (kinds, queues, schedules, daemons, consumers, running jobs, leases led), refreshed every heartbeat. */
  info: Record<string, unknown>;
  /** Seconds since it was last seen, on the database clock. */
  secondsSinceSeen: number;
}

/** Statements of the process registry. */
export function processStatements(set: StatementSet) {
  return {
    upsert: set.plain<never, [id: string, host: string, pid: number, roles: string[], version: string, info: string]>(
      (s) => `INSERT INTO ${s}.processes (id, host, pid, roles, version, info) VALUES ($1, $2, $3, $4, $5, $6::jsonb)
        ON CONFLICT (id) DO UPDATE SET last_seen_at = now(), info = EXCLUDED.info`,
    ),
    remove: set.plain<never, [id: string]>((s) => `DELETE FROM ${s}.processes WHERE id = $1`),
    // A process is gone when it has not been seen for `$1` ms (it missed several heartbeats).
    removeLapsed: set.plain<never, [olderThanMs: number]>((s) => `DELETE FROM ${s}.processes WHERE last_seen_at < now() - $1::float8 * interval '1 millisecond'`),
    list: set.plain<ProcessRow, []>(
      (s) => `SELECT id, host, pid, roles, version, started_at, last_seen_at, info,
        extract(epoch FROM now() - last_seen_at)::float8 AS age_s FROM ${s}.processes ORDER BY host, pid`,
    ),
  };
}
export type ProcessStatements = ReturnType<typeof processStatements>;

/** The process registry's statements bound to the schema's pool. */
export class ProcessQueries {
  private readonly st: ProcessStatements;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
  ) {
    this.st = processStatements(set);
  }

  /** Registers a process or refreshes its heartbeat. */
  async upsert(p: { id: string; host: string; pid: number; roles: string[]; version: string; info: unknown }): Promise<void> {
    await run(this.db, this.st.upsert, [p.id, p.host, p.pid, p.roles, p.version, JSON.stringify(p.info)]);
  }

  /** Removes a process (clean stop). */
  async remove(id: string): Promise<void> {
    await run(this.db, this.st.remove, [id]);
  }

  /** Removes processes whose heartbeat lapsed; returns how many. */
  removeLapsed(p: { olderThanMs: number }): Promise<number> {
    return runCount(this.db, this.st.removeLapsed, [p.olderThanMs]);
  }

  /** Every registered process. */
  async list(): Promise<ProcessRecord[]> {
    const rows = await run(this.db, this.st.list, []);
    return rows.map((r) => ({
      id: r.id,
      host: r.host,
      pid: r.pid,
      roles: r.roles,
      version: r.version,
      startedAt: r.started_at,
      lastSeenAt: r.last_seen_at,
      info: r.info,
      secondsSinceSeen: r.age_s,
    }));
  }
}
