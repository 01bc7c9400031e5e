import { run, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** One line a handler logged. */
export interface JobLogLine {
  attempt: number;
  seq: number;
  at: Date;
  level: string;
  msg: string;
  fields: Record<string, unknown> | null;
}

/** Statements of the job log. */
export function jobLogStatements(set: StatementSet) {
  return {
    // ON CONFLICT: a batch written twice (a retried flush) adds nothing. Kept only while the
    // attempt's number is this run's ($8 its lease token): not when the job's attempt went back
    // below it (the rescuer gave it back: no start was recorded) or another claim runs under it —
    // a run frozen past its lease in its first moments must not fill, or take the seqs of, the
    // log of the run that has its number now.
    insert: set.plain<never, [jobId: string, attempt: number, seqs: number[], ats: Date[], levels: string[], msgs: string[], fields: (string | null)[], token: string]>(
      (s) => `INSERT INTO ${s}.job_logs (job_id, attempt, seq, at, level, msg, fields)
        SELECT $1, $2, u.seq, u.at, u.level, u.msg, u.fields::jsonb
        FROM unnest($3::int[], $4::timestamptz[], $5::text[], $6::text[], $7::text[]) AS u(seq, at, level, msg, fields)
        WHERE EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = $1 AND (j.attempt > $2 OR (j.attempt = $2 AND j.lease_token = $8::bigint)))
           OR EXISTS (SELECT 1 FROM ${s}.jobs_history h WHERE h.id = $1 AND (h.attempt > $2 OR (h.attempt = $2 AND h.lease_token = $8::bigint)))
        ON CONFLICT DO NOTHING`,
    ),
    list: set.plain<JobLogLine, [jobId: string, limit: number]>((s) => `SELECT attempt, seq, at, level, msg, fields FROM ${s}.job_logs WHERE job_id = $1 ORDER BY attempt, seq LIMIT $2`),
  };
}
export type JobLogStatements = ReturnType<typeof jobLogStatements>;

/** The job log's statements bound to the schema's pool. */
export class JobLogQueries {
  private readonly st: JobLogStatements;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
  ) {
    this.st = jobLogStatements(set);
  }

  /**
   * Writes one attempt's lines in one statement: nothing when the job is gone, or when the attempt
   * number is no longer this run's (`token`, its claim's lease token; see the statement).
   */
  async insert(p: { jobId: string; attempt: number; token: string; lines: readonly Omit<JobLogLine, 'attempt'>[] }): Promise<void> {
    const lines = p.lines;
    if (lines.length === 0) return;
    await run(this.db, this.st.insert, [
      p.jobId,
      p.attempt,
      lines.map((l) => l.seq),
      lines.map((l) => l.at),
      lines.map((l) => l.level),
      lines.map((l) => l.msg),
      lines.map((l) => (l.fields ? JSON.stringify(l.fields) : null)),
      p.token,
    ]);
  }

  /** A job's log lines, by attempt then order. */
  list(p: { jobId: string; limit: number }): Promise<JobLogLine[]> {
    return run(this.db, this.st.list, [p.jobId, p.limit]);
  }
}
