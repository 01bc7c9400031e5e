import type { Database } from '../db/database.js';
import type { JobState } from '../db/job-row.js';
import type { EventBus } from '../telemetry/events.js';
import type { KindRetention } from '../jobs/define-job.js';

/** How long finished jobs are kept, per state, in ms. `false` keeps them forever. */
export type Retention = Partial<Record<'completed' | 'discarded' | 'cancelled' | 'expired', number | false>>;

/** Default retention: completed jobs 1 day, failed, cancelled and expired ones 30 days. Held and abandoned jobs wait for an operator and are never pruned. */
export const DEFAULT_RETENTION: Required<Retention> = {
  completed: 86_400_000,
  discarded: 30 * 86_400_000,
  cancelled: 30 * 86_400_000,
  expired: 30 * 86_400_000,
};

const BATCH = 1_000;

/**
 * Rescue of expired leases, expiry of pending jobs past their deadline, and pruning. Each is one
 * atomic statement with SKIP LOCKED, so running them on many processes at once is safe; leader
 * election only saves work, it never decides correctness.
 */
export class JobMaintenance {
  constructor(
    private readonly db: Database,
    private readonly events: EventBus,
    /** Kinds with a retention of their own (defineJob's `retention`), by kind. */
    private readonly kinds: ReadonlyMap<string, KindRetention> = new Map(),
  ) {}

  /** Takes back jobs whose lease expired. Returns how many. */
  async rescue(): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = await this.db.maintenance.rescue({ limit: BATCH });
      total += rows.length;
      if (this.events.active) {
        for (const r of rows) {
          this.events.emit({ type: 'job.rescued', jobId: r.id, kind: r.kind, queue: r.queue, attempt: r.attempt, state: r.state, owner: r.owner });
          if (r.state === 'abandoned') {
            this.events.emit({ type: 'job.abandoned', jobId: r.id, kind: r.kind, queue: r.queue, attempt: r.attempt, reason: `its worker ${r.owner ?? '?'} stopped while it ran` });
          }
        }
      }
      if (rows.length < BATCH) return total;
    }
  }

  /** Marks pending jobs past their deadline as expired. Returns how many. */
  async expire(): Promise<number> {
    let total = 0;
    for (;;) {
      const rows = await this.db.maintenance.expire({ limit: BATCH });
      total += rows.length;
      if (this.events.active) {
        for (const r of rows) this.events.emit({ type: 'job.expired', jobId: r.id, kind: r.kind, queue: r.queue, attempt: 0 });
      }
      if (rows.length < BATCH) return total;
    }
  }

  /**
   * Deletes finished jobs older than their state's retention. Returns how many per state. Per-kind
   * retention lives here (which kinds, which ages) and in db/jobs-retention.ts (the statement).
   */
  async prune(retention: Retention = DEFAULT_RETENTION): Promise<Partial<Record<JobState, number>>> {
    const result: Partial<Record<JobState, number>> = {};
    for (const [state, ms] of Object.entries({ ...DEFAULT_RETENTION, ...retention })) {
      const own = [...this.kinds].filter(([, r]) => r[state as keyof KindRetention] !== undefined);
      let n = 0;
      if (ms !== false && ms !== undefined) {
        for (;;) {
          const deleted = own.length
            ? await this.db.retention.prune({ state, olderThanMs: ms, limit: BATCH, kinds: null, except: own.map(([k]) => k) })
            : await this.db.maintenance.prune({ state, olderThanMs: ms, limit: BATCH });
          n += deleted;
          if (deleted < BATCH) break;
        }
      }
      // Kinds with their own retention for this state, each by its own age.
      for (const [kind, r] of own) {
        const kindMs = r[state as keyof KindRetention];
        if (kindMs === false || kindMs === undefined) continue;
        for (;;) {
          const deleted = await this.db.retention.prune({ state, olderThanMs: kindMs, limit: BATCH, kinds: [kind], except: [] });
          n += deleted;
          if (deleted < BATCH) break;
        }
      }
      if (ms !== false && ms !== undefined) result[state as JobState] = n;
      else if (n > 0) result[state as JobState] = n;
    }
    while ((await this.db.maintenance.pruneKeys({ limit: BATCH })) === BATCH);
    return result;
  }
}
