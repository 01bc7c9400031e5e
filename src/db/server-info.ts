import { run, sql, type Executor } from './executor.js';

/** Connection limits of the server, and what is in use now. */
export interface ServerConnections {
  maxConnections: number;
  /** Reserved for superusers (and, on PostgreSQL 16+, `reserved_connections`). */
  reserved: number;
  /** Connections open right now, all databases and users. */
  inUse: number;
  version: string;
}

const SERVER_CONNECTIONS = sql<{ max: string; su: string; rc: string | null; used: number; version: string }, []>(
  `SELECT current_setting('max_connections') AS max,
          current_setting('superuser_reserved_connections') AS su,
          current_setting('reserved_connections', true) AS rc,
          (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend') AS used,
          current_setting('server_version') AS version`,
);

/** Reads `max_connections`, the reserved slots and current usage from the server. */
export async function serverConnections(db: Executor): Promise<ServerConnections> {
  const [row] = await run(db, SERVER_CONNECTIONS, []);
  return {
    maxConnections: Number(row!.max),
    reserved: Number(row!.su) + Number(row!.rc ?? 0),
    inUse: row!.used,
    version: row!.version,
  };
}
