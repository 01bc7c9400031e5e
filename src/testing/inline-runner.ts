import type { JobRecord, JobState } from '../db/job-row.js';
import type { ClaimedRow } from '../db/jobs-run.js';
import type { JobDefinition } from '../jobs/define-job.js';
import { isJobControl, type Discard, type Hold, type RetryAfter } from '../jobs/job-control.js';
import { systemClock } from '../lifecycle/clock.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import type { Nightshift } from '../runtime/nightshift.js';
import { workerError } from '../telemetry/events.js';
import { DEFAULT_REDACT } from '../telemetry/logger.js';
import { ActiveJobs } from '../worker/active-jobs.js';
import { Completer } from '../worker/completer.js';
import { JobRunner } from '../worker/job-runner.js';
import { Outcomes } from '../worker/outcomes.js';
import { StartMarks } from '../worker/start-marks.js';
import { testKit, type TestKit } from './test-kit.js';

/**
 * How one run of a job ended, as the worker would have recorded it:
 * - `completed`: the handler returned (`result` is what it returned);
 * - `retry`: it threw with attempts left, or asked for a retry (`control` is the RetryAfter);
 *   the job is `available` again at `job.runAt`;
 * - `discarded`: it asked to be discarded, or threw on its last attempt;
 * - `held`: it asked to be held for review (`control` is the Hold);
 * - `expired`: its deadline had passed, so it was not run;
 * - `cancelled`, `abandoned`: what a cancel during the run, or a lost at-most-once start, leads to;
 * - `lease-lost`: the job's lease was taken while it ran (rescued, re-claimed): its outcome was
 *   refused by the fencing token, and the job is as the new holder left it.
 */
export type JobOutcomeStatus = Exclude<JobState, 'available' | 'running'> | 'retry' | 'lease-lost';

/** One run of one job: how it ended, what the handler returned or threw, and the job as stored after it. */
export interface JobOutcome {
  readonly status: JobOutcomeStatus;
  readonly jobId: string;
  readonly kind: string;
  readonly queue: string;
  readonly attempt: number;
  /** What the handler returned, when it returned something other than a control result. */
  readonly result?: unknown;
  /** The control result the handler returned or threw (retryAfter, discard, hold). */
  readonly control?: RetryAfter | Discard | Hold;
  /** What the handler threw, when it was not a control result (timeouts included). */
  readonly error?: unknown;
  /** The job as stored once the attempt was recorded (its state, errors, next run time). */
  readonly job: JobRecord;
}

type Captured = { returned: unknown } | { threw: unknown };

const STATUS: Partial<Record<JobState, JobOutcomeStatus>> = { available: 'retry' };

/**
 * Runs claimed jobs one at a time in this process, through the worker's own JobRunner (payload
 * validation, the handler's RunContext, timeout and signal, at-most-once start marks, fenced
 * writes of the outcome, kept ctx.log lines, events on the client's bus) — without the claim loop,
 * so a test decides what runs and when. Leases are renewed every `heartbeatMs` while a handler runs.
 */
export class InlineRunner {
  readonly kit: TestKit;
  readonly owner: string;
  private readonly captured = new Map<string, Captured>();
  private readonly active = new ActiveJobs();
  private readonly completer: Completer;
  private readonly runner: JobRunner;
  private readonly heartbeat: PeriodicTask;
  private readonly writeErrors: unknown[] = [];

  constructor(ns: Nightshift, jobs: readonly JobDefinition[] = []) {
    this.kit = testKit(ns, { jobs, wrap: (def) => this.capture(def) });
    const o = ns.options;
    this.owner = `${o.owner}:test`;
    const onError = (err: unknown) => this.writeErrors.push(err);
    const db = this.kit.database;
    // Completed jobs are kept (never deleted on completion, whatever the retention) so the outcome can be read.
    this.completer = new Completer({ database: db, maxBatch: 1_000, retryForMs: Math.max(1_000, o.leaseMs - o.heartbeatMs), onError, remove: false });
    const outcomes = new Outcomes({
      database: db,
      active: this.active,
      completer: this.completer,
      events: ns.events,
      logger: ns.logger,
      owner: this.owner,
      clock: systemClock,
      onError: (where, err) => {
        this.writeErrors.push(err);
        ns.events.emit(workerError(where, err));
      },
    });
    this.runner = new JobRunner({
      database: db,
      registry: this.kit.registry,
      outcomes,
      enqueuer: this.kit.enqueuer,
      events: ns.events,
      logger: ns.logger,
      leaseMs: o.leaseMs,
      marks: new StartMarks(db, onError),
      redact: new Set([...DEFAULT_REDACT, ...o.redact]),
      errorMessages: o.logErrorMessages,
    });
    this.heartbeat = new PeriodicTask({ name: 'test heartbeat', intervalMs: o.heartbeatMs, task: () => this.renew(), onError, jitter: 0 });
  }

  /** Runs one claimed job to its recorded outcome. `signal` aborts the handler's ctx.signal with its reason. */
  async run(row: ClaimedRow, signal?: AbortSignal): Promise<JobOutcome> {
    if (row.state === 'expired') return this.outcome(row);
    const job = this.active.add(row);
    const abort = () => job.controller.abort(signal?.reason);
    signal?.addEventListener('abort', abort, { once: true });
    if (signal?.aborted) abort();
    await this.heartbeat.start();
    try {
      await this.runner.run(job);
      await this.completer.drain();
      // A timeout records its failure while the handler may still run; wait for that write.
      while (this.active.get(row.id) === job) await new Promise((r) => setTimeout(r, 5));
    } finally {
      signal?.removeEventListener('abort', abort);
      if (this.active.size === 0) await this.heartbeat.stop();
    }
    return this.outcome(row);
  }

  /** Settles what the runs enqueued and lets go of the client's pool. */
  async close(): Promise<void> {
    await this.heartbeat.stop();
    await this.kit.close();
  }

  private async outcome(row: ClaimedRow): Promise<JobOutcome> {
    const job = await this.kit.database.admin.get(row.id);
    if (!job) throw new Error(`job ${row.id} is gone: it was deleted while it ran`);
    const lost = job.leaseToken !== row.lease_token && (job.state === 'running' || job.state === 'available');
    if (job.state === 'running' && !lost) {
      const why = this.writeErrors.map((e) => (e instanceof Error ? e.message : String(e))).join('; ');
      throw new Error(`the outcome of job ${row.id} could not be recorded${why ? `: ${why}` : ''}`);
    }
    const captured = this.captured.get(`${row.id}:${row.lease_token}`);
    this.captured.delete(`${row.id}:${row.lease_token}`);
    const status: JobOutcomeStatus = lost ? 'lease-lost' : (STATUS[job.state] ?? (job.state as JobOutcomeStatus));
    const base = { status, jobId: row.id, kind: row.kind, queue: row.queue, attempt: job.attempt, job };
    if (!captured) return base;
    const value = 'returned' in captured ? captured.returned : captured.threw;
    if (isJobControl(value)) return { ...base, control: value };
    return 'returned' in captured ? { ...base, result: value } : { ...base, error: value };
  }

  /** The definition with a handler that keeps what the original returned or threw, by claim. */
  private capture(def: JobDefinition): JobDefinition {
    const original = def.run;
    return Object.freeze({
      ...def,
      run: async (payload: unknown, ctx: Parameters<JobDefinition['run']>[1]) => {
        const key = `${ctx.jobId}:${ctx.leaseToken}`;
        try {
          const value = await original(payload as never, ctx);
          this.captured.set(key, { returned: value });
          return value;
        } catch (err) {
          this.captured.set(key, { threw: err });
          throw err;
        }
      },
    });
  }

  private async renew(): Promise<void> {
    const jobs = this.active.all();
    if (jobs.length === 0) return;
    const db = this.kit.database;
    const held = await db.jobs.heartbeat({ ids: jobs.map((j) => j.row.id), tokens: jobs.map((j) => j.row.lease_token), leaseMs: this.kit.ns.options.leaseMs });
    for (const j of jobs) if (!held.has(j.row.lease_token)) this.runner.leaseLost(j, 'heartbeat found the lease taken (cancelled or rescued)');
  }
}
