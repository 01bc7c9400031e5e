/** The states a job moves through; see docs/state-machine.md. */
export type JobState =
  | 'available'
  | 'running'
  | 'completed'
  | 'discarded'
  | 'cancelled'
  | 'expired'
  | 'held'
  | 'abandoned';

export const JOB_STATES: readonly JobState[] = [
  'available',
  'running',
  'completed',
  'discarded',
  'cancelled',
  'expired',
  'held',
  'abandoned',
];

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
  dedupeKey: string | null;
  expiresAt: Date | null;
  leaseToken: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  errors: JobErrorEntry[];
  reason: string | null;
  traceContext: Record<string, string> | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** The columns that make a {@link JobRecord}. */
export const JOB_COLUMNS =
  'id, kind, queue, state, priority, run_at, payload, attempt, max_attempts, at_most_once, dedupe_key, expires_at, ' +
  'lease_token, lease_owner, lease_expires_at, errors, reason, trace_context, created_at, started_at, finished_at';

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
    dedupeKey: r.dedupe_key,
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
  };
}
