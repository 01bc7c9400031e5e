import pg from 'pg';
import { createPostgres, createStandby, type PostgresServer } from '../../support/postgres-server.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { waitFor } from '../../support/wait.js';

/** How commits wait for the standby. */
export type ReplicationMode = 'async' | 'remote_apply';

/** A primary and a streaming standby on loopback, from the same binaries, with a pool on each. */
export interface ReplicatedCluster {
  mode: ReplicationMode;
  primary: PostgresServer;
  standby: PostgresServer;
  /**
   * Cuts the replication stream where it leaves the primary's host: from now on nothing the primary
   * writes reaches the standby (what was in flight is dropped, as with a host that dies). The
   * standby lags from here on; with remote_apply, the primary's commits wait.
   */
  cutReplication(): void;
  /** Waits until the standby has replayed everything the primary has written so far. */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** Stops both servers and deletes their data. */
  destroy(): Promise<void>;
}

const STANDBY_NAME = 'standby';

/**
 * Starts a primary and a streaming standby of PostgreSQL `major`. `remote_apply`: every commit
 * waits until the standby has applied it (`synchronous_standby_names`, `synchronous_commit =
 * remote_apply`); `async`: the primary's default, commits return before the standby has them.
 * fsync is off: the primary dies by SIGKILL and is never used again, so what reached its disk
 * does not matter — what reached the standby does.
 */
export async function startReplicatedCluster(major: number, mode: ReplicationMode): Promise<ReplicatedCluster> {
  const flags = ['-c', 'fsync=off', '-c', 'full_page_writes=off', '-c', 'wal_keep_size=512MB'];
  const sync = mode === 'remote_apply' ? ['-c', `synchronous_standby_names=${STANDBY_NAME}`, '-c', 'synchronous_commit=remote_apply'] : [];
  const primary = await createPostgres({ major, flags: [...flags, ...sync] });
  // The standby streams through a proxy, so the stream can be cut on the primary's side.
  const replication = new TcpProxy('127.0.0.1', primary.port);
  await replication.listen();
  let standby: PostgresServer | undefined;
  try {
    // A file copy of a cleanly stopped primary is the standby's base backup (no pg_basebackup shipped).
    await primary.start();
    await primary.stop();
    standby = await createStandby(primary, { flags, applicationName: STANDBY_NAME, primaryPort: replication.port });
    await primary.start();
    await standby.start();
    const admin = new pg.Client({ connectionString: primary.url });
    await admin.connect();
    try {
      await waitFor(
        `the standby to stream${mode === 'remote_apply' ? ' as the synchronous standby' : ''}`,
        async () => {
          const { rows } = await admin.query<{ state: string; sync_state: string }>('SELECT state, sync_state FROM pg_stat_replication WHERE application_name = $1', [STANDBY_NAME]);
          return rows[0]?.state === 'streaming' && (mode === 'async' || rows[0].sync_state === 'sync');
        },
        { timeoutMs: 30_000 },
      );
    } finally {
      await admin.end();
    }
  } catch (err) {
    await standby?.destroy();
    await primary.destroy();
    await replication.close();
    throw err;
  }
  const s = standby;
  return {
    mode,
    primary,
    standby: s,
    cutReplication() {
      replication.cut(() => true);
    },
    async caughtUp(timeoutMs = 30_000) {
      const c = new pg.Client({ connectionString: primary.url });
      await c.connect();
      try {
        const { rows } = await c.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn');
        await waitFor(
          'the standby to replay the primary’s WAL',
          async () => (await c.query<{ ok: boolean }>('SELECT replay_lsn >= $1::pg_lsn AS ok FROM pg_stat_replication WHERE application_name = $2', [rows[0]!.lsn, STANDBY_NAME])).rows[0]?.ok,
          { timeoutMs, everyMs: 20 },
        );
      } finally {
        await c.end();
      }
    },
    async destroy() {
      await s.destroy();
      await primary.destroy();
      await replication.close();
    },
  };
}
