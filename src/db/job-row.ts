/** The states a job moves through; see docs/state-machine.md. */
export type JobState = 'available' | 'running' | 'completed' | 'discarded' | 'cancelled' | 'expired' | 'held' | 'abandoned';

export const JOB_STATES: readonly JobState[] = ['available', 'running', 'completed', 'discarded', 'cancelled', 'expired', 'held', 'abandoned'];

/** One entry of a job's error history. */
export interface JobErrorEntry {
  attempt: number;
  at: string;
  /** `error` (the handler threw), `timeout`, `lease-expired`, `retry` (asked to retry), `hold`, `discard`, `shutdown`. */
  kind: string;
  message: string;
  stack?: string;
  code?: string;
}

/** A job as stored, as the admin API and the CLI show it. */
export interface JobRecord {
  id: string;
  kind: string;
  queue: string;
  state: JobState;
  priority: number;
  runAt: Date;
  payload: unknown;
  attempt: number;
  maxAttempts: number;
  delivery: 'at-least-once' | 'at-most-once';
  /** The dedupe key the job was enqueued with (whether or not it still holds it). */
  dedupeKey: string | null;
  /** How the key holds: 'pending', 'active', 'ever' or 'within' (see docs/jobs.md). */
  dedupeScope: 'pending' | 'active' | 'ever' | 'within' | null;
  /**
   * True when the job gave its pending-scope key up: it went back to available (a retry, a rescue)
   * while a newer pending job held the key, and both run.
   */
  dedupeReleased: boolean;
  expiresAt: Date | null;
  leaseToken: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  errors: JobErrorEntry[];
  reason: string | null;
  traceContext: Record<string, string> | null;
  createdAt: Date;
  /** When the current or last attempt's handler started (null while it waits in a worker for a slot). */
  startedAt: Date | null;
  finishedAt: Date | null;
  /** The latest value the handler reported with `ctx.progress()`, or null. */
  progress: unknown;
}

/** The columns that make a {@link JobRecord}. */
export const JOB_COLUMNS =
  'id, kind, queue, state, priority, run_at, payload, attempt, max_attempts, at_most_once, dedupe_key, dedupe_scope, dedupe_given, expires_at, ' +
  'lease_token, lease_owner, lease_expires_at, errors, reason, trace_context, created_at, started_at, finished_at, progress';

export interface JobRow {
  id: string;
  kind: string;
  queue: string;
  state: JobState;
  priority: number;
  run_at: Date;
  payload: unknown;
  attempt: number;
  max_attempts: number;
  at_most_once: boolean;
  dedupe_key: string | null;
  dedupe_scope: string | null;
  dedupe_given: string | null;
  expires_at: Date | null;
  lease_token: string | null;
  lease_owner: string | null;
  lease_expires_at: Date | null;
  errors: JobErrorEntry[] | null;
  reason: string | null;
  trace_context: Record<string, string> | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  progress: unknown;
}

/** Maps a row of {@link JOB_COLUMNS} to a {@link JobRecord}. */
export function toJobRecord(r: JobRow): JobRecord {
  return {
    id: r.id,
    kind: r.kind,
    queue: r.queue,
    state: r.state,
    priority: r.priority,
    runAt: r.run_at,
    payload: r.payload,
    attempt: r.attempt,
    maxAttempts: r.max_attempts,
    delivery: r.at_most_once ? 'at-most-once' : 'at-least-once',
    dedupeKey: r.dedupe_key ?? r.dedupe_given,
    dedupeScope: (r.dedupe_scope as JobRecord['dedupeScope']) ?? (r.dedupe_key !== null || r.dedupe_given !== null ? 'pending' : null),
    dedupeReleased: r.dedupe_key === null && r.dedupe_given !== null && (r.dedupe_scope ?? 'pending') === 'pending',
    expiresAt: r.expires_at,
    leaseToken: r.lease_token,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: r.lease_expires_at,
    errors: r.errors ?? [],
    reason: r.reason,
    traceContext: r.trace_context,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    progress: r.progress ?? null,
  };
}
