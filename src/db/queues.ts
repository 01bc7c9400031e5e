import { run, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** Queue and kind registry statements of one schema. */
export function queueStatements(set: StatementSet) {
  return {
    // Pause or resume, with its audit row and a control notification in the same statement.
    setPaused: set.plain<{ name: string; paused: boolean; notified: boolean }, [name: string, paused: boolean, actor: string, reason: string | null, channel: string]>(
      (s) => `
WITH q AS (
  INSERT INTO ${s}.queues (name, paused, updated_at, updated_by) VALUES ($1, $2, now(), $3)
  ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now(), updated_by = EXCLUDED.updated_by
  RETURNING name, paused
), a AS (
  INSERT INTO ${s}.audit_log (actor, action, target, reason) SELECT $3, CASE WHEN $2 THEN 'pause' ELSE 'resume' END, 'queue:' || $1, $4
)
SELECT name, paused, pg_notify($5, CASE WHEN $2 THEN 'pause:' ELSE 'resume:' END || $1) IS NULL AS notified FROM q`,
    ),
    // Every queue some kind names (a queue whose jobs all finished is still one), paused ones, and
    // any that holds jobs; finished jobs are in the history (migration 0008): only the discarded
    // ones count here, and the state filter keeps the scan to their partitions.
    list: set.plain<QueueRow, []>(
      (s) => `
WITH c AS (
  SELECT queue,
    count(*) FILTER (WHERE state = 'available' AND run_at <= now()) AS available,
    count(*) FILTER (WHERE state = 'available' AND run_at > now()) AS scheduled,
    count(*) FILTER (WHERE state = 'running') AS running,
    count(*) FILTER (WHERE state IN ('held', 'abandoned')) AS held,
    count(*) FILTER (WHERE state = 'discarded') AS failed,
    min(run_at) FILTER (WHERE state = 'available' AND run_at <= now()) AS oldest_available
  FROM (SELECT queue, state, run_at FROM ${s}.jobs
        UNION ALL SELECT queue, state, run_at FROM ${s}.jobs_history WHERE state = 'discarded') j
  GROUP BY queue
)
SELECT n.name, coalesce(q.paused, false) AS paused,
       coalesce(c.available, 0)::int AS available, coalesce(c.running, 0)::int AS running,
       coalesce(c.scheduled, 0)::int AS scheduled, coalesce(c.held, 0)::int AS held,
       coalesce(c.failed, 0)::int AS failed, c.oldest_available
FROM (SELECT name FROM ${s}.queues UNION SELECT queue FROM ${s}.kinds UNION SELECT queue FROM c) n
LEFT JOIN c ON c.queue = n.name
LEFT JOIN ${s}.queues q ON q.name = n.name
ORDER BY 1`,
    ),
    // Which of the given queues have a job due now (of the given kinds) and are not paused: the
    // worker's one idle poll for all its queues (src/worker/queue-probe.ts), instead of a claim
    // per queue. Each EXISTS is the claim's own scan of jobs_claim (queue = $, state available)
    // stopped at the first due row, without locks or writes; an idle queue costs one index probe.
    due: set.named<{ name: string }, [queues: readonly string[], kinds: readonly string[]]>(
      'queue_due',
      (s) => `
SELECT q.name FROM unnest($1::text[]) AS q(name)
WHERE EXISTS (SELECT 1 FROM ${s}.jobs j WHERE j.state = 'available' AND j.queue = q.name AND j.run_at <= now() AND j.kind = ANY($2::text[]))
  AND NOT EXISTS (SELECT 1 FROM ${s}.queues p WHERE p.name = q.name AND p.paused)`,
    ),
    registerKinds: set.plain<never, [kinds: string[], queues: string[], priorities: number[], maxAttempts: number[], atMostOnce: boolean[], dedupeScopes: string[], dedupeWithinMs: (number | null)[]]>(
      (s) => `
INSERT INTO ${s}.kinds (kind, queue, priority, max_attempts, at_most_once, dedupe_scope, dedupe_within_ms, updated_at)
SELECT * , now() FROM unnest($1::text[], $2::text[], $3::smallint[], $4::int[], $5::bool[], $6::text[], $7::bigint[])
ON CONFLICT (kind) DO UPDATE SET queue = EXCLUDED.queue, priority = EXCLUDED.priority,
  max_attempts = EXCLUDED.max_attempts, at_most_once = EXCLUDED.at_most_once,
  dedupe_scope = EXCLUDED.dedupe_scope, dedupe_within_ms = EXCLUDED.dedupe_within_ms, updated_at = now()
WHERE (${s}.kinds.queue, ${s}.kinds.priority, ${s}.kinds.max_attempts, ${s}.kinds.at_most_once, ${s}.kinds.dedupe_scope, ${s}.kinds.dedupe_within_ms)
  IS DISTINCT FROM (EXCLUDED.queue, EXCLUDED.priority, EXCLUDED.max_attempts, EXCLUDED.at_most_once, EXCLUDED.dedupe_scope, EXCLUDED.dedupe_within_ms)`,
    ),
    setPayloadLimit: set.plain<never, [bytes: number]>(
      (s) => `INSERT INTO ${s}.settings (key, value) VALUES ('max_payload_bytes', to_jsonb($1::int))
        ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value WHERE ${s}.settings.value IS DISTINCT FROM EXCLUDED.value`,
    ),
    auditList: set.plain<AuditRecord, [target: string | null, beforeId: string | null, limit: number]>(
      (s) => `SELECT id::text, at, actor, action, target, reason, details FROM ${s}.audit_log
        WHERE ($1::text IS NULL OR target = $1) AND ($2::bigint IS NULL OR id < $2) ORDER BY id DESC LIMIT $3`,
    ),
  };
}
export type QueueStatements = ReturnType<typeof queueStatements>;

/** A queue as stored: its row of `list`. */
interface QueueRow {
  name: string;
  paused: boolean;
  available: number;
  scheduled: number;
  running: number;
  held: number;
  failed: number;
  oldest_available: Date | null;
}

/** A queue with its counts, as `listQueues()` and `nightshift queues list` show it. */
export interface QueueRecord {
  name: string;
  /** Paused for every process (`pauseQueue`): no job of it is claimed until it is resumed. */
  paused: boolean;
  /** Jobs due now and waiting for a worker. */
  available: number;
  /** Jobs waiting for a later time (`runAt`, `delayMs`, a retry's back-off). */
  scheduled: number;
  running: number;
  /** Held or abandoned jobs, waiting for an operator. */
  held: number;
  /** Discarded jobs (kept for their retention). */
  failed: number;
  /** When the job waiting longest became due, or null when none is due. */
  oldestAvailable: Date | null;
}

/** A kind's defaults, as SQL callers of enqueue() use them. */
export interface KindRow {
  kind: string;
  queue: string;
  priority: number;
  maxAttempts: number;
  atMostOnce: boolean;
  /** 'pending', 'active', 'ever' or 'within' (with `dedupeWithinMs`). */
  dedupeScope: string;
  dedupeWithinMs: number | null;
}

/** One audit entry: who did what to which target, why and when. */
export interface AuditRecord {
  id: string;
  at: Date;
  actor: string;
  action: string;
  target: string;
  reason: string | null;
  details: unknown;
}

/** The queue, kind, settings and audit statements bound to the schema's pool. */
export class QueueQueries {
  private readonly st: QueueStatements;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
    private readonly controlChannel: string,
  ) {
    this.st = queueStatements(set);
  }

  /** Pauses or resumes a queue for every process, audited. */
  async setPaused(p: { name: string; paused: boolean; actor: string; reason: string | null }): Promise<void> {
    await run(this.db, this.st.setPaused, [p.name, p.paused, p.actor, p.reason, this.controlChannel]);
  }

  /** Every queue that has jobs or a pause record. */
  async list(): Promise<QueueRecord[]> {
    const rows = await run(this.db, this.st.list, []);
    return rows.map((r) => ({
      name: r.name,
      paused: r.paused,
      available: r.available,
      scheduled: r.scheduled,
      running: r.running,
      held: r.held,
      failed: r.failed,
      oldestAvailable: r.oldest_available,
    }));
  }

  /** The queues among `queues` with a job of `kinds` due now, paused ones left out (the worker's idle poll). */
  async due(p: { queues: readonly string[]; kinds: readonly string[] }): Promise<string[]> {
    const rows = await run(this.db, this.st.due, [p.queues, p.kinds]);
    return rows.map((r) => r.name);
  }

  /** Registers kinds and their defaults for SQL callers. */
  async registerKinds(kinds: readonly KindRow[]): Promise<void> {
    if (kinds.length === 0) return;
    await run(this.db, this.st.registerKinds, [
      kinds.map((k) => k.kind),
      kinds.map((k) => k.queue),
      kinds.map((k) => k.priority),
      kinds.map((k) => k.maxAttempts),
      kinds.map((k) => k.atMostOnce),
      kinds.map((k) => k.dedupeScope),
      kinds.map((k) => k.dedupeWithinMs),
    ]);
  }

  /** Stores the payload size limit the SQL enqueue function enforces. */
  async setPayloadLimit(bytes: number): Promise<void> {
    await run(this.db, this.st.setPayloadLimit, [bytes]);
  }

  /** Audit entries, newest first, optionally for one target (`job:42`, `queue:mail`). */
  auditList(p: { target: string | null; beforeId: string | null; limit: number }): Promise<AuditRecord[]> {
    return run(this.db, this.st.auditList, [p.target, p.beforeId, p.limit]);
  }
}
