import { run, runCount, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** One process's counts for one minute, queue and kind, as it adds them to `job_stats`. */
export interface JobStatsDelta {
  bucket: Date;
  queue: string;
  kind: string;
  completed: number;
  failed: number;
  discarded: number;
  started: number;
  waitMsSum: number;
  waitMsMax: number;
  runMsSum: number;
  runMsMax: number;
}

/** One point of a chart's series: the sums of a bucket, over the queues (and kinds) asked for. */
export interface JobStatsPoint {
  bucket: Date;
  completed: number;
  failed: number;
  discarded: number;
  started: number;
  /** Mean wait from due to start, ms (null when nothing started). */
  waitMsAvg: number | null;
  waitMsMax: number;
  /** Mean handler run time, ms (null when nothing finished). */
  runMsAvg: number | null;
}

interface PointRow {
  bucket: Date;
  completed: number;
  failed: number;
  discarded: number;
  started: number;
  wait_ms_sum: number;
  wait_ms_max: number;
  run_ms_sum: number;
}

const SUMS = `sum(completed)::int AS completed, sum(failed)::int AS failed, sum(discarded)::int AS discarded, sum(started)::int AS started,
  sum(wait_ms_sum)::float8 AS wait_ms_sum, max(wait_ms_max)::float8 AS wait_ms_max, sum(run_ms_sum)::float8 AS run_ms_sum`;

const MERGE_SET = `completed = s.completed + EXCLUDED.completed, failed = s.failed + EXCLUDED.failed,
  discarded = s.discarded + EXCLUDED.discarded, started = s.started + EXCLUDED.started,
  wait_ms_sum = s.wait_ms_sum + EXCLUDED.wait_ms_sum, wait_ms_max = greatest(s.wait_ms_max, EXCLUDED.wait_ms_max),
  run_ms_sum = s.run_ms_sum + EXCLUDED.run_ms_sum, run_ms_max = greatest(s.run_ms_max, EXCLUDED.run_ms_max)`;

/** Statements of the per-minute aggregates. */
export function jobStatsStatements(set: StatementSet) {
  return {
    add: set.plain<never, [writer: string, buckets: Date[], queues: string[], kinds: string[], c: number[], f: number[], d: number[], st: number[], ws: number[], wm: number[], rs: number[], rm: number[]]>(
      (s) => `INSERT INTO ${s}.job_stats AS s (width_s, bucket, queue, kind, writer, completed, failed, discarded, started, wait_ms_sum, wait_ms_max, run_ms_sum, run_ms_max)
        SELECT 60, u.b, u.q, u.k, $1, u.c, u.f, u.d, u.st, u.ws, u.wm, u.rs, u.rm
        FROM unnest($2::timestamptz[], $3::text[], $4::text[], $5::int[], $6::int[], $7::int[], $8::int[], $9::float8[], $10::float8[], $11::float8[], $12::float8[])
          AS u(b, q, k, c, f, d, st, ws, wm, rs, rm)
        ON CONFLICT (width_s, bucket, queue, kind, writer) DO UPDATE SET ${MERGE_SET}`,
    ),
    // Merges each writer's minute rows older than $1 seconds into one row (writer ''), in one
    // statement: the DELETE returns what the INSERT adds, so nothing is counted twice or lost.
    compact: set.plain<never, [olderThanS: number]>(
      (s) => `WITH gone AS (
          DELETE FROM ${s}.job_stats WHERE width_s = 60 AND writer <> '' AND bucket < now() - $1::int * interval '1 second'
          RETURNING *
        )
        INSERT INTO ${s}.job_stats AS s (width_s, bucket, queue, kind, writer, completed, failed, discarded, started, wait_ms_sum, wait_ms_max, run_ms_sum, run_ms_max)
        SELECT 60, bucket, queue, kind, '', sum(completed), sum(failed), sum(discarded), sum(started), sum(wait_ms_sum), max(wait_ms_max), sum(run_ms_sum), max(run_ms_max)
        FROM gone GROUP BY bucket, queue, kind
        ON CONFLICT (width_s, bucket, queue, kind, writer) DO UPDATE SET ${MERGE_SET}`,
    ),
    // Hour rows for the whole hours before the current one that have none yet (recomputed from the
    // minute rows; the last two are recomputed each time, as a late flush may still add to them).
    rollUp: set.plain<never, []>(
      (s) => `INSERT INTO ${s}.job_stats AS s (width_s, bucket, queue, kind, writer, completed, failed, discarded, started, wait_ms_sum, wait_ms_max, run_ms_sum, run_ms_max)
        SELECT 3600, date_trunc('hour', bucket), queue, kind, '', sum(completed), sum(failed), sum(discarded), sum(started), sum(wait_ms_sum), max(wait_ms_max), sum(run_ms_sum), max(run_ms_max)
        FROM ${s}.job_stats WHERE width_s = 60 AND bucket < date_trunc('hour', now()) AND bucket >= date_trunc('hour', now()) - interval '2 hours'
        GROUP BY 2, 3, 4
        ON CONFLICT (width_s, bucket, queue, kind, writer) DO UPDATE SET completed = EXCLUDED.completed, failed = EXCLUDED.failed,
          discarded = EXCLUDED.discarded, started = EXCLUDED.started, wait_ms_sum = EXCLUDED.wait_ms_sum, wait_ms_max = EXCLUDED.wait_ms_max,
          run_ms_sum = EXCLUDED.run_ms_sum, run_ms_max = EXCLUDED.run_ms_max`,
    ),
    prune: set.plain<never, [minuteDays: number, hourDays: number]>(
      (s) => `DELETE FROM ${s}.job_stats WHERE (width_s = 60 AND bucket < now() - $1::int * interval '1 day')
        OR (width_s = 3600 AND bucket < now() - $2::int * interval '1 day')`,
    ),
    // A series over the last $2 seconds in buckets of $3 seconds (a multiple of the rows' width $1).
    series: set.plain<PointRow, [width: number, sinceS: number, stepS: number, queue: string | null]>(
      (s) => `SELECT to_timestamp(floor(extract(epoch FROM bucket) / $3) * $3) AS bucket, ${SUMS}
        FROM ${s}.job_stats WHERE width_s = $1 AND bucket >= now() - $2::int * interval '1 second'
          AND ($4::text IS NULL OR queue = $4)
        GROUP BY 1 ORDER BY 1`,
    ),
    // Per queue over the last $1 seconds (minute rows): the overview's problem queues.
    perQueue: set.plain<PointRow & { queue: string }, [sinceS: number]>(
      (s) => `SELECT queue, now() AS bucket, ${SUMS} FROM ${s}.job_stats
        WHERE width_s = 60 AND bucket >= now() - $1::int * interval '1 second' GROUP BY queue ORDER BY queue`,
    ),
  };
}

function toPoint(r: PointRow): JobStatsPoint {
  return {
    bucket: r.bucket,
    completed: r.completed,
    failed: r.failed,
    discarded: r.discarded,
    started: r.started,
    waitMsAvg: r.started > 0 ? r.wait_ms_sum / r.started : null,
    waitMsMax: r.wait_ms_max,
    runMsAvg: r.completed + r.failed > 0 ? r.run_ms_sum / (r.completed + r.failed) : null,
  };
}

/** The aggregates' statements bound to the schema's pool. */
export class JobStatsQueries {
  private readonly st: ReturnType<typeof jobStatsStatements>;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
  ) {
    this.st = jobStatsStatements(set);
  }

  /** Adds one writer's counts (one statement for every minute, queue and kind of the flush). */
  async add(writer: string, deltas: readonly JobStatsDelta[]): Promise<void> {
    if (deltas.length === 0) return;
    const col = <T>(f: (d: JobStatsDelta) => T) => deltas.map(f);
    await run(this.db, this.st.add, [
      writer,
      col((d) => d.bucket),
      col((d) => d.queue),
      col((d) => d.kind),
      col((d) => d.completed),
      col((d) => d.failed),
      col((d) => d.discarded),
      col((d) => d.started),
      col((d) => d.waitMsSum),
      col((d) => d.waitMsMax),
      col((d) => d.runMsSum),
      col((d) => d.runMsMax),
    ]);
  }

  /** Compacts, rolls up and prunes; returns the rows pruned. */
  async maintain(p: { compactAfterS: number; minuteDays: number; hourDays: number }): Promise<number> {
    await run(this.db, this.st.compact, [p.compactAfterS]);
    await run(this.db, this.st.rollUp, []);
    return runCount(this.db, this.st.prune, [p.minuteDays, p.hourDays]);
  }

  /** A series of points over the last `sinceS` seconds, `stepS` apart, from minute or hour rows. */
  async series(p: { width: 60 | 3600; sinceS: number; stepS: number; queue?: string }): Promise<JobStatsPoint[]> {
    const rows = await run(this.db, this.st.series, [p.width, p.sinceS, p.stepS, p.queue ?? null]);
    return rows.map(toPoint);
  }

  /** Sums per queue over the last `sinceS` seconds. */
  async perQueue(sinceS: number): Promise<(JobStatsPoint & { queue: string })[]> {
    const rows = await run(this.db, this.st.perQueue, [sinceS]);
    return rows.map((r) => ({ ...toPoint(r), queue: r.queue }));
  }
}
