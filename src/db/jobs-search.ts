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
 * Where a search reads: `jobs_all` (the jobs table and the history of finished jobs, a view) when
 * the schema has it, else `jobs`. The statements below are the one place the dashboard's and the
 * admin API's searches are written; both relations must have the jobs table's columns.
 */
export type SearchSource = 'jobs' | 'jobs_all';

/** The view of every job, current and finished, that a later migration adds (found within a minute of it). */
const HISTORY_VIEW = 'jobs_all';

// The window is a range of the primary key: ids at or above (the newest id − window). Ids come
// from one identity sequence, so this is "the newest `window` jobs" to within gaps, and the
// planner reads it as an index range scan, never a sequential scan of history.
const SEARCH = (s: string, from: SearchSource) => `
  ($1::text IS NULL OR kind = $1) AND ($2::text IS NULL OR queue = $2)
  AND ($3::text[] IS NULL OR state::text = ANY($3)) AND ($4::bigint IS NULL OR id < $4)
  AND ($5::jsonb IS NULL OR payload @> $5) AND ($6::timestamptz IS NULL OR created_at >= $6)
  AND ($7::timestamptz IS NULL OR created_at < $7)
  AND ($8::bigint IS NULL OR id >= (SELECT coalesce(max(id), 0) FROM ${s}.${from}) - $8)`;

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
export function jobSearchStatements(set: StatementSet, from: SearchSource) {
  return {
    search: set.plain<JobRow, [...SearchParams, limit: number]>((s) => `SELECT ${JOB_COLUMNS} FROM ${s}.${from} WHERE ${SEARCH(s, from)} ORDER BY id DESC LIMIT $9`),
    // A count that stops at $9 + 1 rows: "more than N" instead of a count(*) over millions.
    count: set.plain<{ n: number }, [...SearchParams, cap: number]>((s) => `SELECT count(*)::int AS n FROM (SELECT 1 FROM ${s}.${from} WHERE ${SEARCH(s, from)} LIMIT $9 + 1) capped`),
  };
}

/** The search statements bound to the schema's pool. */
export class JobSearchQueries {
  private readonly st: Record<SearchSource, ReturnType<typeof jobSearchStatements>>;
  private readonly probe: { text: string; values: string[] };
  private source: { from: SearchSource; at: number } | undefined;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
  ) {
    this.st = { jobs: jobSearchStatements(set, 'jobs'), jobs_all: jobSearchStatements(set, 'jobs_all') };
    this.probe = { text: 'SELECT to_regclass($1) IS NOT NULL AS found', values: [`${set.q}.${HISTORY_VIEW}`] };
  }

  /** Jobs matching the search, newest first. */
  async search(p: { search: JobSearch; limit: number }): Promise<JobRecord[]> {
    const rows = await run(this.db, (await this.statements()).search, [...searchValues(p.search), p.limit]);
    return rows.map(toJobRecord);
  }

  /** How many jobs match, counting at most `cap + 1`. */
  async count(p: { search: JobSearch; cap: number }): Promise<number> {
    const [row] = await run(this.db, (await this.statements()).count, [...searchValues(p.search), p.cap]);
    return row?.n ?? 0;
  }

  /** The relation searches read now: `jobs_all` once it exists (checked again each minute until then), else `jobs`. */
  async from(): Promise<SearchSource> {
    const now = Date.now();
    if (this.source && (this.source.from === 'jobs_all' || now - this.source.at < 60_000)) return this.source.from;
    const { rows } = await this.db.query(this.probe);
    this.source = { from: (rows[0] as { found?: boolean } | undefined)?.found ? 'jobs_all' : 'jobs', at: now };
    return this.source.from;
  }

  private async statements(): Promise<ReturnType<typeof jobSearchStatements>> {
    return this.st[await this.from()];
  }
}
