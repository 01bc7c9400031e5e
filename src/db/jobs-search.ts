import { run, type Executor } from './executor.js';
import { JOB_COLUMNS, toJobRecord, type JobRecord, type JobRow, type JobState } from './job-row.js';
import type { StatementSet } from './statements.js';

/** A search of jobs: the admin filter plus payload containment and a creation-time range. */
export interface JobSearch {
  kind?: string;
  queue?: string;
  states?: JobState[];
  /** JSON the payload must contain (`payload @> $`): `{ orderId: 'o-1' }`. */
  payload?: Record<string, unknown>;
  createdAfter?: Date;
  createdBefore?: Date;
  beforeId?: string;
  /**
   * Only the newest `window` jobs (by id) are looked at, so a search over a table of millions of
   * finished jobs reads a bounded range of the primary key, never the whole history. Null: no bound
   * (for unfinished states, which their partial indexes keep small).
   */
  window: number | null;
}

/**
 * Searches read `jobs_all` (migration 0008: the jobs table and the history of finished jobs, a
 * view); the statements below are the one place the dashboard's and the admin API's searches are
 * written.
 */
// The window is a range of the primary key: ids at or above (the newest id − window). Ids come
// from one identity sequence, so this is "the newest `window` jobs" to within gaps, and the
// planner reads it as an index range scan, never a sequential scan of history.
const SEARCH = (s: string) => `
  ($1::text IS NULL OR kind = $1) AND ($2::text IS NULL OR queue = $2)
  AND ($3::text[] IS NULL OR state::text = ANY($3)) AND ($4::bigint IS NULL OR id < $4)
  AND ($5::jsonb IS NULL OR payload @> $5) AND ($6::timestamptz IS NULL OR created_at >= $6)
  AND ($7::timestamptz IS NULL OR created_at < $7)
  AND ($8::bigint IS NULL OR id >= (SELECT coalesce(max(id), 0) FROM ${s}.jobs_all) - $8)`;

type SearchParams = [
  kind: string | null,
  queue: string | null,
  states: readonly JobState[] | null,
  beforeId: string | null,
  payload: string | null,
  after: Date | null,
  before: Date | null,
  window: number | null,
];

function searchValues(f: JobSearch): SearchParams {
  return [f.kind ?? null, f.queue ?? null, f.states ?? null, f.beforeId ?? null, f.payload ? JSON.stringify(f.payload) : null, f.createdAfter ?? null, f.createdBefore ?? null, f.window];
}

/** Search statements of one schema. */
export function jobSearchStatements(set: StatementSet) {
  return {
    search: set.plain<JobRow, [...SearchParams, limit: number]>((s) => `SELECT ${JOB_COLUMNS} FROM ${s}.jobs_all WHERE ${SEARCH(s)} ORDER BY id DESC LIMIT $9`),
    // A count that stops at $9 + 1 rows: "more than N" instead of a count(*) over millions.
    count: set.plain<{ n: number }, [...SearchParams, cap: number]>((s) => `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${s}.jobs_all WHERE ${SEARCH(s)} LIMIT $9 + 1) capped`),
  };
}

/** The search statements bound to the schema's pool. */
export class JobSearchQueries {
  private readonly st: ReturnType<typeof jobSearchStatements>;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
  ) {
    this.st = jobSearchStatements(set);
  }

  /** Jobs matching the search, newest first. */
  async search(p: { search: JobSearch; limit: number }): Promise<JobRecord[]> {
    const rows = await run(this.db, this.st.search, [...searchValues(p.search), p.limit]);
    return rows.map(toJobRecord);
  }

  /** How many jobs match, counting at most `cap + 1`. */
  async count(p: { search: JobSearch; cap: number }): Promise<number> {
    const [row] = await run(this.db, this.st.count, [...searchValues(p.search), p.cap]);
    return row?.n ?? 0;
  }
}
