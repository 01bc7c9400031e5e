import type { Database } from '../db/database.js';
import type { JobState } from '../db/job-row.js';
import { OptionsInvalidError } from '../errors.js';
import type { KindRetention } from '../jobs/define-job.js';
import { retentionIssues } from '../jobs/retention.js';
import type { EventBus } from '../telemetry/events.js';

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

/** A retention is an object of finished states, each a whole number of ms ≥ 0 or false: anything else is refused before a statement runs. */
function checkRetention(retention: unknown): void {
  const issues = retentionIssues(retention, '');
  if (issues.length > 0) throw new OptionsInvalidError('retention (held and abandoned jobs are never pruned)', issues);
}
const DAY_MS = 86_400_000;

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
   * Moves finished rows from `jobs` to the history (jobs that did not finish by completing, and
   * rows an older version completed in place). Returns how many.
   */
  async archive(): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.db.maintenance.archive({ limit: BATCH });
      total += n;
      if (n < BATCH) return total;
    }
  }

  /**
   * Deletes finished jobs older than their state's retention: whole days of history are dropped
   * (O(1) however many jobs a day held), then the rows no day drop takes (the default partitions,
   * and today under a retention shorter than a day). Makes the coming days' partitions first.
   * Kinds with a retention of their own (defineJob's `retention`) are spared by the day drops and
   * pruned row by row at their own age. This is the whole of per-kind retention, with
   * history_prune and history_prune_rows of migration 0008. Returns how many jobs went per state.
   */
  async prune(retention: Retention = DEFAULT_RETENTION): Promise<Partial<Record<JobState, number>>> {
    checkRetention(retention);
    await this.db.maintenance.ensurePartitions({ back: 1, ahead: 3 });
    await this.archive();
    const result: Partial<Record<JobState, number>> = {};
    for (const [state, ms] of Object.entries({ ...DEFAULT_RETENTION, ...retention })) {
      const own = [...this.kinds].filter(([, r]) => r[state as keyof KindRetention] !== undefined);
      const spared = own.map(([k]) => k);
      let n = 0;
      if (ms !== false && ms !== undefined) {
        for (;;) {
          const dropped = await this.db.maintenance.pruneDay({ state, olderThanMs: ms, spared });
          if (typeof dropped !== 'number') break; // none left that old, or its lock was busy: next time
          n += dropped;
        }
        n += await this.pruneRows({ state, olderThanMs: ms, kinds: null, spared, onlyDefault: ms >= DAY_MS });
      }
      // Kinds with their own retention for this state, each by its own age: their rows older than
      // the state's retention are in the default partition (spared by the day drops); a shorter
      // retention than the state's means deleting rows from the day partitions too.
      for (const [kind, r] of own) {
        const kindMs = r[state as keyof KindRetention];
        if (kindMs === false || kindMs === undefined) continue;
        const onlyDefault = ms !== false && ms !== undefined && kindMs >= ms && kindMs >= DAY_MS;
        n += await this.pruneRows({ state, olderThanMs: kindMs, kinds: [kind], spared: [], onlyDefault });
      }
      if (ms !== false && ms !== undefined) result[state as JobState] = n;
      else if (n > 0) result[state as JobState] = n;
    }
    while ((await this.db.maintenance.pruneKeys({ limit: BATCH })) === BATCH);
    return result;
  }

  private async pruneRows(p: { state: string; olderThanMs: number; kinds: readonly string[] | null; spared: readonly string[]; onlyDefault: boolean }): Promise<number> {
    let n = 0;
    for (;;) {
      const deleted = await this.db.maintenance.pruneRows({ ...p, limit: BATCH });
      n += deleted;
      if (deleted < BATCH) return n;
    }
  }
}
