import { Logger, makeWorkerUtils, run, runMigrations, type WorkerUtils } from 'graphile-worker';
import type { BenchPayload, Producer, RunningWorker, SystemAdapter } from './system.js';

const TASK = 'noop';
/**
 * With jobs spread over several "queues" (bench/scale), one task identifier per queue: a worker
 * serving N kinds of work. Not graphile-worker's `queueName`, which runs a named queue's jobs one at
 * a time (a different feature); nightshift's queues run in parallel like separate task identifiers.
 */
const task = (q: number | undefined) => (q === undefined ? TASK : `${TASK}_${q}`);
const silent = new Logger(() => () => undefined);

/**
 * The batching options of graphile-worker's performance guide
 * (https://worker.graphile.org/docs/performance): a local queue of 500 jobs fetched and locked at
 * once, and completions and failures batched (delay 0: batched with whatever else finished in the
 * same tick). Pool size per its docs: the larger of 10 and concurrency + 2.
 */
function preset(url: string, concurrency: number) {
  return {
    worker: {
      connectionString: url,
      concurrentJobs: concurrency,
      maxPoolSize: Math.max(10, concurrency + 2),
      localQueue: { size: 500 },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
      logger: silent,
    },
  };
}

/** graphile-worker 0.17 with the batching options of its performance guide. */
export const graphileWorkerAdapter: SystemAdapter = {
  id: 'graphile-worker',
  label: 'graphile-worker 0.17.3',
  settings: (concurrency) => ({
    concurrentJobs: String(concurrency),
    maxPoolSize: String(Math.max(10, concurrency + 2)),
    'localQueue.size': '500',
    completeJobBatchDelay: '0',
    failJobBatchDelay: '0',
    other: 'defaults: pollInterval 2000 ms with LISTEN/NOTIFY, useNodeTime false (database clock, as nightshift)',
  }),
  async migrate(url) {
    await runMigrations({ connectionString: url, logger: silent });
  },
  // Completed jobs are deleted.
  pendingSql: `SELECT EXISTS (SELECT 1 FROM graphile_worker._private_jobs) AS pending`,
  async producer(url): Promise<Producer> {
    const utils: WorkerUtils = await makeWorkerUtils({ connectionString: url, maxPoolSize: 20, logger: silent });
    return {
      async enqueueBulk(payloads: BenchPayload[]) {
        await utils.addJobs(payloads.map((payload) => ({ identifier: task(payload.q), payload })));
      },
      async enqueueOne(payload: BenchPayload) {
        await utils.addJob(task(payload.q), payload);
      },
      close: async () => {
        await utils.release();
      },
    };
  },
  async startWorker(url, concurrency, hook, shape): Promise<RunningWorker> {
    const handler = async (payload: unknown) => hook(payload as BenchPayload);
    const queues = shape?.queues ?? 1;
    const taskList = queues > 1 ? Object.fromEntries(Array.from({ length: queues }, (_, q) => [task(q), handler])) : { [TASK]: handler };
    const runner = await run({
      noHandleSignals: true,
      taskList,
      preset: preset(url, concurrency),
    });
    return {
      async stop() {
        await runner.stop();
      },
    };
  },
};
