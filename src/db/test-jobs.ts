import { run, sql, type Executor } from './executor.js';
import { quoteIdent } from './identifiers.js';
import type { ClaimedRow } from './jobs-run.js';
import type { StatementSet } from './statements.js';

/**
 * Statements of nightshift/testing only (runJob, drain, the per-test schema): never on a worker's
 * path. The claim of one job by id mirrors the worker's claim (jobs-run.ts) row for row, so a job
 * run by runJob holds a real lease with a real fencing token.
 */
export function testJobStatements(set: StatementSet) {
  return {
    // The worker's claim, for one job named by id, whatever its run_at and its queue's pause (runJob
    // runs it now); a deadline already past expires it instead, as the worker's claim does. $4
    // replaces the attempt number (to test the last attempt); null counts on from the row. Its start
    // is recorded here (a test runs it at once), so it never needs start_first.
    claimById: set.plain<ClaimedRow, [id: string, owner: string, leaseMs: number, attempt: number | null]>(
      (s) => `
UPDATE ${s}.jobs j SET
  state = CASE WHEN j.expires_at <= now() THEN 'expired' ELSE 'running' END::${s}.job_state,
  attempt = CASE WHEN j.expires_at <= now() THEN j.attempt ELSE coalesce($4::int, j.attempt + 1) END,
  lease_token = CASE WHEN j.expires_at <= now() THEN j.lease_token ELSE nextval('${s}.lease_token_seq') END,
  lease_owner = CASE WHEN j.expires_at <= now() THEN NULL ELSE $2 END,
  lease_expires_at = CASE WHEN j.expires_at <= now() THEN NULL ELSE now() + $3::float8 * interval '1 millisecond' END,
  started_at = CASE WHEN j.expires_at <= now() THEN j.started_at WHEN j.at_most_once THEN NULL ELSE now() END,
  finished_at = CASE WHEN j.expires_at <= now() THEN now() END,
  reason = CASE WHEN j.expires_at <= now() THEN 'not started before its deadline ' || j.expires_at::text ELSE j.reason END
WHERE j.id = $1 AND j.state = 'available'
RETURNING j.id::text, j.kind, j.queue, j.state, j.payload, j.attempt, j.max_attempts, j.at_most_once,
          j.lease_token::text, j.trace_context, (extract(epoch FROM now() - j.run_at) * 1000)::float8 AS waited_ms, j.priority,
          (extract(epoch FROM j.expires_at - now()) * 1000)::float8 AS expires_in_ms, false AS start_first`,
    ),
    // The queue of the oldest due job of these kinds (in these queues, when given) that is not
    // paused: drain claims from it next, with the worker's own claim.
    nextDueQueue: set.plain<{ queue: string }, [kinds: readonly string[], queues: readonly string[] | null]>(
      (s) => `
SELECT j.queue FROM ${s}.jobs j
WHERE j.state = 'available' AND j.run_at <= now() AND j.kind = ANY($1::text[])
  AND ($2::text[] IS NULL OR j.queue = ANY($2::text[]))
  AND NOT EXISTS (SELECT 1 FROM ${s}.queues q WHERE q.name = j.queue AND q.paused)
ORDER BY j.run_at, j.id LIMIT 1`,
    ),
  };
}
export type TestJobStatements = ReturnType<typeof testJobStatements>;

/** The statements of nightshift/testing bound to the schema's pool. */
export class TestJobQueries {
  private readonly st: TestJobStatements;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
  ) {
    this.st = testJobStatements(set);
  }

  /** Claims one available job by id for a test run; undefined when it is not available. */
  async claimById(p: { id: string; owner: string; leaseMs: number; attempt?: number }): Promise<ClaimedRow | undefined> {
    const [row] = await run(this.db, this.st.claimById, [p.id, p.owner, p.leaseMs, p.attempt ?? null]);
    return row;
  }

  /** The queue to drain next: that of the oldest due job of `kinds` (within `queues` when given), or undefined. */
  async nextDueQueue(p: { kinds: readonly string[]; queues: readonly string[] | null }): Promise<string | undefined> {
    const [row] = await run(this.db, this.st.nextDueQueue, [p.kinds, p.queues]);
    return row?.queue;
  }
}

/** Creates an empty schema (a test's own); fails when it exists. */
export async function schemaCreate(db: Executor, schema: string): Promise<void> {
  await run(db, sql(`CREATE SCHEMA ${quoteIdent(schema)}`), []);
}

/** Drops a schema and everything in it (a test's own); nothing when it is gone. */
export async function schemaDrop(db: Executor, schema: string): Promise<void> {
  await run(db, sql(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`), []);
}
