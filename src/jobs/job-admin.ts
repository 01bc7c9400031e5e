import type { Database } from '../db/database.js';
import type { Executor } from '../db/executor.js';
import { JOB_STATES, toJobRecord, type JobRecord, type JobState } from '../db/job-row.js';
import type { JobStatsPoint } from '../db/job-stats.js';
import { ADMIN_FROM, type AdminAction, type ChangedRow, type JobFilter, type StatsRecord } from '../db/jobs-admin.js';
import type { JobSearch } from '../db/jobs-search.js';
import type { AuditRecord, QueueRecord } from '../db/queues.js';
import { DedupeConflictError, InvalidTransitionError, JobNotFoundError, OptionsInvalidError, type Issue } from '../errors.js';
import type { EventBus } from '../telemetry/events.js';
import type { JobDefinition } from './define-job.js';
import { cleanText } from './error-text.js';
import { nameProblem } from './names.js';

/** Who does an admin action and why; written to the audit log. */
export interface ActorOptions {
  /** Who acts (a user, a service). Default: the client's `actor`, else `user@host`. */
  actor?: string;
  /** Why; kept with the audit entry and, for cancel and resolve, on the job. */
  reason?: string;
}

/** Filters for listing jobs. */
export interface ListJobsOptions {
  kind?: string;
  queue?: string;
  state?: JobState | JobState[];
  /** Page cursor: only jobs with a smaller id. */
  beforeId?: string;
  /** Default 50, at most 1000. */
  limit?: number;
}

/** A search of jobs: the list filters, a payload field and a creation-time range, bounded to recent jobs. */
export interface SearchJobsOptions extends ListJobsOptions {
  /**
   * JSON the payload must contain: `{ orderId: 'o-1' }` finds jobs whose payload has
   * `orderId: "o-1"` (nested objects match nested fields).
   */
  payload?: Record<string, unknown>;
  createdAfter?: Date;
  createdBefore?: Date;
  /**
   * How many of the newest jobs (by id) are searched when finished jobs may match. Default
   * 100,000; unfinished states alone (available, running, held, abandoned) are searched whole.
   */
  window?: number;
}

/** A bulk action's filter, and whether to only count. */
export interface BulkOptions extends ActorOptions {
  kind?: string;
  queue?: string;
  state?: JobState | JobState[];
  ids?: string[];
  /** Count what would change, change nothing. */
  dryRun?: boolean;
  /** Called after each batch with how many were changed so far. */
  onProgress?: (done: number) => void;
}

/** How an operator resolves a held or abandoned job. */
export type Resolution = 'completed' | 'failed' | 'retry';

const ID = /^[1-9][0-9]{0,18}$/;
const MAX_ID = 9_223_372_036_854_775_807n;

/** Whether `s` is a job id: a positive integer that fits the bigint column. */
function isId(s: unknown): s is string {
  return typeof s === 'string' && ID.test(s) && BigInt(s) <= MAX_ID;
}

function checkId(id: unknown): string {
  const s = typeof id === 'number' && Number.isSafeInteger(id) ? String(id) : id;
  if (!isId(s)) {
    throw new OptionsInvalidError('job id', [{ path: 'id', message: `"${String(id).slice(0, 40)}" is not a job id (a positive integer)` }]);
  }
  return s;
}

function checkStates(state: JobState | JobState[] | undefined, issues: Issue[]): JobState[] | undefined {
  if (state === undefined) return undefined;
  const list = Array.isArray(state) ? state : [state];
  for (const s of list) {
    if (!JOB_STATES.includes(s)) issues.push({ path: 'state', message: `"${String(s)}" is not a state; states are ${JOB_STATES.join(', ')}` });
  }
  return list;
}

function checkFilter(o: { kind?: string; queue?: string; state?: JobState | JobState[]; beforeId?: string; ids?: string[] }): JobFilter {
  const issues: Issue[] = [];
  if (o.kind !== undefined && nameProblem(o.kind)) issues.push({ path: 'kind', message: nameProblem(o.kind)! });
  if (o.queue !== undefined && nameProblem(o.queue)) issues.push({ path: 'queue', message: nameProblem(o.queue)! });
  const states = checkStates(o.state, issues);
  if (o.beforeId !== undefined && !isId(String(o.beforeId))) issues.push({ path: 'beforeId', message: 'must be a job id' });
  if (o.ids !== undefined && (!Array.isArray(o.ids) || o.ids.some((id) => !isId(String(id))))) issues.push({ path: 'ids', message: 'must be an array of job ids' });
  if (issues.length) throw new OptionsInvalidError('job filter', issues);
  return {
    ...(o.kind !== undefined ? { kind: o.kind } : {}),
    ...(o.queue !== undefined ? { queue: o.queue } : {}),
    ...(states ? { states } : {}),
    ...(o.beforeId !== undefined ? { beforeId: String(o.beforeId) } : {}),
    ...(o.ids ? { ids: o.ids.map(String) } : {}),
  };
}

/** The ranges of {@link JobAdmin.jobStats}. */
export type StatsRange = 'hour' | 'day' | 'week' | 'month';

const STATS_RANGES: Record<StatsRange, { width: 60 | 3600; sinceS: number; stepS: number }> = {
  hour: { width: 60, sinceS: 3_600, stepS: 60 },
  day: { width: 60, sinceS: 86_400, stepS: 600 },
  week: { width: 3600, sinceS: 7 * 86_400, stepS: 3_600 },
  month: { width: 3600, sinceS: 30 * 86_400, stepS: 6 * 3_600 },
};

const UNFINISHED: readonly JobState[] = ['available', 'running', 'held', 'abandoned'];

function checkSearch(o: SearchJobsOptions): JobSearch {
  const base = checkFilter(o);
  const issues: Issue[] = [];
  if (o.payload !== undefined && (typeof o.payload !== 'object' || o.payload === null || Array.isArray(o.payload))) {
    issues.push({ path: 'payload', message: 'must be an object of the fields to match' });
  }
  for (const [path, d] of [
    ['createdAfter', o.createdAfter],
    ['createdBefore', o.createdBefore],
  ] as const) {
    if (d !== undefined && !(d instanceof Date && !Number.isNaN(d.getTime()))) issues.push({ path, message: 'must be a valid Date' });
  }
  const window = o.window ?? 100_000;
  if (!Number.isInteger(window) || window < 1 || window > 100_000_000) issues.push({ path: 'window', message: 'must be an integer from 1 to 100000000' });
  if (issues.length) throw new OptionsInvalidError('job search', issues);
  const unfinishedOnly = base.states !== undefined && base.states.every((s) => UNFINISHED.includes(s));
  return {
    ...base,
    ...(o.payload ? { payload: o.payload } : {}),
    ...(o.createdAfter ? { createdAfter: o.createdAfter } : {}),
    ...(o.createdBefore ? { createdBefore: o.createdBefore } : {}),
    window: unfinishedOnly ? null : window,
  };
}

/**
 * The operator's view of jobs and queues: list, inspect, retry, cancel, resolve, pause and resume.
 * Every change is one statement that also writes its audit entry (who, what, why, when).
 */
export class JobAdmin {
  protected readonly database: Database;
  private readonly defaultActor: string;
  private readonly adminEvents: EventBus | undefined;
  private readonly definitions: (kind: string) => JobDefinition | undefined;

  constructor(o: {
    database: Database;
    /** Who acts when an action names nobody. */
    actor: string;
    /** Where `job.cancelled` and `job.resolved` go. */
    events?: EventBus;
    /** The definitions this client knows, for a kind's `onResolve`. */
    definitions?: (kind: string) => JobDefinition | undefined;
  }) {
    this.database = o.database;
    this.defaultActor = o.actor;
    this.adminEvents = o.events;
    this.definitions = o.definitions ?? (() => undefined);
  }

  /** Jobs matching the filter, newest first. */
  async listJobs(options: ListJobsOptions = {}): Promise<JobRecord[]> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new OptionsInvalidError('listJobs options', [{ path: 'limit', message: 'must be an integer from 1 to 1000' }]);
    }
    return this.database.admin.list({ filter: checkFilter(options), limit });
  }

  /**
   * Jobs matching a search, newest first: like listJobs, and by payload field and creation time.
   * When finished jobs may match, only the newest `window` jobs are searched (a bounded range of
   * the primary key, never the whole history).
   */
  async searchJobs(options: SearchJobsOptions = {}): Promise<JobRecord[]> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new OptionsInvalidError('searchJobs options', [{ path: 'limit', message: 'must be an integer from 1 to 1000' }]);
    }
    return this.database.search.search({ search: checkSearch(options), limit });
  }

  /** How many jobs match a search, counting no further than `cap` (then `cap + 1` means "more than cap"). */
  async countJobs(options: SearchJobsOptions & { cap?: number } = {}): Promise<number> {
    const cap = options.cap ?? 10_000;
    if (!Number.isInteger(cap) || cap < 1 || cap > 1_000_000) {
      throw new OptionsInvalidError('countJobs options', [{ path: 'cap', message: 'must be an integer from 1 to 1000000' }]);
    }
    return this.database.search.count({ search: checkSearch(options), cap });
  }

  /**
   * Throughput, failures and wait times over the last hour, day, week or month, from the
   * per-minute aggregates every worker writes (never a scan of the jobs table): minute points for
   * an hour, 10-minute points for a day, hourly for a week and 6-hourly for a month (the hourly
   * rows cover whole hours, rolled up by the maintenance leader).
   */
  async jobStats(options: { range?: StatsRange; queue?: string } = {}): Promise<JobStatsPoint[]> {
    const range = options.range ?? 'hour';
    const spec = STATS_RANGES[range];
    if (!spec) throw new OptionsInvalidError('jobStats options', [{ path: 'range', message: `must be one of ${Object.keys(STATS_RANGES).join(', ')}` }]);
    if (options.queue !== undefined) this.checkQueue(options.queue);
    return this.database.stats.series({ ...spec, ...(options.queue !== undefined ? { queue: options.queue } : {}) });
  }

  /** Per queue, completed, failed and discarded jobs and wait times over the last `minutes` (from the aggregates). */
  async queueActivity(options: { minutes?: number } = {}): Promise<(JobStatsPoint & { queue: string })[]> {
    const minutes = options.minutes ?? 60;
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > 2_880) {
      throw new OptionsInvalidError('queueActivity options', [{ path: 'minutes', message: 'must be an integer from 1 to 2880' }]);
    }
    return this.database.stats.perQueue(minutes * 60);
  }

  /** One job with its error history; throws NS_JOB_NOT_FOUND. */
  async getJob(id: string): Promise<JobRecord> {
    const job = await this.database.admin.get(checkId(id));
    if (!job) throw new JobNotFoundError(String(id));
    return job;
  }

  /** Runs a finished, held or abandoned job again now. */
  async retryJob(id: string, options: ActorOptions = {}): Promise<JobRecord> {
    return this.changeOne('retry', id, options);
  }

  /** Cancels a pending, held, abandoned or running job (a running job's handler gets its abort signal). */
  async cancelJob(id: string, options: ActorOptions = {}): Promise<JobRecord> {
    return this.changeOne('cancel', id, options);
  }

  /**
   * Resolves a held or abandoned job as completed, failed (discarded) or to be retried. When the
   * job's kind defines `onResolve`, it runs in the same transaction as the change (and the audit
   * entry): if it throws, nothing changes and the error is thrown here.
   */
  async resolveJob(id: string, options: ActorOptions & { as: Resolution }): Promise<JobRecord> {
    const as = options?.as;
    if (as !== 'completed' && as !== 'failed' && as !== 'retry') {
      throw new OptionsInvalidError('resolveJob options', [{ path: 'as', message: "must be 'completed', 'failed' or 'retry'" }]);
    }
    return this.changeOne(`resolve-${as}`, id, options, async (row, tx) => {
      const def = this.definitions(row.kind);
      if (!def?.onResolve) return;
      await def.onResolve({ jobId: row.id, kind: row.kind, as, payload: row.payload, actor: this.actor(options), reason: this.reason(options) }, tx);
    });
  }

  /**
   * Runs a pending job now: one due later (`runAt`, `delayMs`, a retry's back-off) or debounced
   * gets `run_at = now()` and workers are woken; audited. A later debounced enqueue with the same
   * key may move it again, as it would have before. NS_INVALID_TRANSITION when the job is not
   * pending (running, finished, held…), NS_JOB_NOT_FOUND when there is none.
   */
  async runJobNow(id: string, options: ActorOptions = {}): Promise<JobRecord> {
    return this.changeOne('run-now', id, options);
  }

  /**
   * Writes the audit entry of an enqueue done on someone's behalf (the CLI's `enqueue`): actor,
   * job id, kind and whether it was deduped — never the payload. Pass the enqueue's `db` to write
   * it in the same transaction.
   */
  async auditEnqueued(job: { id: string; kind: string; deduped: boolean }, options: ActorOptions & { db?: Executor } = {}): Promise<void> {
    await this.database.admin.auditEnqueue({ who: this.who(options), job: { id: checkId(job.id), kind: job.kind, deduped: job.deduped }, db: options.db });
  }

  /** Retries every job matching the filter (default: discarded ones). Returns how many (or would, with dryRun). */
  async retryJobs(options: BulkOptions = {}): Promise<number> {
    return this.changeMany('retry', { state: 'discarded', ...options });
  }

  /** Cancels every job matching the filter (default: pending ones). */
  async cancelJobs(options: BulkOptions = {}): Promise<number> {
    return this.changeMany('cancel', { state: 'available', ...options });
  }

  /** Stops every process from claiming jobs of the queue until resumed. */
  async pauseQueue(name: string, options: ActorOptions = {}): Promise<void> {
    this.checkQueue(name);
    await this.database.queues.setPaused({ name, paused: true, actor: this.actor(options), reason: this.reason(options) });
  }

  /** Lets processes claim jobs of the queue again (and wakes them). */
  async resumeQueue(name: string, options: ActorOptions = {}): Promise<void> {
    this.checkQueue(name);
    await this.database.queues.setPaused({ name, paused: false, actor: this.actor(options), reason: this.reason(options) });
  }

  /** Every queue with jobs or a pause record, with counts per state. */
  async listQueues(): Promise<QueueRecord[]> {
    return this.database.queues.list();
  }

  /** Counts per queue, kind and state. */
  async stats(): Promise<StatsRecord[]> {
    return this.database.admin.stats();
  }

  /** Audit entries, newest first; `target` like `job:42` or `queue:mail`. */
  async listAudit(options: { target?: string; beforeId?: string; limit?: number } = {}): Promise<AuditRecord[]> {
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new OptionsInvalidError('listAudit options', [{ path: 'limit', message: 'must be an integer from 1 to 1000' }]);
    }
    if (options.beforeId !== undefined && !isId(String(options.beforeId))) {
      throw new OptionsInvalidError('listAudit options', [{ path: 'beforeId', message: 'must be an audit entry id (a positive integer)' }]);
    }
    return this.database.queues.auditList({ target: options.target ?? null, beforeId: options.beforeId ?? null, limit });
  }

  private async changeOne(action: AdminAction, id: string, options: ActorOptions, within?: (row: ChangedRow, tx: Executor) => Promise<void>): Promise<JobRecord> {
    const jobId = checkId(id);
    const change = async (db?: Executor) => {
      // A finished job is in the history: a retry brings it back first.
      if (action === 'retry') await this.database.admin.restore({ filter: { ids: [jobId] }, states: ADMIN_FROM.retry, limit: 1, db });
      return this.database.admin.change({ action, filter: { ids: [jobId] }, who: this.who(options), limit: 1, db });
    };
    const rows = within
      ? await this.database.transaction(async (tx) => {
          const changed = await change(tx);
          if (changed[0]) await within(changed[0], tx);
          return changed;
        })
      : await change();
    if (rows.length === 0) {
      const job = await this.database.admin.get(jobId);
      if (!job) throw new JobNotFoundError(jobId);
      if (ADMIN_FROM[action].includes(job.state)) {
        const holder = await this.database.admin.keyHolder(jobId);
        if (holder) throw new DedupeConflictError(jobId, holder);
      }
      throw new InvalidTransitionError(jobId, action.startsWith('resolve-') ? action.replace('-', ' as ') : action.replace('-', ' '), job.state, ADMIN_FROM[action]);
    }
    this.emitChanged(action, rows, options);
    return toJobRecord(rows[0]!);
  }

  private async changeMany(action: AdminAction, options: BulkOptions): Promise<number> {
    const filter = checkFilter(options);
    if (options.dryRun) return this.database.admin.count({ filter, states: ADMIN_FROM[action] });
    let done = 0;
    let rows: ChangedRow[];
    // In batches, so a bulk retry of a million jobs neither holds one huge transaction nor stalls workers.
    // A retry brings each batch of finished jobs back from the history first; it goes on while
    // either side may have more (some brought back may stay where they are: an active key taken).
    let restored = 0;
    do {
      restored = action === 'retry' ? await this.database.admin.restore({ filter, states: ADMIN_FROM.retry, limit: 500 }) : 0;
      rows = await this.database.admin.change({ action, filter, who: this.who(options), limit: 500 });
      this.emitChanged(action, rows, options);
      done += rows.length;
      options.onProgress?.(done);
    } while (rows.length === 500 || restored === 500);
    return done;
  }

  private emitChanged(action: AdminAction, rows: ChangedRow[], options: ActorOptions): void {
    const bus = this.adminEvents;
    if (!bus?.active) return;
    const actor = this.actor(options);
    for (const r of rows) {
      const base = { jobId: r.id, kind: r.kind, queue: r.queue, attempt: r.attempt };
      if (action === 'cancel') bus.emit({ type: 'job.cancelled', ...base });
      bus.emit({ type: 'job.resolved', ...base, action, to: r.state, actor });
    }
  }

  private checkQueue(name: string): void {
    const p = nameProblem(name);
    if (p) throw new OptionsInvalidError('queue', [{ path: 'queue', message: p }]);
  }

  private actor(o: ActorOptions): string {
    return cleanText(o.actor ?? this.defaultActor, 200);
  }

  private reason(o: ActorOptions): string | null {
    return o.reason === undefined ? null : cleanText(o.reason, 2_000);
  }

  private who(o: ActorOptions): { actor: string; reason: string | null } {
    return { actor: this.actor(o), reason: this.reason(o) };
  }
}
