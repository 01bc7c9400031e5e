/**
 * One typed event stream for everything nightshift does. Logs, metrics and traces are consumers
 * of it, and users can subscribe too. Emitting with no subscriber costs one branch.
 */

/** Fields every job event carries. Never the payload. */
export interface JobEventFields {
  jobId: string;
  kind: string;
  queue: string;
  attempt: number;
  /** The W3C trace id the job carries, on the events of its runs (so log lines join the trace). */
  traceId?: string;
}

/** Every event, by type. */
export type NightshiftEvent =
  | ({ type: 'job.enqueued'; deduped: boolean } & Omit<JobEventFields, 'attempt'>)
  | ({ type: 'job.started'; waitMs: number } & JobEventFields)
  | ({ type: 'job.completed'; durationMs: number } & JobEventFields)
  | ({ type: 'job.failed'; durationMs: number; error: string; willRetry: boolean; delayMs: number } & JobEventFields)
  | ({ type: 'job.retried'; delayMs: number } & JobEventFields)
  | ({ type: 'job.discarded'; reason: string } & JobEventFields)
  | ({ type: 'job.held'; reason: string } & JobEventFields)
  | ({ type: 'job.expired' } & JobEventFields)
  | ({ type: 'job.cancelled' } & JobEventFields)
  | ({ type: 'job.rescued'; state: string; owner: string | null } & JobEventFields)
  | ({ type: 'job.abandoned'; reason: string } & JobEventFields)
  | ({ type: 'job.released'; state: string } & JobEventFields)
  | ({ type: 'job.resolved'; action: string; to: string; actor: string } & JobEventFields)
  | ({ type: 'job.refused'; operation: string; token: string } & JobEventFields)
  | ({ type: 'job.lease-lost'; why: string } & JobEventFields)
  | ({ type: 'job.handler-stuck'; cause: string; graceMs: number } & JobEventFields)
  | { type: 'worker.claimed'; queue: string; asked: number; count: number }
  /** One idle poll of the process: the queues it asked about (their fetchers found nothing), and those with a due job. */
  | { type: 'worker.polled'; queues: readonly string[]; due: readonly string[] }
  /** A limited claim passed over `waiting` due jobs of the queue because a fleet-wide limit was full (0: none waits any more). */
  | { type: 'worker.limited'; queue: string; waiting: number; wakeInMs: number | undefined }
  | { type: 'listener.connected' }
  | { type: 'listener.lost'; error: string }
  /** The listener heard its own notification, sent through the pool: NOTIFY wake-ups work. */
  | { type: 'listener.proven' }
  /** The listener did not hear its own notification within the bound: wake-ups fall back to polling. */
  | { type: 'listener.unproven'; reason: string; hint: string }
  /** `preparedStatements: 'auto'` found a connection pooler (or met a collision) and stopped naming statements there. */
  | { type: 'database.prepared-statements-off'; cause: 'pooler' | 'collision'; statement?: string; sqlState?: string; hint: string }
  | { type: 'worker.started'; owner: string; queues: string[]; concurrency: number }
  | { type: 'worker.stopping'; owner: string; running: number }
  | { type: 'worker.stopped'; owner: string }
  | { type: 'worker.error'; where: string; error: string; code?: string; sqlState?: string; constraint?: string }
  | { type: 'maintenance.ran'; task: string; count: number }
  | { type: 'process.started'; id: string; roles: string[] }
  | { type: 'process.stopping'; id: string }
  | { type: 'leader.elected'; name: string; holder: string; token: string }
  | { type: 'leader.deposed'; name: string; holder: string; token: string; reason: 'lost' | 'expired' | 'released' }
  | { type: 'daemon.failed'; name: string; token: string; error: string; restartInMs: number }
  | { type: 'schedule.fired'; schedule: string; tickAt: Date; jobId: string; kind: string; manual: boolean; late: boolean }
  | { type: 'schedule.skipped'; schedule: string; tickAt: Date; reason: 'overlap' | 'catch-up'; missed: number }
  | { type: 'schedule.queued'; schedule: string; tickAt: Date }
  | { type: 'schedule.failed'; schedule: string; tickAt: Date; error: string }
  | { type: 'schedule.caught-up'; schedule: string; missed: number; fired: number; skipped: number }
  | { type: 'stream.published'; stream: string; id: string }
  | ({ type: 'stream.handled'; durationMs: number; expired: boolean } & StreamEntryFields)
  | ({ type: 'stream.failed'; durationMs: number; error: string; willRetry: boolean } & StreamEntryFields)
  | ({ type: 'stream.dead-lettered'; reason: string; error: string; deadLetterStream: string } & StreamEntryFields)
  | ({ type: 'stream.expired'; ageMs: number } & StreamEntryFields)
  | ({ type: 'stream.reclaimed'; count: number } & StreamConsumerFields)
  | ({ type: 'stream.handed-back'; count: number } & StreamConsumerFields)
  | ({ type: 'stream.consumer-started'; delivery: string; singleton: boolean; fencingToken: string | null } & StreamConsumerFields)
  | ({ type: 'stream.consumer-stopped'; reason: string } & StreamConsumerFields)
  | ({ type: 'stream.reclaim-unavailable'; error: string } & StreamConsumerFields)
  | ({ type: 'stream.error'; where: string; error: string } & StreamConsumerFields)
  | { type: 'stream.group-created'; stream: string; group: string; recreated: boolean }
  | { type: 'stream.connection-lost'; connection: string; error: string }
  | { type: 'stream.connected'; connection: string }
  | { type: 'listener.notified'; queue: string; dueInMs?: number }
  | { type: 'schema.newer'; schema: string; versions: number[] }
  /** A check's alert opened, changed level, was re-sent, resolved or was acknowledged (never its message). */
  | { type: 'alert.opened'; alertId: string; check: string; subject: string; level: string }
  | { type: 'alert.changed'; alertId: string; check: string; subject: string; level: string; previousLevel: string }
  | { type: 'alert.reminded'; alertId: string; check: string; subject: string; level: string }
  | { type: 'alert.resolved'; alertId: string; check: string; subject: string; durationMs: number }
  | { type: 'alert.acknowledged'; alertId: string; check: string; subject: string; actor: string }
  /** A check ran: its worst status, and whether the run changed the alert state (false: a dry run, or a late tick). */
  | { type: 'check.ran'; check: string; status: string; subjects: number; durationMs: number; manual: boolean; applied: boolean }
  /** A check threw, timed out or returned something else than results: a critical result. */
  | { type: 'check.failed'; check: string; error: string }
  | ({ type: 'pipeline.started'; dryRun: boolean; by: string | null } & PipelineRunFields)
  | ({ type: 'pipeline.step-finished'; step: string; item: boolean; state: 'succeeded' | 'failed' | 'skipped' | 'cancelled' } & PipelineRunFields)
  | ({ type: 'pipeline.finished'; state: 'succeeded' | 'failed' | 'cancelled'; warnings: number; dryRun: boolean } & PipelineRunFields)
  | ({ type: 'pipeline.held'; reason: string } & PipelineRunFields)
  | ({ type: 'pipeline.deadline-missed'; deadlineAt: Date } & Omit<PipelineRunFields, 'generation'>)
  | ({ type: 'pipeline.artifacts-mismatch'; missing: number; changed: number } & PipelineRunFields)
  | ({ type: 'pipeline.follow-up-failed'; followUp: string; error: string } & PipelineRunFields)
  | ({ type: 'pipeline.action'; action: string; actor: string } & PipelineRunFields);

/** Fields every pipeline event carries: never the key, an item's key, the input or an output (business data). */
export interface PipelineRunFields {
  pipeline: string;
  runId: string;
  generation: number;
}

/** Fields every stream consumer event carries. */
export interface StreamConsumerFields {
  stream: string;
  group: string;
  /** The consumer's name in the group (unique per process). */
  consumer: string;
}

/** Fields every stream entry event carries. Never the payload. */
export interface StreamEntryFields extends StreamConsumerFields {
  /** The entry id, `<unix-ms>-<seq>`. */
  id: string;
  /** Deliveries of the entry so far, this one included. */
  deliveries: number;
}

/** The type names of {@link NightshiftEvent}. */
export type NightshiftEventType = NightshiftEvent['type'];

/** A subscriber. Exceptions it throws are swallowed: telemetry must never break work. */
export type EventListener = (event: NightshiftEvent & { at: number }) => void;

/** The event bus of one client. */
export class EventBus {
  private listeners: EventListener[] = [];
  /** Listeners that take only some types (the logger below its level), with their filter. */
  private readonly filters = new Map<EventListener, (type: NightshiftEventType) => boolean>();

  /** True when someone listens; callers skip building events otherwise. */
  get active(): boolean {
    return this.listeners.length > 0;
  }

  /**
   * True when some subscriber takes events of `type`. The per-job sites (enqueued, started,
   * completed) check this, so a logger that drops debug events costs no event objects.
   */
  wants(type: NightshiftEventType): boolean {
    for (const l of this.listeners) {
      const f = this.filters.get(l);
      if (!f || f(type)) return true;
    }
    return false;
  }

  /** Subscribes (to every event, or to the types `wants` accepts); returns the unsubscribe function. */
  on(listener: EventListener, wants?: (type: NightshiftEventType) => boolean): () => void {
    this.listeners = [...this.listeners, listener];
    if (wants) this.filters.set(listener, wants);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
      this.filters.delete(listener);
    };
  }

  /** Delivers an event to every subscriber. */
  emit(event: NightshiftEvent): void {
    if (this.listeners.length === 0) return;
    const stamped = Object.assign(event, { at: Date.now() });
    for (const l of this.listeners) {
      try {
        l(stamped);
      } catch {
        // A broken subscriber must not fail a job.
      }
    }
  }
}

/**
 * A `worker.error` event for `err` at `where`: the message (left out of logs unless error
 * messages are asked for), and what identifies the failure without quoting anything — the
 * nightshift code, the SQLSTATE, the violated constraint — which logs always carry.
 */
export function workerError(where: string, err: unknown): NightshiftEvent {
  const e = err as { code?: unknown; sqlState?: unknown; cause?: { code?: unknown; constraint?: unknown } } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const sqlState = typeof e?.sqlState === 'string' ? e.sqlState : typeof e?.cause?.code === 'string' ? e.cause.code : undefined;
  const constraint = typeof e?.cause?.constraint === 'string' ? e.cause.constraint : undefined;
  return {
    type: 'worker.error',
    where,
    error: err instanceof Error ? err.message : String(err),
    ...(code ? { code } : {}),
    ...(sqlState && sqlState !== code ? { sqlState } : {}),
    ...(constraint ? { constraint } : {}),
  };
}
