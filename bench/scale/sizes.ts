/** Sizes of one scale run (`npm run bench -- --scale [--quick]`). */
export interface ScaleSizes {
  runs: number;
  /** Jobs per drain (the new jobs drained on top of history, the target of the backlog curve). */
  drainJobs: number;
  /** Concurrency of the one worker process of every curve but the processes curve. */
  concurrency: number;
  /** Completed jobs already retained before the drain. */
  history: number[];
  /** Jobs queued when the workers start; the first `drainJobs` are timed. */
  backlog: number[];
  /** Worker processes × concurrency each, at about the same total concurrency. */
  shapes: [processes: number, concurrency: number][];
  /** Queues the drain's jobs are spread over. */
  queues: number[];
  /** Queues of the idle fleet whose statement rate is measured. */
  idleQueues: number[];
  idleWarmupMs: number;
  idleWindowMs: number;
  /** Offered loads of the latency curve, jobs/s. */
  loads: number[];
  latencySeconds: number;
  latencyConcurrency: number;
  /** Payload sizes, bytes of padding (0: the no-op payload). */
  payloadBytes: number[];
  /** Payload bytes per drain at most: a drain of large payloads has fewer jobs (at least 500). */
  payloadBudgetBytes: number;
}

/** The full run, for the lead on a quiet machine: hours, most of it preloading 10 M rows. */
export const FULL_SCALE: ScaleSizes = {
  runs: 3,
  drainJobs: 50_000,
  concurrency: 50,
  history: [0, 200_000, 1_000_000, 2_000_000, 10_000_000],
  backlog: [50_000, 200_000, 1_000_000],
  shapes: [
    [1, 50],
    [2, 25],
    [4, 12],
  ],
  queues: [1, 10, 50, 200],
  idleQueues: [1, 10, 50, 200],
  idleWarmupMs: 10_000,
  idleWindowMs: 20_000,
  loads: [100, 500, 2_000],
  latencySeconds: 10,
  latencyConcurrency: 10,
  payloadBytes: [0, 10_000, 100_000],
  payloadBudgetBytes: 1_000_000_000,
};

/** A smoke run of every curve in a few minutes: tiny sizes, one run; the shapes of the curves only. */
export const QUICK_SCALE: ScaleSizes = {
  runs: 1,
  drainJobs: 5_000,
  concurrency: 50,
  history: [0, 20_000, 100_000],
  backlog: [5_000, 20_000, 50_000],
  shapes: [
    [1, 50],
    [2, 25],
    [4, 12],
  ],
  queues: [1, 10, 200],
  idleQueues: [1, 10, 200],
  idleWarmupMs: 3_000,
  idleWindowMs: 4_000,
  loads: [100, 500],
  latencySeconds: 2,
  latencyConcurrency: 10,
  payloadBytes: [0, 10_000, 100_000],
  payloadBudgetBytes: 50_000_000,
};

/** Jobs of a payload drain: the usual count, fewer when the payload budget would be passed. */
export function payloadJobs(sizes: ScaleSizes, bytes: number): number {
  if (bytes === 0) return sizes.drainJobs;
  return Math.max(500, Math.min(sizes.drainJobs, Math.floor(sizes.payloadBudgetBytes / bytes)));
}
