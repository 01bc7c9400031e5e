import { run, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** One job to insert, already validated and serialised by the jobs layer. */
export interface JobInsertRow {
  kind: string;
  queue: string;
  priority: number;
  /** Absolute run time, or null to use the database clock plus `delayMs`. */
  runAt: Date | null;
  delayMs: number | null;
  /** The payload as JSON text. */
  payload: string;
  maxAttempts: number;
  atMostOnce: boolean;
  dedupeKey: string | null;
  /** Absolute deadline, or null to use the database clock plus `maxAgeMs` (when given). */
  expiresAt: Date | null;
  maxAgeMs: number | null;
  traceContext: string | null;
}

/** What an insert did for one input row, in input order. */
export interface JobInsertResult {
  id: string;
  /** True when a pending job with the same dedupe key absorbed this one. */
  deduped: boolean;
}

// One statement shape serves a single enqueue, a bulk enqueue and a coalesced batch: arrays in,
// one row per input out (in input order). Ids are drawn from the sequence in the input CTE, so an
// inserted row is matched to its input by id; a row absorbed by the dedupe index is matched by its
// (kind, dedupe_key) instead. DO UPDATE (rather than DO NOTHING) makes RETURNING yield the existing
// job even when it was committed after this statement's snapshot.
function insertText(s: string, onConflict: string): string {
  return `
WITH input AS MATERIALIZED (
  SELECT nextval('${s}.jobs_id_seq') AS id, u.*
  FROM unnest($1::text[], $2::text[], $3::smallint[], $4::timestamptz[], $5::float8[], $6::text[], $7::int[],
              $8::bool[], $9::text[], $10::timestamptz[], $11::float8[], $12::text[])
       WITH ORDINALITY AS u(kind, queue, priority, run_at, delay_ms, payload, max_attempts, at_most_once,
                            dedupe_key, expires_at, max_age_ms, trace_context, ord)
), ins AS (
  INSERT INTO ${s}.jobs AS j (id, kind, queue, priority, run_at, payload, max_attempts, at_most_once,
                              dedupe_key, expires_at, trace_context)
  SELECT id, kind, queue, priority,
         coalesce(run_at, now() + coalesce(delay_ms, 0) * interval '1 millisecond'),
         payload::jsonb, max_attempts, at_most_once, dedupe_key,
         coalesce(expires_at, now() + max_age_ms * interval '1 millisecond'),
         trace_context::jsonb
  FROM input ORDER BY ord
  ON CONFLICT (kind, dedupe_key) WHERE dedupe_key IS NOT NULL AND state = 'available'
  DO UPDATE SET ${onConflict}
  RETURNING j.id, j.kind, j.dedupe_key
)
SELECT coalesce(a.id, b.id)::text AS id, a.id IS NULL AS deduped
FROM input i
LEFT JOIN ins a ON a.id = i.id
LEFT JOIN ins b ON a.id IS NULL AND b.kind = i.kind AND b.dedupe_key = i.dedupe_key
ORDER BY i.ord`;
}

/** The insert statements of one schema. */
export function jobInsertStatements(set: StatementSet) {
  return {
    // A plain dedupe hit leaves the pending job as it is.
    insert: set.named('job_insert', (s) => insertText(s, 'dedupe_key = EXCLUDED.dedupe_key')),
    // A debounced hit moves the pending job's run time and keeps the latest payload.
    insertDebounced: set.named('job_insert_debounced', (s) =>
      insertText(s, 'run_at = EXCLUDED.run_at, payload = EXCLUDED.payload'),
    ),
  };
}
export type JobInsertStatements = ReturnType<typeof jobInsertStatements>;

/**
 * Inserts jobs in one statement. Rows sharing a (kind, dedupe key) must have been merged by the
 * caller: one statement may not touch the same pending job twice.
 */
export async function jobInsert(
  db: Executor,
  stmts: JobInsertStatements,
  rows: readonly JobInsertRow[],
  debounced: boolean,
): Promise<JobInsertResult[]> {
  const cols: unknown[][] = Array.from({ length: 12 }, () => new Array(rows.length));
  rows.forEach((r, i) => {
    cols[0]![i] = r.kind;
    cols[1]![i] = r.queue;
    cols[2]![i] = r.priority;
    cols[3]![i] = r.runAt;
    cols[4]![i] = r.delayMs;
    cols[5]![i] = r.payload;
    cols[6]![i] = r.maxAttempts;
    cols[7]![i] = r.atMostOnce;
    cols[8]![i] = r.dedupeKey;
    cols[9]![i] = r.expiresAt;
    cols[10]![i] = r.maxAgeMs;
    cols[11]![i] = r.traceContext;
  });
  return run<JobInsertResult>(db, debounced ? stmts.insertDebounced : stmts.insert, cols);
}

/** An enqueue through the schema's SQL function: NULL options take the kind's registered defaults. */
export interface SqlEnqueueRow {
  kind: string;
  payload: string;
  queue: string | null;
  runAt: Date | null;
  delayMs: number | null;
  priority: number | null;
  maxAttempts: number | null;
  dedupeKey: string | null;
  debounceMs: number | null;
  expiresAt: Date | null;
  maxAgeMs: number | null;
}

/**
 * Enqueues through the SQL `enqueue()` function (kinds this process does not define, e.g. the CLI).
 * `deduped` is read from the statement's snapshot: a job the function just inserted is not visible
 * to the statement that called it, a pending job that absorbed the call is.
 */
export async function jobEnqueueViaSql(db: Executor, set: StatementSet, r: SqlEnqueueRow): Promise<JobInsertResult> {
  const [row] = await run<JobInsertResult>(
    db,
    set.plain(
      (s) => `WITH e AS (
        SELECT ${s}.enqueue($1, $2::jsonb, queue => $3, run_at => $4, priority => $5, max_attempts => $6, dedupe_key => $7,
          debounce => $8::float8 * interval '1 millisecond',
          expires_at => coalesce($9, now() + $10::float8 * interval '1 millisecond'),
          delay => $11::float8 * interval '1 millisecond') AS id)
      SELECT e.id::text AS id, EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.id = e.id) AS deduped FROM e`,
    ),
    [r.kind, r.payload, r.queue, r.runAt, r.priority, r.maxAttempts, r.dedupeKey, r.debounceMs, r.expiresAt, r.maxAgeMs, r.delayMs],
  );
  return row!;
}
