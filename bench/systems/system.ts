/**
 * The interface every benchmarked system implements, so each scenario runs the same code against
 * nightshift and its peers. Setup methods run in the orchestrator; producer and worker methods run
 * in child processes (so RSS and multi-process drain are real).
 */

/** The payload of every benchmark job: a sequence number, or a send time for latency runs. */
export interface BenchPayload {
  i?: number;
  /** Send time in ms on the host's shared monotonic clock (see wallMs in bench/protocol.ts). */
  t?: number;
  /** Queue index (0 … queues − 1) when jobs are spread over several queues (bench/scale). */
  q?: number;
  /** Padding that gives the payload its size in the payload-size curve (bench/scale). */
  pad?: string;
}

/** How a worker is set up beyond its concurrency (bench/scale). */
export interface WorkerShape {
  /** Queues the jobs are spread over (payload field `q`); 1 (the default) is the system's default queue. */
  queues?: number;
}

/** Called by the system's handler for every job it runs; the handler does nothing else. */
export type JobHook = (payload: BenchPayload) => void;

/** A client that enqueues jobs (no worker). */
export interface Producer {
  /** Enqueues all payloads with the system's batch API. */
  enqueueBulk(payloads: BenchPayload[]): Promise<void>;
  /** Enqueues one job with the system's single-job API; resolves when it is committed. */
  enqueueOne(payload: BenchPayload): Promise<void>;
  close(): Promise<void>;
}

/** A running worker. */
export interface RunningWorker {
  stop(): Promise<void>;
}

/** A system under test. */
export interface SystemAdapter {
  /** Short id used in file names and the command line. */
  readonly id: 'nightshift' | 'nightshift-limited' | 'graphile-worker' | 'pg-boss';
  /** Display name with version. */
  readonly label: string;
  /** The settings used, for the results (so the comparison can be judged). */
  settings(concurrency: number): Record<string, string>;
  /** Installs the system's schema into the database at `url`. */
  migrate(url: string): Promise<void>;
  /**
   * SQL returning one row `{ pending }`: whether any job is not yet completed (the drain is over
   * when it is false). An EXISTS, so polling it costs the systems little.
   */
  readonly pendingSql: string;
  /** Opens a producer. */
  producer(url: string): Promise<Producer>;
  /** Starts a worker at the given concurrency that calls `hook` for each job. */
  startWorker(url: string, concurrency: number, hook: JobHook, shape?: WorkerShape): Promise<RunningWorker>;
}
