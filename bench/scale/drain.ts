import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { Child } from '../children.js';
import { wallMs, type WorkerStats } from '../protocol.js';
import type { BenchPayload, SystemAdapter } from '../systems/system.js';
import { pause, START_MS, type ScaleContext } from './context.js';

/** One drain of the scale curves. */
export interface ScaleDrain {
  /** Jobs enqueued before the workers start. */
  jobs: number;
  processes: number;
  /** Concurrency of each process. */
  concurrency: number;
  /** Queues the jobs are spread over evenly (round robin); default 1, the system's default queue. */
  queues?: number;
  /** Bytes of padding in each payload (incompressible text); default 0, the no-op payload. */
  padBytes?: number;
  /**
   * Time the drain to this many handler starts instead of to the moment no job is left (the
   * backlog curve: the first 50,000 of a deeper queue). Default: every job, completions committed.
   */
  target?: number;
}

/** The result of one drain. */
export interface ScaleDrainResult {
  jobsPerSecond: number;
  /** Peak RSS of each worker process, bytes. */
  peakRss: number[];
  /**
   * CPU time per job, µs, of the worker processes (from their first handler start) and of the
   * server's processes (every backend and background process, from before the workers started:
   * their connections' start-up is in it); NaN where /proc/<pid>/schedstat cannot be read.
   */
  workerCpuUsPerJob: number;
  serverCpuUsPerJob: number;
}

/** CPU time in µs of each of the server's processes now (pg_stat_activity lists backends and background processes; /proc/<pid>/schedstat, ns on CPU). */
async function serverCpu(db: pg.Client): Promise<Map<number, number>> {
  const { rows } = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity');
  const out = new Map<number, number>();
  for (const { pid } of rows) {
    try {
      out.set(pid, Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000);
    } catch {
      // gone, or not Linux
    }
  }
  return out;
}

// One enqueue call carries at most this much payload, so 100 kB payloads do not build one huge string.
const ENQUEUE_BYTES = 8_000_000;

/**
 * Incompressible padding of about `bytes` characters: base64 of random bytes. PostgreSQL's pglz
 * gives up on it (it saves less than its 25 % threshold), so the rows carry the full size, as a
 * real payload of that size would at worst.
 */
export function padding(bytes: number): string {
  return bytes > 0
    ? randomBytes(Math.ceil((bytes * 3) / 4))
        .toString('base64')
        .slice(0, bytes)
    : '';
}

/** Enqueues `d.jobs` jobs with the system's batch API, spread over queues, padded. */
export async function enqueueDrainJobs(system: SystemAdapter, url: string, d: ScaleDrain): Promise<void> {
  const pad = padding(d.padBytes ?? 0);
  const queues = d.queues ?? 1;
  const chunk = Math.max(1, Math.min(10_000, Math.floor(ENQUEUE_BYTES / (pad.length + 64))));
  const producer = await system.producer(url);
  try {
    for (let i = 0; i < d.jobs; i += chunk) {
      const payloads: BenchPayload[] = Array.from({ length: Math.min(chunk, d.jobs - i) }, (_, k) => {
        const p: BenchPayload = { i: i + k };
        if (queues > 1) p.q = (i + k) % queues;
        if (pad) p.pad = pad;
        return p;
      });
      await producer.enqueueBulk(payloads);
    }
  } finally {
    await producer.close();
  }
}

/**
 * Enqueues, settles the database (VACUUM ANALYZE, CHECKPOINT), starts the worker processes and
 * times the drain: from the first handler start in any worker to the moment the database holds no
 * unfinished job (so batched completions must have committed), or to the `target`-th handler start.
 */
export async function scaleDrain(ctx: ScaleContext, system: SystemAdapter, url: string, d: ScaleDrain): Promise<ScaleDrainResult> {
  await enqueueDrainJobs(system, url, d);
  await ctx.server.settle(url);
  const target = d.target ?? d.jobs;
  const db = new pg.Client({ connectionString: url });
  // The server going away (Ctrl-C, a timeout) fails the next query; it must not crash the run.
  db.on('error', () => undefined);
  await db.connect();
  const workers: Child[] = [];
  try {
    const cpu0 = await serverCpu(db);
    const starting = Array.from({ length: d.processes }, () =>
      Child.start(ctx.script, { type: 'init', system: system.id, url, role: 'worker', concurrency: d.concurrency, queues: d.queues ?? 1 }, START_MS, ctx.execArgv),
    );
    const settled = await Promise.allSettled(starting);
    for (const s of settled) if (s.status === 'fulfilled') workers.push(s.value);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    // Bounded: a drain slower than 300 jobs/s is a failure, not a figure.
    const deadline = Date.now() + Math.max(60_000, (target / 300) * 1000);
    let end = 0;
    for (;;) {
      if (target < d.jobs) {
        const stats = await Promise.all(workers.map((w) => w.request<WorkerStats>({ op: 'stats' }, 10_000)));
        if (stats.reduce((a, s) => a + s.handled, 0) >= target) {
          end = wallMs();
          break;
        }
      } else {
        const { rows } = await db.query<{ pending: boolean }>(system.pendingSql);
        if (!rows[0]!.pending) {
          end = wallMs();
          break;
        }
      }
      if (Date.now() > deadline) throw new Error(`${system.id}: drain of ${target} of ${d.jobs} jobs not finished in time`);
      await pause(20);
    }
    const cpu1 = await serverCpu(db);
    let serverUs = 0;
    for (const [pid, us] of cpu1) serverUs += us - (cpu0.get(pid) ?? 0);
    const stats = await Promise.all(workers.map((w) => w.stop<WorkerStats>(20_000)));
    const workerUs = stats.reduce((a, s) => a + (s?.cpuUsSinceFirst ?? NaN), 0);
    const firsts = stats.map((s) => s?.firstAt).filter((x): x is number => typeof x === 'number');
    const handled = stats.reduce((a, s) => a + (s?.handled ?? 0), 0);
    if (handled < target) throw new Error(`${system.id}: workers report ${handled} jobs handled of ${target}`);
    return {
      jobsPerSecond: target / ((end - Math.min(...firsts)) / 1000),
      peakRss: stats.map((s) => s?.peakRss ?? NaN),
      workerCpuUsPerJob: workerUs / target,
      serverCpuUsPerJob: cpu1.size > 0 ? serverUs / target : NaN,
    };
  } finally {
    for (const w of workers) w.kill();
    await db.end();
  }
}
