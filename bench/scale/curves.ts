import pg from 'pg';
import type { SystemAdapter } from '../systems/system.js';
import { shortBytes, shortCount, type ScaleContext } from './context.js';
import { scaleDrain } from './drain.js';
import { historyPreload } from './history.js';
import { idleCost } from './idle-cost.js';
import { latencyAtLoad } from './latency-at-load.js';
import { payloadJobs, type ScaleSizes } from './sizes.js';

/** One point of a curve: its x value and its label on the chart. */
export interface CurvePoint {
  x: number;
  label: string;
}

/** What one measurement of one system at one point gave: series suffix → value (`''` for the main one). */
export interface Measured {
  values: Record<string, number>;
  /** Figures for the table only (e.g. the rate a producer achieved). */
  extra?: Record<string, number>;
}

/** Where a measurement runs: a fresh database cloned for this run. */
export interface RunTarget {
  url: string;
  db: string;
}

/** One curve of the scale run. */
export interface CurveSpec {
  key: string;
  title: string;
  xLabel: string;
  yLabel: string;
  unit: 'jobs/s' | 'ms' | 'transactions/s';
  better: 'higher' | 'lower';
  /** A logarithmic y axis (latency grows by orders of magnitude once a producer falls behind). */
  yLog?: boolean;
  /** Series suffixes, in legend order (`''`: one series per system). */
  suffixes: string[];
  points(sizes: ScaleSizes): CurvePoint[];
  /** What the reader must know about the curve (shown under the chart and the table). */
  notes(sizes: ScaleSizes): string[];
  /** Fills a template database for this point (the history curve); returns false when the system is not measured at it. */
  prepare?(ctx: ScaleContext, system: SystemAdapter, template: RunTarget, x: number): Promise<boolean>;
  measure(ctx: ScaleContext, system: SystemAdapter, run: RunTarget, x: number, sizes: ScaleSizes): Promise<Measured>;
}

const drainRate = async (p: Promise<{ jobsPerSecond: number }>): Promise<Measured> => ({ values: { '': (await p).jobsPerSecond } });

/** Every curve, in the order they run and appear in the results. */
export const CURVES: CurveSpec[] = [
  {
    key: 'history',
    title: 'Drain rate vs retained history',
    xLabel: 'completed jobs already retained',
    yLabel: 'jobs/s',
    unit: 'jobs/s',
    better: 'higher',
    suffixes: [''],
    points: (s) => s.history.map((x) => ({ x, label: shortCount(x) })),
    notes: (s) => [
      `Drain of ${shortCount(s.drainJobs)} new jobs, 1 process × concurrency ${s.concurrency}, on top of the finished jobs already in the database (inserted in SQL as each system's completion leaves them, then VACUUM ANALYZE and CHECKPOINT; every run clones that database).`,
      'graphile-worker deletes a job when it completes, so it retains no history at any point: its curve is flat by design, and its table holds only the jobs being drained.',
    ],
    async prepare(ctx, system, template, x) {
      const preload = historyPreload(system);
      if (!preload) return false;
      const db = new pg.Client({ connectionString: template.url });
      db.on('error', () => undefined);
      await db.connect();
      try {
        const kept = await preload.insertFinished(db, x);
        ctx.log(`${system.id}: ${kept.toLocaleString('en-US')} finished jobs retained (${await preload.where(db)})`);
      } finally {
        await db.end();
      }
      await ctx.server.settle(template.url);
      return true;
    },
    measure: (ctx, s, run, _x, sizes) => drainRate(scaleDrain(ctx, s, run.url, { jobs: sizes.drainJobs, processes: 1, concurrency: sizes.concurrency })),
  },
  {
    key: 'backlog',
    title: 'Drain rate vs backlog depth',
    xLabel: 'jobs queued when the workers start',
    yLabel: 'jobs/s (first jobs drained)',
    unit: 'jobs/s',
    better: 'higher',
    suffixes: [''],
    points: (s) => s.backlog.map((x) => ({ x, label: `${shortCount(s.drainJobs)} of ${shortCount(x)}` })),
    notes: (s) => [
      `The first ${shortCount(s.drainJobs)} jobs of a deeper queue, 1 process × concurrency ${s.concurrency}: timed from the first handler start to the ${s.drainJobs.toLocaleString('en-US')}th (handler starts, polled every 20 ms; the other curves time to the last committed completion).`,
    ],
    measure: (ctx, s, run, x, sizes) => drainRate(scaleDrain(ctx, s, run.url, { jobs: x, target: sizes.drainJobs, processes: 1, concurrency: sizes.concurrency })),
  },
  {
    key: 'processes',
    title: 'Drain rate vs worker processes at fixed total concurrency',
    xLabel: 'worker processes × concurrency each',
    yLabel: 'jobs/s',
    unit: 'jobs/s',
    better: 'higher',
    suffixes: [''],
    points: (s) => s.shapes.map(([p, c], i) => ({ x: i, label: `${p} × ${c}` })),
    notes: (s) => [
      `Drain of ${shortCount(s.drainJobs)} jobs by real worker processes started together; the same total concurrency (about ${s.shapes[0]![0] * s.shapes[0]![1]}) split over more processes.`,
      'CPU µs/job: CPU time of the worker processes from their first handler start (process.cpuUsage) and of every server process (/proc/<pid>/schedstat of the pids in pg_stat_activity, from before the workers started), divided by the jobs. On a machine with few cores the sum is what bounds the drain rate of any number of processes.',
    ],
    measure: async (ctx, s, run, x, sizes) => {
      const [processes, concurrency] = sizes.shapes[x]!;
      const r = await scaleDrain(ctx, s, run.url, { jobs: sizes.drainJobs, processes, concurrency });
      // On 2 cores the workers and PostgreSQL share the CPU: what a job costs the machine decides how far more processes can go.
      return {
        values: { '': r.jobsPerSecond },
        extra: { 'CPU µs/job, workers': r.workerCpuUsPerJob, 'CPU µs/job, server': r.serverCpuUsPerJob, 'CPU µs/job, all': r.workerCpuUsPerJob + r.serverCpuUsPerJob },
      };
    },
  },
  {
    key: 'queues',
    title: 'Drain rate vs number of queues',
    xLabel: 'queues (jobs spread evenly)',
    yLabel: 'jobs/s',
    unit: 'jobs/s',
    better: 'higher',
    suffixes: [''],
    points: (s) => s.queues.map((x) => ({ x, label: String(x) })),
    notes: (s) => [
      `Drain of ${shortCount(s.drainJobs)} jobs spread round-robin over the queues, 1 process × concurrency ${s.concurrency} serving all of them.`,
      "nightshift: named queues claimed by one role. graphile-worker: one task identifier per queue (graphile-worker's own `queueName` runs a queue's jobs one at a time, a different feature).",
    ],
    measure: (ctx, s, run, x, sizes) => drainRate(scaleDrain(ctx, s, run.url, { jobs: sizes.drainJobs, processes: 1, concurrency: sizes.concurrency, queues: x })),
  },
  {
    key: 'idle',
    title: 'Idle cost of a worker vs number of queues',
    xLabel: 'queues served, no jobs',
    yLabel: 'database transactions/s',
    unit: 'transactions/s',
    better: 'lower',
    suffixes: [''],
    points: (s) => s.idleQueues.map((x) => ({ x, label: String(x) })),
    notes: (s) => [
      `One idle worker process (concurrency 10) serving the queues, no jobs: commits + rollbacks per second of its database (pg_stat_database; each poll, heartbeat and maintenance statement is its own transaction), over ${s.idleWindowMs / 1000} s after ${s.idleWarmupMs / 1000} s of warm-up. Multiply by the processes of a fleet.`,
    ],
    measure: async (ctx, s, run, x, sizes) => ({ values: { '': await idleCost(ctx, s, run.url, run.db, x, sizes.idleWarmupMs, sizes.idleWindowMs) } }),
  },
  {
    key: 'latency',
    title: 'Enqueue → start latency vs offered load',
    xLabel: 'offered load, jobs/s',
    yLabel: 'ms (log scale)',
    unit: 'ms',
    better: 'lower',
    yLog: true,
    suffixes: ['p50', 'p95', 'p99'],
    points: (s) => s.loads.map((x) => ({ x, label: x.toLocaleString('en-US') })),
    notes: (s) => [
      `Open loop: for ${s.latencySeconds} s, a producer process sends each job at its slot with the single-job API (whether or not earlier sends have resolved) into a running worker (1 process × concurrency ${s.latencyConcurrency}); from just before the enqueue call to the handler start, across processes on one clock. "achieved" is the rate the producer managed: below the offered load, enqueue itself is the bottleneck and the latency includes the wait for it.`,
    ],
    async measure(ctx, s, run, x, sizes) {
      const l = await latencyAtLoad(ctx, s, run.url, x, sizes.latencySeconds, sizes.latencyConcurrency);
      return { values: { p50: l.p50, p95: l.p95, p99: l.p99 }, extra: { 'achieved jobs/s': l.achieved } };
    },
  },
  {
    key: 'payload',
    title: 'Drain rate vs payload size',
    xLabel: 'payload size',
    yLabel: 'jobs/s',
    unit: 'jobs/s',
    better: 'higher',
    suffixes: [''],
    points: (s) => s.payloadBytes.map((x) => ({ x, label: shortBytes(x) })),
    notes: (s) => [
      `Drain, 1 process × concurrency ${s.concurrency}, of jobs whose payload carries that much incompressible text (base64 of random bytes, which PostgreSQL stores uncompressed); ${s.payloadBytes.map((b) => `${shortBytes(b)}: ${shortCount(payloadJobs(s, b))} jobs`).join(', ')} (at most ${s.payloadBudgetBytes / 1e6} MB of payload per drain). The no-op payload is \`{"i": n}\`.`,
    ],
    measure: (ctx, s, run, x, sizes) => drainRate(scaleDrain(ctx, s, run.url, { jobs: payloadJobs(sizes, x), processes: 1, concurrency: sizes.concurrency, padBytes: x })),
  },
];
