import { run, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** A queue whose oldest due job waited longer than the bound. */
export interface LaggingQueueRow {
  queue: string;
  /** Due jobs that waited longer than the bound. */
  waiting: number;
  oldest_ms: number;
}

/** Due jobs of a kind on a queue that no live process runs there. */
export interface UnrunnableRow {
  kind: string;
  queue: string;
  count: number;
  oldest_ms: number;
}

/** Running jobs whose lease expired and that nobody rescued. */
export interface ExpiredLeasesRow {
  count: number;
  oldest_ms: number | null;
  /** Up to five of them, oldest lease first. */
  ids: string[] | null;
}

/** Discarded jobs of a kind within the window. */
export interface DiscardedRow {
  kind: string;
  count: number;
  newest_id: string;
}

/** Held or abandoned jobs of a kind. */
export interface WaitingRow {
  kind: string;
  held: number;
  abandoned: number;
  oldest_ms: number;
  oldest_id: string;
}

/** A daemon that should have a leader, and its lease. */
export interface DaemonLeaseRow {
  name: string;
  holder: string | null;
  /** ms since its lease expired (negative while it runs); null without a lease row. */
  expired_ms: number | null;
  /** Live processes hosting it. */
  hosts: number;
  /** ms since the oldest live host started; null without hosts. */
  hosted_ms: number | null;
}

/** Statements of the built-in checks: read-only, each served by an index of its table. */
export function watchdogBuiltinStatements(set: StatementSet) {
  // `$n ms ago` on the database clock.
  const ago = (p: string) => `now() - ${p}::float8 * interval '1 millisecond'`;
  return {
    // Due available jobs are what the claim index holds (queue, priority, run_at) WHERE available.
    // Paused queues wait on purpose and are left out.
    queueLag: set.plain<LaggingQueueRow, [olderThanMs: number]>(
      (s) => `SELECT j.queue, count(*)::int AS waiting, extract(epoch FROM now() - min(j.run_at))::float8 * 1000 AS oldest_ms
        FROM ${s}.jobs j
        WHERE j.state = 'available' AND j.run_at <= ${ago('$1')}
          AND NOT EXISTS (SELECT 1 FROM ${s}.queues q WHERE q.name = j.queue AND q.paused)
        GROUP BY j.queue ORDER BY j.queue`,
    ),
    // A process runs a job when its registry row names the kind and the queue (info.kinds, info.queues).
    unrunnable: set.plain<UnrunnableRow, [graceMs: number, liveWithinMs: number]>(
      (s) => `SELECT j.kind, j.queue, count(*)::int AS count, extract(epoch FROM now() - min(j.run_at))::float8 * 1000 AS oldest_ms
        FROM ${s}.jobs j
        WHERE j.state = 'available' AND j.run_at <= ${ago('$1')}
          AND NOT EXISTS (SELECT 1 FROM ${s}.queues q WHERE q.name = j.queue AND q.paused)
          AND NOT EXISTS (
            SELECT 1 FROM ${s}.processes p
            WHERE p.last_seen_at > ${ago('$2')} AND p.info -> 'kinds' ? j.kind AND p.info -> 'queues' ? j.queue)
        GROUP BY j.kind, j.queue ORDER BY j.kind, j.queue`,
    ),
    // jobs_lease indexes lease_expires_at of every running job.
    expiredLeases: set.plain<ExpiredLeasesRow, [graceMs: number]>(
      (s) => `SELECT count(*)::int AS count, extract(epoch FROM now() - min(lease_expires_at))::float8 * 1000 AS oldest_ms,
          (array_agg(id::text ORDER BY lease_expires_at))[1:5] AS ids
        FROM ${s}.jobs WHERE lease_expires_at IS NOT NULL AND lease_expires_at < ${ago('$1')} AND state = 'running'`,
    ),
    // Discarded jobs wait in \`jobs\` for maintenance to move them to the history (jobs_finished
    // serves that part); the history's partitions of the window's days hold the rest.
    discarded: set.plain<DiscardedRow, [windowMs: number]>(
      (s) => `SELECT kind, count(*)::int AS count, max(id)::text AS newest_id FROM ${s}.jobs_all
        WHERE state = 'discarded' AND finished_at IS NOT NULL AND finished_at > ${ago('$1')}
        GROUP BY kind ORDER BY kind`,
    ),
    // A held job has no finished_at: it waits since its last attempt failed into the hold (the
    // newest entry of its error history), else since it started.
    waiting: set.plain<WaitingRow, []>(
      (s) => `SELECT kind, count(*) FILTER (WHERE state = 'held')::int AS held, count(*) FILTER (WHERE state = 'abandoned')::int AS abandoned,
          extract(epoch FROM now() - min(coalesce(finished_at, (errors -> -1 ->> 'at')::timestamptz, started_at, created_at)))::float8 * 1000 AS oldest_ms,
          min(id)::text AS oldest_id
        FROM ${s}.jobs WHERE state IN ('held', 'abandoned') GROUP BY kind ORDER BY kind`,
    ),
    // The daemons of the config ($1) and those a live process hosts, with their lease ($3: the
    // lease-name prefix, 'daemon:').
    daemons: set.plain<DaemonLeaseRow, [names: readonly string[], liveWithinMs: number, leasePrefix: string]>(
      (s) => `WITH live AS (SELECT * FROM ${s}.processes WHERE last_seen_at > ${ago('$2')}),
        names AS (SELECT unnest($1::text[]) AS name UNION SELECT jsonb_array_elements_text(info -> 'daemons') FROM live)
        SELECT n.name, l.holder, extract(epoch FROM now() - l.expires_at)::float8 * 1000 AS expired_ms,
          (SELECT count(*)::int FROM live p WHERE p.info -> 'daemons' ? n.name) AS hosts,
          (SELECT extract(epoch FROM now() - min(p.started_at))::float8 * 1000 FROM live p WHERE p.info -> 'daemons' ? n.name) AS hosted_ms
        FROM names n LEFT JOIN ${s}.leases l ON l.name = $3 || n.name ORDER BY n.name`,
    ),
    liveProcesses: set.plain<{ n: number }, [liveWithinMs: number]>((s) => `SELECT count(*)::int AS n FROM ${s}.processes WHERE last_seen_at > ${ago('$1')}`),
  };
}
export type WatchdogBuiltinStatements = ReturnType<typeof watchdogBuiltinStatements>;

/** The built-in checks' statements bound to the schema's pool. */
export class WatchdogBuiltinQueries {
  private readonly st: WatchdogBuiltinStatements;

  constructor(
    private readonly pool: Executor,
    set: StatementSet,
  ) {
    this.st = watchdogBuiltinStatements(set);
  }

  /** Queues whose due jobs waited longer than `olderThanMs`. */
  queueLag(p: { olderThanMs: number }): Promise<LaggingQueueRow[]> {
    return run(this.pool, this.st.queueLag, [p.olderThanMs]);
  }

  /** Due jobs (due longer than `graceMs`) of kinds no process seen within `liveWithinMs` runs on their queue. */
  unrunnable(p: { graceMs: number; liveWithinMs: number }): Promise<UnrunnableRow[]> {
    return run(this.pool, this.st.unrunnable, [p.graceMs, p.liveWithinMs]);
  }

  /** Running jobs whose lease expired more than `graceMs` ago. */
  async expiredLeases(p: { graceMs: number }): Promise<ExpiredLeasesRow> {
    const [row] = await run(this.pool, this.st.expiredLeases, [p.graceMs]);
    return row ?? { count: 0, oldest_ms: null, ids: null };
  }

  /** Jobs discarded within `windowMs`, per kind. */
  discarded(p: { windowMs: number }): Promise<DiscardedRow[]> {
    return run(this.pool, this.st.discarded, [p.windowMs]);
  }

  /** Held and abandoned jobs, per kind. */
  waiting(): Promise<WaitingRow[]> {
    return run(this.pool, this.st.waiting, []);
  }

  /** Daemons that should have a leader (`names`, and those live processes host), with their leases. */
  daemons(p: { names: readonly string[]; liveWithinMs: number; leasePrefix: string }): Promise<DaemonLeaseRow[]> {
    return run(this.pool, this.st.daemons, [p.names, p.liveWithinMs, p.leasePrefix]);
  }

  /** Processes seen within `liveWithinMs`. */
  async liveProcesses(p: { liveWithinMs: number }): Promise<number> {
    const [row] = await run(this.pool, this.st.liveProcesses, [p.liveWithinMs]);
    return row?.n ?? 0;
  }
}
