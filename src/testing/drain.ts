import { DrainLimitError, OptionsInvalidError } from '../errors.js';
import type { JobDefinition } from '../jobs/define-job.js';
import type { Nightshift } from '../runtime/nightshift.js';
import { InlineRunner, type JobOutcome, type JobOutcomeStatus } from './inline-runner.js';

/** Options of {@link drain}. */
export interface DrainOptions {
  /** Only jobs of these queues. Default: every queue. */
  queues?: string[];
  /** Only jobs of these kinds (names or definitions). Default: every kind the client defines. */
  kinds?: (string | JobDefinition)[];
  /** Most jobs to run; when jobs are still due after this many, drain throws NS_DRAIN_LIMIT. Default 1000. */
  maxJobs?: number;
}

/** What {@link drain} ran. */
export interface DrainResult {
  /** Every run, in the order they ran (a retried job appears once per attempt run). */
  jobs: JobOutcome[];
  /** How many runs ended each way. */
  counts: Record<JobOutcomeStatus, number>;
}

const EMPTY_COUNTS = (): Record<JobOutcomeStatus, number> => ({ completed: 0, retry: 0, discarded: 0, held: 0, expired: 0, cancelled: 0, abandoned: 0, 'lease-lost': 0 });

/**
 * Runs every due job inline, one at a time, until none is due — including the jobs those jobs
 * enqueue — and returns what ran and how each run ended. Jobs are claimed with the worker's own
 * claim (priority and run time within a queue, oldest due queue first; paused queues are left
 * alone; a job past its deadline expires unrun) and run as {@link runJob} runs them. A retry
 * scheduled for later is not due, so it ends the drain as `retry`. Bounded: after `maxJobs` runs
 * with jobs still due — a job that enqueues itself forever — it throws NS_DRAIN_LIMIT, whose
 * `ran` lists what ran. The client need not be started (a started worker on the same schema
 * would compete for the jobs).
 */
export async function drain(ns: Nightshift, options: DrainOptions = {}): Promise<DrainResult> {
  const maxJobs = options.maxJobs ?? 1_000;
  if (!Number.isInteger(maxJobs) || maxJobs < 1) throw new OptionsInvalidError('drain options', [{ path: 'maxJobs', message: 'must be a positive integer' }]);
  const given = (options.kinds ?? []).filter((k): k is JobDefinition => typeof k !== 'string');
  const runner = new InlineRunner(ns, given);
  const result: DrainResult = { jobs: [], counts: EMPTY_COUNTS() };
  try {
    const kinds = options.kinds ? options.kinds.map((k) => runner.kit.registry.resolve(k).kind) : runner.kit.registry.kinds();
    if (kinds.length === 0) return result;
    const db = runner.kit.database;
    const queues = options.queues ?? null;
    let idle = 0;
    for (;;) {
      const queue = await db.testJobs.nextDueQueue({ kinds, queues });
      if (queue === undefined) return result;
      if (result.jobs.length >= maxJobs) throw new DrainLimitError(maxJobs, result.jobs);
      const [row] = await db.jobs.claim({ queue, kinds, limit: 1, owner: runner.owner, leaseMs: ns.options.leaseMs });
      if (!row) {
        // Due but locked by another transaction's claim at this instant: look again shortly.
        if (++idle > 1_000) throw new Error(`drain: the due jobs of queue "${queue}" stay locked by another session`);
        await new Promise((r) => setTimeout(r, 10));
        continue;
      }
      idle = 0;
      const outcome = await runner.run(row);
      result.jobs.push(outcome);
      result.counts[outcome.status]++;
    }
  } finally {
    await runner.close();
  }
}
