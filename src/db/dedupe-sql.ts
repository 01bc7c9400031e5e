import { DatabaseError } from '../errors.js';
import { run, type Executor, type Statement } from './executor.js';

/**
 * SQL for a job `j` that goes back to `available` (a retry, a rescue, a hand-back, an operator's
 * retry) while a newer pending job of the same kind holds its dedupe key — possible in the
 * `pending` scope, where a key is free while its job runs. The returning job gives the key up
 * (kept in `dedupe_given`) instead of failing the write: both jobs run, nothing is lost, and the
 * unique index jobs_dedupe is never violated (issue 11, bug 2: one such job stalled the rescue of
 * the whole schema). `toAvailable` is the SQL condition under which the row becomes available.
 */
export function keyRelease(s: string, j: string, toAvailable: string): string {
  const taken = `${j}.dedupe_key IS NOT NULL AND (${toAvailable}) AND EXISTS (
    SELECT 1 FROM ${s}.jobs o WHERE o.kind = ${j}.kind AND o.dedupe_key = ${j}.dedupe_key AND o.state = 'available' AND o.id <> ${j}.id)`;
  return `dedupe_given = CASE WHEN ${taken} THEN ${j}.dedupe_key ELSE ${j}.dedupe_given END,
  dedupe_key = CASE WHEN ${taken} THEN NULL ELSE ${j}.dedupe_key END`;
}

/**
 * An `active`-scope job `j` that an operator's retry would make available while another job of the
 * same kind is available or running with its key: that retry would break the scope's promise, so
 * it is refused (and a bulk retry leaves the job where it is).
 */
export function activeKeyTaken(s: string, j: string): string {
  return `(${j}.dedupe_scope IS NOT DISTINCT FROM 'active' AND ${j}.dedupe_key IS NOT NULL AND EXISTS (
    SELECT 1 FROM ${s}.jobs o WHERE o.kind = ${j}.kind AND o.dedupe_key = ${j}.dedupe_key
      AND o.state IN ('available', 'running') AND o.id <> ${j}.id))`;
}

/** Whether `err` is a unique violation of a dedupe index, jobs_dedupe or jobs_dedupe_active (a key taken by a concurrent commit). */
export function isKeyRace(err: unknown): boolean {
  if (!(err instanceof DatabaseError) || err.sqlState !== '23505') return false;
  // The violated index, as the server names it (pg's error carries it), not read out of the message.
  const constraint = (err.cause as { constraint?: unknown } | undefined)?.constraint;
  return constraint === 'jobs_dedupe' || constraint === 'jobs_dedupe_active';
}

/**
 * Runs a statement that applies keyRelease: a key taken by a transaction that committed after the
 * statement's snapshot is not seen by its EXISTS and fails it with a unique violation; the next
 * run sees that commit and releases the key. Bounded; the last error is thrown.
 */
export async function runReleasingKeys<R, P extends readonly unknown[]>(db: Executor, stmt: Statement<R, P>, values: NoInfer<P>): Promise<R[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run(db, stmt, values);
    } catch (err) {
      if (!isKeyRace(err) || attempt >= 5) throw err;
    }
  }
}
