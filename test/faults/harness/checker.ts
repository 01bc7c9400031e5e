import type { Recorder } from './recorder.js';
import type { Invariant } from './scenario.js';

/**
 * A fault explains an execution that was cut short when it overlaps the execution's time in
 * flight and could have hit it: the server restarted, or the fault targeted the execution's own
 * process (killed, paused, one of its backends terminated). A clock skew is a standing condition
 * and explains nothing.
 */
const EXPLAINING_FAULT = (start: string, end: string, pid: string) => `
  SELECT f.id, f.kind, f.started_at FROM %s.fault_log f
  WHERE f.kind NOT IN ('clock-skew', 'rollback', 'redis-restart') AND f.started_at <= ${end} AND f.ended_at >= ${start}
    AND (f.kind = 'pg-restart' OR f.target_pid = ${pid})
  ORDER BY f.started_at LIMIT 1`;

function explaining(schema: string, start: string, end: string, pid: string): string {
  return EXPLAINING_FAULT(start, end, pid).replace('%s', schema);
}

/** The figures and invariants of a delivery check. */
export interface DeliveryReport {
  jobs: number;
  lost: number;
  duplicates: { explained: number; unexplained: number };
  maxRecoveryMs: number | null;
  invariants: Invariant[];
  figures: Record<string, string | number>;
}

const sample = (rows: unknown[], n = 5) => JSON.stringify(rows.slice(0, n));

/**
 * At-least-once over the record: every job completed and has an effect (none lost); the
 * completed outcome is the newest execution's (an older run never overwrote it); every duplicate
 * execution is explained by a fault that hit it while it ran — its window runs from its effect row
 * to the next execution's, since that one could start only once this one was given up.
 */
export async function checkAtLeastOnce(r: Recorder, kind: string, jobIds?: readonly string[]): Promise<DeliveryReport> {
  const q = r.q;
  const ids = jobIds ? [...jobIds] : null;
  const { rows: jobs } = await r.sql.query<{ id: string; state: string; runs: number; final: string | null; newest: string | null; attempt: number }>(
    `SELECT j.id::text, j.state::text, j.attempt, j.lease_token::text AS final, count(e.id)::int AS runs, max(e.token)::text AS newest
     FROM ${q}.jobs_all j LEFT JOIN ${q}.effects e ON e.job_id = j.id
     WHERE j.kind = $1 AND ($2::bigint[] IS NULL OR j.id = ANY($2::bigint[])) GROUP BY j.id, j.state, j.attempt, j.lease_token`,
    [kind, ids],
  );
  const lost = jobs.filter((j) => j.state !== 'completed' || j.runs === 0);
  const overwritten = jobs.filter((j) => j.state === 'completed' && j.runs > 0 && j.final !== j.newest);
  // Recovery: from the fault until the job was handed back for another run (the error entry its
  // attempt left: rescue by lease expiry, a failure, a shutdown hand-back — database times). The
  // wait until the re-run also counts the backlog ahead of it in its queue.
  const { rows: dups } = await r.sql.query<{ job_id: string; pid: number; token: string; at: Date; next_at: Date; fault_kind: string | null; recovery_ms: number | null; wait_ms: number | null }>(
    `WITH e AS (
       SELECT e.job_id, e.pid, e.token, e.attempt, e.at, lead(e.at) OVER (PARTITION BY e.job_id ORDER BY e.token, e.id) AS next_at
       FROM ${q}.effects e WHERE e.kind = $1 AND ($2::bigint[] IS NULL OR e.job_id = ANY($2::bigint[]))
     )
     SELECT e.job_id::text, e.pid, e.token::text, e.at, e.next_at, f.kind AS fault_kind,
            (extract(epoch FROM coalesce(back.at, e.next_at) - f.started_at) * 1000)::float8 AS recovery_ms,
            (extract(epoch FROM e.next_at - f.started_at) * 1000)::float8 AS wait_ms
     FROM e
     JOIN ${q}.jobs_all j ON j.id = e.job_id
     LEFT JOIN LATERAL (${explaining(q, 'e.at', 'e.next_at', 'e.pid')}) f ON true
     LEFT JOIN LATERAL (
       SELECT min((x->>'at')::timestamptz) AS at FROM jsonb_array_elements(coalesce(j.errors, '[]'::jsonb)) x
       WHERE (x->>'attempt')::int = e.attempt AND (x->>'at')::timestamptz >= e.at
     ) back ON true
     WHERE e.next_at IS NOT NULL`,
    [kind, ids],
  );
  const unexplained = dups.filter((d) => d.fault_kind === null);
  const explained = dups.filter((d) => d.fault_kind !== null);
  const byFault: Record<string, number> = {};
  for (const d of explained) byFault[d.fault_kind!] = (byFault[d.fault_kind!] ?? 0) + 1;
  const recoveries = explained.map((d) => d.recovery_ms ?? 0);
  const waits = explained.map((d) => d.wait_ms ?? 0);
  const states: Record<string, number> = {};
  for (const j of jobs) states[j.state] = (states[j.state] ?? 0) + 1;
  return {
    jobs: jobs.length,
    lost: lost.length,
    duplicates: { explained: explained.length, unexplained: unexplained.length },
    maxRecoveryMs: recoveries.length ? Math.max(...recoveries) : null,
    invariants: [
      { name: 'no job lost: every job completed and its effect exists', holds: lost.length === 0, detail: lost.length ? `${lost.length} lost, e.g. ${sample(lost)}` : '' },
      { name: 'the outcome is the newest execution’s (fencing)', holds: overwritten.length === 0, detail: overwritten.length ? sample(overwritten) : '' },
      {
        name: 'every duplicate execution is explained by a fault that hit it while it ran',
        holds: unexplained.length === 0,
        detail: unexplained.length ? `${unexplained.length} unexplained, e.g. ${sample(unexplained)}` : '',
      },
    ],
    figures: {
      states: JSON.stringify(states),
      'duplicates by fault': JSON.stringify(byFault),
      'longest wait from a fault to the re-run, backlog ahead included (ms)': waits.length ? Math.round(Math.max(...waits)) : '—',
      'max attempt': Math.max(0, ...jobs.map((j) => j.attempt)),
    },
  };
}

/**
 * At-most-once over the record: no job's handler ran twice; every job ended visibly — completed
 * (with exactly one effect), abandoned (its worker died or stopped while it held it) or discarded
 * (its handler failed) — with none left waiting or running; and every job that did not complete
 * is explained by a fault that hit its worker (or the server) while it held the job.
 */
export async function checkAtMostOnce(r: Recorder, kind: string): Promise<DeliveryReport> {
  const q = r.q;
  const { rows: jobs } = await r.sql.query<{ id: string; state: string; runs: number; reason: string | null; fault_kind: string | null; recovery_ms: number | null }>(
    `WITH j AS (
       SELECT j.id, j.state, j.reason, j.started_at, j.finished_at,
              coalesce(substring(j.reason FROM ':(\\d+) stopped while it ran'), substring(j.reason FROM 'shutdown of .*:(\\d+)$'))::int AS owner_pid,
              (SELECT count(*)::int FROM ${q}.effects e WHERE e.job_id = j.id) AS runs
       FROM ${q}.jobs_all j WHERE j.kind = $1
     )
     SELECT j.id::text, j.state::text, j.runs, j.reason, f.kind AS fault_kind,
            (extract(epoch FROM j.finished_at - f.started_at) * 1000)::float8 AS recovery_ms
     FROM j LEFT JOIN LATERAL (
       SELECT f.id, f.kind, f.started_at FROM ${q}.fault_log f
       WHERE j.state IN ('abandoned', 'discarded') AND f.kind NOT IN ('clock-skew', 'rollback', 'redis-restart')
         AND f.started_at <= j.finished_at AND f.ended_at >= j.started_at
         AND (f.kind = 'pg-restart' OR f.target_pid = j.owner_pid
              OR (j.owner_pid IS NULL AND f.kind = 'backend-terminated'))
       ORDER BY f.started_at LIMIT 1
     ) f ON true`,
    [kind],
  );
  const twice = jobs.filter((j) => j.runs > 1);
  const stuck = jobs.filter((j) => !['completed', 'abandoned', 'discarded'].includes(j.state));
  const completedWithoutEffect = jobs.filter((j) => j.state === 'completed' && j.runs !== 1);
  const notCompleted = jobs.filter((j) => j.state === 'abandoned' || j.state === 'discarded');
  const unexplained = notCompleted.filter((j) => j.fault_kind === null);
  const states: Record<string, number> = {};
  for (const j of jobs) states[j.state] = (states[j.state] ?? 0) + 1;
  const recoveries = notCompleted.filter((j) => j.fault_kind !== null).map((j) => j.recovery_ms ?? 0);
  return {
    jobs: jobs.length,
    lost: stuck.length + completedWithoutEffect.length,
    duplicates: { explained: 0, unexplained: twice.length },
    maxRecoveryMs: recoveries.length ? Math.max(...recoveries) : null,
    invariants: [
      { name: 'no job ran twice', holds: twice.length === 0, detail: twice.length ? `${twice.length} ran twice, e.g. ${sample(twice)}` : '' },
      {
        name: 'every job ended visibly: completed (one effect), abandoned or discarded',
        holds: stuck.length === 0 && completedWithoutEffect.length === 0,
        detail: stuck.length || completedWithoutEffect.length ? `stuck ${sample(stuck)}; completed without one effect ${sample(completedWithoutEffect)}` : '',
      },
      {
        name: 'every job that did not complete was hit by a fault while its worker held it',
        holds: unexplained.length === 0,
        detail: unexplained.length ? `${unexplained.length} unexplained, e.g. ${sample(unexplained)}` : '',
      },
    ],
    figures: {
      states: JSON.stringify(states),
      'abandoned with no effect (claimed, not started)': jobs.filter((j) => j.state === 'abandoned' && j.runs === 0).length,
    },
  };
}

/** Every write the runtime refused, per process. */
export async function refusals(r: Recorder): Promise<{ job_id: string; token: string; pid: number; operation: string }[]> {
  const { rows } = await r.sql.query(`SELECT job_id::text, token::text, pid, operation FROM ${r.q}.refusals ORDER BY id`);
  return rows as { job_id: string; token: string; pid: number; operation: string }[];
}
