import { run, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/**
 * Pruning with per-kind retention (a kind's `retention` of defineJob, pipelines' step kinds): the
 * same deletion as jobs-maintenance.ts's prune — the 'ever' dedupe keys of the pruned jobs go in
 * the same statement — narrowed to some kinds ($4, null for all) and leaving out others ($5: the
 * kinds whose own retention applies to this state). This and JobMaintenance.prune (which decides
 * the ages) are the whole of per-kind retention.
 */
export function jobRetentionStatements(set: StatementSet) {
  return {
    prune: set.plain<{ n: number }, [state: string, olderThanMs: number, limit: number, kinds: readonly string[] | null, except: readonly string[]]>(
      (s) => `
WITH doomed AS (
  SELECT id FROM ${s}.jobs
  WHERE state = $1::${s}.job_state AND finished_at < now() - $2::float8 * interval '1 millisecond'
    AND ($4::text[] IS NULL OR kind = ANY($4::text[])) AND NOT (kind = ANY($5::text[]))
  LIMIT $3
), gone AS (
  DELETE FROM ${s}.jobs j USING doomed WHERE j.id = doomed.id RETURNING j.id, j.dedupe_scope
), keys AS (
  DELETE FROM ${s}.dedupe_keys k USING gone WHERE gone.dedupe_scope = 'ever' AND k.job_id = gone.id AND k.expires_at IS NULL
)
SELECT count(*)::int AS n FROM gone`,
    ),
  };
}
export type JobRetentionStatements = ReturnType<typeof jobRetentionStatements>;

/** Per-kind pruning bound to the schema's pool. */
export class JobRetentionQueries {
  private readonly st: JobRetentionStatements;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
  ) {
    this.st = jobRetentionStatements(set);
  }

  /** Deletes up to `limit` jobs in `state` finished more than `olderThanMs` ago, of `kinds` (null: any) but not of `except`. */
  async prune(p: { state: string; olderThanMs: number; limit: number; kinds: readonly string[] | null; except: readonly string[] }): Promise<number> {
    const [row] = await run(this.db, this.st.prune, [p.state, p.olderThanMs, p.limit, p.kinds, p.except]);
    return row?.n ?? 0;
  }
}
