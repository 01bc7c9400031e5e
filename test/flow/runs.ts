import type pg from 'pg';

/** One recorded run of a limited job, times in ms on the database clock. */
export interface LimitRun {
  jobId: string;
  kind: string;
  key: string;
  pid: number;
  start: number;
  /**
   * When the run ended, or for a run that recorded no end (its process was killed, or its
   * database connection lost), when its attempt was ended for it (the next entry of the job's
   * error history: its lease rescued, or the attempt failed) — its slot was held until then;
   * Infinity if neither happened.
   */
  end: number;
  /** The process died during the run (no end recorded). */
  killed: boolean;
}

/** The runs recorded in `schema`.limit_runs. */
export async function limitRuns(sql: pg.Pool, schema: string, kind?: string): Promise<LimitRun[]> {
  const { rows } = await sql.query(
    `SELECT r.job_id::text, r.kind, r.key, r.pid,
            extract(epoch FROM r.started_at) * 1000 AS started,
            extract(epoch FROM coalesce(r.ended_at, (
              SELECT min((e->>'at')::timestamptz) FROM "${schema}".jobs_all j, jsonb_array_elements(coalesce(j.errors, '[]')) e
              WHERE j.id = r.job_id AND (e->>'at')::timestamptz > r.started_at))) * 1000 AS ended,
            r.ended_at IS NULL AS killed
     FROM "${schema}".limit_runs r WHERE $1::text IS NULL OR r.kind = $1`,
    [kind ?? null],
  );
  return rows.map((r: { job_id: string; kind: string; key: string; pid: number; started: string; ended: string | null; killed: boolean }) => ({
    jobId: r.job_id,
    kind: r.kind,
    key: r.key,
    pid: r.pid,
    start: Number(r.started),
    end: r.ended === null ? Infinity : Number(r.ended),
    killed: r.killed,
  }));
}

/**
 * The starts the rate limit `name` (every rate limit, without one) counted, in ms on the database clock: each claim's time (taken
 * in claim_limited, recorded by the trigger of limitRunsTable), once per start it took.
 */
export async function rateStarts(sql: pg.Pool, schema: string, name?: string): Promise<number[]> {
  const { rows } = await sql.query(`SELECT extract(epoch FROM at) * 1000 AS at, n FROM "${schema}".limit_rate_claims WHERE $1::text IS NULL OR name = $1 ORDER BY at`, [name ?? null]);
  return rows.flatMap((r: { at: string; n: number }) => Array.from({ length: r.n }, () => Number(r.at)));
}
