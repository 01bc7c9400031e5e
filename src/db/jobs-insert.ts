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
  /**
   * How the dedupe key holds. Rows with a key of any scope but `pending` are written through the
   * SQL function (see jobEnqueueViaSql), never by the batch statements below.
   */
  dedupeScope: 'pending' | 'active' | 'ever' | 'within';
  /** The fleet-wide limits the job holds while it runs (flow control); none when absent or null: see LimitQueries. */
  limitKeys?: string[] | null;
}

/** What an insert did for one input row, in input order. */
export interface JobInsertResult {
  id: string;
  /** True when a pending job with the same dedupe key absorbed this one. */
  deduped: boolean;
}

// Rows travel as one JSON array of arrays (one parameter): node-postgres escapes every element of a
// text[] parameter with two regular expressions, which cost more per row than the insert itself,
// and the payloads, already JSON, go in as they are. Ids are drawn from the sequence in the input
// CTE, so each output row is matched to its input by id.
const INPUT = (s: string) => `
WITH input AS MATERIALIZED (
  SELECT nextval('${s}.jobs_id_seq') AS id, e.ord,
         e.r->>0 AS kind, e.r->>1 AS queue, (e.r->>2)::smallint AS priority, (e.r->>3)::timestamptz AS run_at,
         (e.r->>4)::float8 AS delay_ms, e.r->5 AS payload, (e.r->>6)::int AS max_attempts, (e.r->>7)::bool AS at_most_once,
         e.r->>8 AS dedupe_key, (e.r->>9)::timestamptz AS expires_at, (e.r->>10)::float8 AS max_age_ms,
         nullif(e.r->11, 'null'::jsonb) AS trace_context,
         CASE WHEN jsonb_typeof(e.r->12) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(e.r->12)) END AS limit_keys
  FROM jsonb_array_elements($1::jsonb) WITH ORDINALITY AS e(r, ord)
)`;

const COLUMNS = `id, kind, queue, priority, run_at, payload, max_attempts, at_most_once, dedupe_key, expires_at, trace_context, limit_keys`;
const VALUES = `id, kind, queue, priority,
         coalesce(run_at, now() + coalesce(delay_ms, 0) * interval '1 millisecond'),
         payload, max_attempts, at_most_once, dedupe_key,
         coalesce(expires_at, now() + max_age_ms * interval '1 millisecond'),
         trace_context, limit_keys`;

// Rows with a dedupe key: a row absorbed by the dedupe index is matched by its (kind, dedupe_key).
// DO UPDATE (rather than DO NOTHING) makes RETURNING yield the existing job even when it was
// committed after this statement's snapshot.
function conflictText(s: string, onConflict: string, notify?: string): string {
  return `${INPUT(s)}, ins AS (
  INSERT INTO ${s}.jobs AS j (${COLUMNS})
  SELECT ${VALUES}
  FROM input ORDER BY ord
  ON CONFLICT (kind, dedupe_key) WHERE dedupe_key IS NOT NULL AND state = 'available'
  DO UPDATE SET ${onConflict}
  RETURNING j.id, j.kind, j.dedupe_key
)
SELECT coalesce(a.id, b.id)::text AS id, a.id IS NULL AS deduped${notify ?? ''}
FROM input i
LEFT JOIN ins a ON a.id = i.id
LEFT JOIN ins b ON a.id IS NULL AND b.kind = i.kind AND b.dedupe_key = i.dedupe_key
ORDER BY i.ord`;
}

/** The parameters of an `enqueue_job()` call ($1 to $12, in order), as {@link ENQUEUE_CALL} reads them. */
type ViaSqlParams = [
  kind: string,
  payload: string,
  queue: string | null,
  runAt: Date | null,
  priority: number | null,
  maxAttempts: number | null,
  dedupeKey: string | null,
  debounceMs: number | null,
  expiresAt: Date | null,
  maxAgeMs: number | null,
  delayMs: number | null,
  traceContext: string | null,
];

/** The call of the schema's `enqueue_job()` with {@link ViaSqlParams}, as a FROM item named `e`. */
const ENQUEUE_CALL = (s: string) => `${s}.enqueue_job($1, $2::jsonb, queue => $3, run_at => $4, priority => $5,
          max_attempts => $6, dedupe_key => $7, debounce => $8::float8 * interval '1 millisecond',
          expires_at => coalesce($9, now() + $10::float8 * interval '1 millisecond'),
          trace_context => $12::jsonb, delay => $11::float8 * interval '1 millisecond') e`;

/** The insert statements of one schema. */
export function jobInsertStatements(set: StatementSet) {
  return {
    // No row has a dedupe key: a plain INSERT. ON CONFLICT would make every row a speculative
    // insertion (an arbiter check and an extra WAL record per row) for nothing.
    insertPlain: set.named<JobInsertResult, [rows: string]>(
      'job_insert_plain',
      (s) => `${INPUT(s)}, ins AS (
  INSERT INTO ${s}.jobs (${COLUMNS})
  SELECT ${VALUES}
  FROM input ORDER BY ord
)
SELECT id::text, false AS deduped FROM input ORDER BY ord`,
    ),
    // A plain dedupe hit leaves the pending job as it is.
    insert: set.named<JobInsertResult, [rows: string]>('job_insert', (s) => conflictText(s, 'dedupe_key = EXCLUDED.dedupe_key')),
    // A debounced hit moves the pending job's run time and keeps the latest payload.
    // A debounced hit moved a pending job's run time: the insert trigger did not see it, so the
    // statement says when it is due (schema names are plain identifiers, safe as a literal).
    insertDebounced: set.named<JobInsertResult & { notified: unknown }, [rows: string]>('job_insert_debounced', (s) =>
      conflictText(
        s,
        // The payload changes, so do the limit keys computed from it.
        'run_at = EXCLUDED.run_at, payload = EXCLUDED.payload, limit_keys = EXCLUDED.limit_keys',
        `, CASE WHEN a.id IS NULL THEN pg_notify('${set.schema}:jobs', i.queue || ' ' || ceil(coalesce(i.delay_ms, 0))::bigint) END AS notified`,
      ),
    ),
    viaSql: set.named<JobInsertResult, ViaSqlParams>('job_enqueue_sql', (s) => `SELECT e.job_id::text AS id, e.deduped FROM ${ENQUEUE_CALL(s)}`),
    // The same, for a job of a limited kind: the limit keys computed from its payload are set by
    // set_limit_keys in the same statement (so no claim sees the job without them), only on a job
    // this call inserted.
    viaSqlLimited: set.named<JobInsertResult, [...ViaSqlParams, limitKeys: readonly string[]]>(
      'job_enqueue_sql_limited',
      (s) => `SELECT e.job_id::text AS id, e.deduped, ${s}.set_limit_keys(e.job_id, $13::text[], NOT e.deduped) AS stamped
        FROM ${ENQUEUE_CALL(s)}`,
    ),
    // Throttle (a dedupe-key mode): the first enqueue of a key takes it for $2 ms, in
    // dedupe_keys (namespaced by a \x01 prefix, so it never meets a key of the other scopes);
    // a repeat within the window adds nothing and gets the first job. ON CONFLICT DO UPDATE
    // returns the key's row even when its holder committed after this statement began; an
    // expired key is taken over. The job keeps its key in dedupe_given, so the pending-scope
    // index does not apply to it.
    insertThrottled: set.named<JobInsertResult, [rows: string, throttleMs: number]>(
      'job_insert_throttled',
      (s) => `${INPUT(s)}, k AS (
  INSERT INTO ${s}.dedupe_keys AS d (kind, key, job_id, expires_at)
  SELECT kind, chr(1) || 'throttle:' || dedupe_key, id, now() + $2::float8 * interval '1 millisecond' FROM input
  ON CONFLICT (kind, key) DO UPDATE SET
    job_id = CASE WHEN d.expires_at <= now() THEN EXCLUDED.job_id ELSE d.job_id END,
    expires_at = CASE WHEN d.expires_at <= now() THEN EXCLUDED.expires_at ELSE d.expires_at END
  RETURNING d.job_id
), ins AS (
  INSERT INTO ${s}.jobs (id, kind, queue, priority, run_at, payload, max_attempts, at_most_once, dedupe_given, dedupe_scope, expires_at, trace_context, limit_keys)
  SELECT id, kind, queue, priority, coalesce(run_at, now() + coalesce(delay_ms, 0) * interval '1 millisecond'), payload, max_attempts, at_most_once,
         dedupe_key, 'throttle', coalesce(expires_at, now() + max_age_ms * interval '1 millisecond'), trace_context, limit_keys
  FROM input WHERE id = (SELECT job_id FROM k)
)
SELECT k.job_id::text AS id, k.job_id <> i.id AS deduped FROM k, input i`,
    ),
  };
}
export type JobInsertStatements = ReturnType<typeof jobInsertStatements>;

/** One row as a JSON array, in INPUT's column order; the payload and trace context are JSON already. */
function rowJson(r: JobInsertRow): string {
  return `[${JSON.stringify(r.kind)},${JSON.stringify(r.queue)},${r.priority},${r.runAt ? `"${r.runAt.toISOString()}"` : 'null'},${r.delayMs ?? 'null'},${r.payload},${r.maxAttempts},${r.atMostOnce},${r.dedupeKey === null ? 'null' : JSON.stringify(r.dedupeKey)},${r.expiresAt ? `"${r.expiresAt.toISOString()}"` : 'null'},${r.maxAgeMs ?? 'null'},${r.traceContext ?? 'null'},${r.limitKeys ? JSON.stringify(r.limitKeys) : 'null'}]`;
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
  /** W3C trace context as JSON text, or null. */
  traceContext?: string | null;
  /** The job's limit keys (a limited kind), set on the job the call inserts. */
  limitKeys?: readonly string[] | null;
}

/**
 * The enqueue statements bound to the schema's pool. Each takes `db`, the caller's transaction,
 * when the enqueue is part of it (the outbox pattern); without it the statement runs on the pool.
 */
export class JobInsertQueries {
  /** The statements themselves, for diagnostics that run them by hand (bench/). */
  readonly statements: JobInsertStatements;

  constructor(
    private readonly pool: Executor,
    set: StatementSet,
  ) {
    this.statements = jobInsertStatements(set);
  }

  /**
   * Inserts jobs in one statement. Rows sharing a (kind, dedupe key) must have been merged by the
   * caller: one statement may not touch the same pending job twice.
   */
  async insert(p: { rows: readonly JobInsertRow[]; debounced: boolean; db?: Executor }): Promise<JobInsertResult[]> {
    const st = this.statements;
    const keyed = p.rows.some((r) => r.dedupeKey !== null);
    const stmt = !keyed ? st.insertPlain : p.debounced ? st.insertDebounced : st.insert;
    const out = await run(p.db ?? this.pool, stmt, [`[${p.rows.map(rowJson).join(',')}]`]);
    return p.debounced ? out.map((r) => ({ id: r.id, deduped: r.deduped })) : out;
  }

  /**
   * Inserts one job under a throttle: the first enqueue of its (kind, dedupe key) within
   * `throttleMs` inserts it; a repeat within the window inserts nothing and returns that job
   * (`deduped`).
   */
  async insertThrottled(p: { row: JobInsertRow; throttleMs: number; db?: Executor }): Promise<JobInsertResult> {
    const [out] = await run(p.db ?? this.pool, this.statements.insertThrottled, [`[${rowJson(p.row)}]`, p.throttleMs]);
    return out!;
  }

  /**
   * Enqueues through the SQL `enqueue_job()` function: kinds this process does not define (e.g. the
   * CLI), and keys of the `active`, `ever` and `within` dedupe scopes, whose rules live there. The
   * function says itself whether an existing job absorbed the call.
   */
  async viaSql(r: SqlEnqueueRow & { db?: Executor }): Promise<JobInsertResult> {
    const values: ViaSqlParams = [r.kind, r.payload, r.queue, r.runAt, r.priority, r.maxAttempts, r.dedupeKey, r.debounceMs, r.expiresAt, r.maxAgeMs, r.delayMs, r.traceContext ?? null];
    if (r.limitKeys) {
      const [row] = await run(r.db ?? this.pool, this.statements.viaSqlLimited, [...values, r.limitKeys]);
      return { id: row!.id, deduped: row!.deduped };
    }
    const [row] = await run(r.db ?? this.pool, this.statements.viaSql, values);
    return row!;
  }
}
