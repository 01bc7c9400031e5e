import type { Database } from '../db/database.js';
import { JobTimeoutError } from '../errors.js';
import type { JobDefinition } from '../jobs/define-job.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import { isJobControl } from '../jobs/job-control.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import { parsePayload } from '../jobs/payload.js';
import { systemClock, type Clock, type Timer } from '../lifecycle/clock.js';
import { workerError, type EventBus } from '../telemetry/events.js';
import { DEFAULT_REDACT, type Logger } from '../telemetry/logger.js';
import { endConsumerSpan, startConsumerSpan, withContext } from '../telemetry/tracing.js';
import type { ActiveJob } from './active-jobs.js';
import { MARK_DELAY_MS } from './completer.js';
import { jobFields, type Outcomes } from './outcomes.js';
import { RunContext, type RunContextShared } from './run-context.js';
import { StartGate } from './start-gate.js';
import type { StartMarks } from './start-marks.js';

/** A run's hold on the start gate: its pass, what to do once its handler was called, a suspect's window timer. */
interface GateHold {
  pass: () => void;
  invoked: () => void;
  timer: Timer | undefined;
}

/** What became of a run, for the worker's bookkeeping. */
export type RunEnd = 'recorded' | 'interrupted';

/** What a job runner is built from (one per worker, or per inline test run). */
export interface JobRunnerOptions {
  database: Database;
  registry: JobRegistry;
  /** Where every job's end is decided and written. */
  outcomes: Outcomes;
  /** What handlers' `ctx.enqueue` uses. */
  enqueuer: Enqueuer;
  events: EventBus;
  logger: Logger;
  /** How long a lease lasts; `ctx.heartbeat()` extends it by this. */
  leaseMs: number;
  /** Records the start of at-most-once (and start_first) jobs before their handlers run. */
  marks: StartMarks;
  /** Keys redacted from what `ctx.log` keeps with the job. Default {@link DEFAULT_REDACT}. */
  redact?: ReadonlySet<string>;
  /** Error messages in spans. Default false. */
  errorMessages?: boolean;
  clock?: Clock;
}

/**
 * Runs one claimed job: validates its payload, calls the handler with its context under the
 * timeout, and hands what came of it to the outcome writer ({@link Outcomes}), which writes it
 * fenced by the lease token. A job whose outcome was already decided elsewhere (timeout, cancel,
 * lost lease) has its late result ignored; a job interrupted by shutdown is left for the worker
 * to hand back.
 */
export class JobRunner {
  private readonly db: Database;
  private readonly registry: JobRegistry;
  private readonly outcomes: Outcomes;
  private readonly events: EventBus;
  private readonly marks: StartMarks;
  /** Orders the starts recorded before their handlers (see StartGate); one per process's runner. */
  private readonly gate = new StartGate();
  /** Jobs whose handler is done and whose outcome is not written yet. */
  private readonly finishing = new Set<ActiveJob>();
  /** Suspects waiting for the outcomes of `left` to be written. */
  private suspects: { left: Set<ActiveJob>; resolve: () => void }[] = [];
  private readonly errorMessages: boolean;
  private readonly clock: Clock;

  constructor(o: JobRunnerOptions) {
    this.db = o.database;
    this.registry = o.registry;
    this.outcomes = o.outcomes;
    this.events = o.events;
    this.marks = o.marks;
    this.errorMessages = o.errorMessages ?? false;
    this.clock = o.clock ?? systemClock;
    this.shared = {
      db: o.database,
      logger: o.logger,
      enqueuer: o.enqueuer,
      leaseMs: o.leaseMs,
      redact: o.redact ?? new Set(DEFAULT_REDACT),
      leaseLost: (job, why) => this.leaseLost(job, why),
      onError: (where, err) => this.events.emit(workerError(where, err)),
    };
  }

  private readonly shared: RunContextShared;

  /**
   * Runs the job; `handlerDone` is called as soon as the handler has returned (or thrown), before
   * its outcome is written, so the caller can give the concurrency slot to the next job while the
   * write is batched. The job keeps its lease (and heartbeats) until the write lands.
   */
  async run(job: ActiveJob, handlerDone: () => void = () => undefined): Promise<RunEnd> {
    const gate: GateHold = { pass: () => undefined, invoked: () => undefined, timer: undefined };
    // From the moment its handler is done (its slot may go to a suspect at once) until its
    // outcome is written, this run is one a suspect waits for (see runGated).
    let finishing = false;
    const done = () => {
      if (!finishing) {
        finishing = true;
        this.finishing.add(job);
      }
      handlerDone();
    };
    try {
      return await this.runGated(job, done, gate);
    } finally {
      // Whatever happened, the starts the gate holds must go on.
      this.clock.clearTimeout(gate.timer);
      gate.pass();
      if (finishing) this.written(job);
    }
  }

  private async runGated(job: ActiveJob, handlerDone: () => void, gate: GateHold): Promise<RunEnd> {
    const row = job.row;
    const def = this.registry.get(row.kind) as JobDefinition;
    const suspect = row.start_first && !row.at_most_once;
    if (row.at_most_once || row.start_first) {
      // The start is committed before the handler runs (see StartMarks): for an at-most-once job,
      // and for one whose lease expired unstarted too often (SUSPECT in jobs-run.ts), so a handler
      // that kills its process at once uses up its attempts. The gate keeps such a handler from
      // taking down a job whose start was recorded beside it but whose handler was not called.
      const pass = suspect ? await this.gate.exclusive() : await this.gate.shared();
      gate.pass = pass;
      // A suspect may take the process down the moment it starts: the outcomes of handlers that
      // returned before it are written first, so a job that ran and succeeded beside it is not
      // rescued as lost (and, its start recorded, charged or discarded) for a write still in flight.
      if (suspect && this.finishing.size > 0) await new Promise<void>((resolve) => this.suspects.push({ left: new Set(this.finishing), resolve }));
      // A suspect's window closes once its handler has run MARK_DELAY_MS (or returned, below).
      gate.invoked = suspect ? () => void (gate.timer = this.clock.setTimeout(pass, MARK_DELAY_MS, { unref: true })) : pass;
      if (job.cause === 'shutdown' && !job.finished) {
        pass();
        handlerDone();
        return 'interrupted'; // handed back unrun
      }
      const mark = await this.marks.mark(job);
      if (job.finished) {
        pass();
        handlerDone();
        return 'recorded';
      }
      if (mark !== 'started') {
        pass();
        handlerDone();
        if (mark === 'failed') return 'interrupted'; // handed back unrun
        await this.outcomes.finish(job, { cause: 'start-refused' });
        return 'recorded';
      }
    }
    job.started = true;
    job.startedAt = this.clock.monotonic();
    if (this.events.wants('job.started')) {
      this.events.emit({ type: 'job.started', ...jobFields(row), waitMs: row.waited_ms + (job.startedAt - job.claimedAt) });
    }
    let timer: Timer | undefined;
    if (def.timeoutMs !== undefined) {
      timer = this.clock.setTimeout(() => this.onTimeout(job, def), def.timeoutMs);
    }
    let result: unknown;
    let error: unknown;
    let threw = false;
    // The consumer span continues the trace stored at enqueue, in whatever process runs the job.
    const trace = startConsumerSpan({ id: row.id, kind: row.kind, queue: row.queue, attempt: row.attempt, traceContext: row.trace_context });
    try {
      const payload = await parsePayload(row.kind, def.schema, row.payload);
      const ctx = new RunContext(this.shared, job);
      result = await withContext(trace.context, () => {
        try {
          return def.run(payload, ctx);
        } finally {
          gate.invoked();
        }
      });
    } catch (err) {
      threw = true;
      error = err;
    } finally {
      this.clock.clearTimeout(timer);
      this.clock.clearTimeout(gate.timer);
      gate.pass();
      handlerDone();
    }
    if (job.log) await this.writeLog(job);
    if (job.progress) await job.progress.flush();
    if (job.finished) {
      endConsumerSpan(trace.span, job.cause ?? 'finished', threw ? error : undefined, this.errorMessages);
      return 'recorded';
    }
    if (job.cause === 'shutdown' && (threw || isJobControl(result))) {
      endConsumerSpan(trace.span, 'interrupted', threw ? error : undefined, this.errorMessages);
      return 'interrupted';
    }
    if (threw || isJobControl(result)) {
      const outcome = await this.outcomes.finish(job, { cause: 'failed', def, error: threw ? error : result });
      endConsumerSpan(trace.span, outcome, threw && !isJobControl(error) ? error : undefined, this.errorMessages);
    } else {
      await this.outcomes.finish(job, { cause: 'completed' });
      endConsumerSpan(trace.span, 'completed');
    }
    return 'recorded';
  }

  /** The outcome of `job`'s run is written (or given up): suspects waiting only for it go on. */
  private written(job: ActiveJob): void {
    this.finishing.delete(job);
    if (this.suspects.length === 0) return;
    this.suspects = this.suspects.filter((w) => {
      w.left.delete(job);
      if (w.left.size > 0) return true;
      w.resolve();
      return false;
    });
  }

  /** Writes what the handler logged; a failure to write costs the lines, never the job. */
  private async writeLog(job: ActiveJob): Promise<void> {
    const lines = job.log!.take();
    job.log = undefined;
    try {
      await this.db.jobLogs.insert({ jobId: job.row.id, attempt: job.row.attempt, token: job.row.lease_token, lines });
    } catch (err) {
      this.events.emit(workerError('job log', err));
    }
  }

  private onTimeout(job: ActiveJob, def: JobDefinition): void {
    void this.outcomes.finish(job, { cause: 'timeout', def, error: new JobTimeoutError(def.timeoutMs ?? 0) });
  }

  /** Marks a job as lost (a heartbeat found its lease gone) and aborts its handler. */
  leaseLost(job: ActiveJob, why: string): void {
    void this.outcomes.finish(job, { cause: 'lease-lost', why });
  }
}
