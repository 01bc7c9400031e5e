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
    upsert: set.plain(
      (s) => `INSERT INTO ${s}.processes (id, host, pid, roles, version, info) VALUES ($1, $2, $3, $4, $5, $6::jsonb)
        ON CONFLICT (id) DO UPDATE SET last_seen_at = now(), info = EXCLUDED.info`,
    ),
    remove: set.plain((s) => `DELETE FROM ${s}.processes WHERE id = $1`),
    // A process is gone when it has not been seen for `$1` ms (it missed several heartbeats).
    removeLapsed: set.plain((s) => `DELETE FROM ${s}.processes WHERE last_seen_at < now() - $1::float8 * interval '1 millisecond'`),
    list: set.plain(
      (s) => `SELECT id, host, pid, roles, version, started_at, last_seen_at, info,
        extract(epoch FROM now() - last_seen_at)::float8 AS age_s FROM ${s}.processes ORDER BY host, pid`,
    ),
  };
}
export type ProcessStatements = ReturnType<typeof processStatements>;

/** Registers a process or refreshes its heartbeat. */
export async function processUpsert(
  db: Executor,
  st: ProcessStatements,
  p: { id: string; host: string; pid: number; roles: string[]; version: string; info: unknown },
): Promise<void> {
  await run(db, st.upsert, [p.id, p.host, p.pid, p.roles, p.version, JSON.stringify(p.info)]);
}

/** Removes a process (clean stop). */
export async function processRemove(db: Executor, st: ProcessStatements, id: string): Promise<void> {
  await run(db, st.remove, [id]);
}

/** Removes processes whose heartbeat lapsed; returns how many. */
export function processRemoveLapsed(db: Executor, st: ProcessStatements, olderThanMs: number): Promise<number> {
  return runCount(db, st.removeLapsed, [olderThanMs]);
}

/** Every registered process. */
export function processList(db: Executor, st: ProcessStatements): Promise<ProcessRow[]> {
  return run<ProcessRow>(db, st.list);
}
