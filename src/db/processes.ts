import { run, runCount, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** A registered process. */
export interface ProcessRow {
  id: string;
  host: string;
  pid: number;
  roles: string[];
  version: string;
  started_at: Date;
  last_seen_at: Date;
  info: Record<string, unknown>;
  /** Seconds since it was last seen, on the database clock. */
  age_s: number;
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
  list(): Promise<ProcessRow[]> {
    return run(this.db, this.st.list, []);
  }
}
