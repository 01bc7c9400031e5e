import pg from 'pg';
import { Child, withTimeout } from './children.js';
import { databaseCpuUs } from './cpu.js';
import { wallMs, type WorkerStats } from './protocol.js';
import type { BenchServer } from './server.js';
import { percentile } from './stats.js';
import type { SystemAdapter } from './systems/system.js';

/** Sizes of one benchmark mode. */
export interface Sizes {
  runs: number;
  bulk: number;
  single: number;
  producers: number;
  drain: number;
  latencyPerSecond: number;
  latencySeconds: number;
  /** Seconds per raw-ceiling measurement. */
  rawSeconds: number;
  /** Rows claimed and deleted in the raw ceiling run. */
  rawClaimRows: number;
}

/** What the scenarios need from the orchestrator. */
export interface ScenarioContext {
  server: BenchServer;
  /** The bundled child script. */
  script: string;
  sizes: Sizes;
  log(line: string): void;
  /** Node flags for children (a CPU profile directory when profiling). */
  execArgv: string[];
}

const START_MS = 30_000;

/** One drain configuration: processes × concurrency each. */
export interface DrainShape {
  processes: number;
  concurrency: number;
}

/** Bulk enqueue with the system's batch API; jobs/s. */
export async function bulkEnqueue(ctx: ScenarioContext, system: SystemAdapter, url: string): Promise<number> {
  const n = ctx.sizes.bulk;
  const child = await Child.start(ctx.script, { type: 'init', system: system.id, url, role: 'producer' }, START_MS, ctx.execArgv);
  try {
    const { ms } = await child.request<{ ms: number }>({ op: 'bulk', n }, 120_000);
    return n / (ms / 1000);
  } finally {
    await child.stop(10_000);
  }
}

/** Concurrent single enqueues, each its own call; jobs/s. */
export async function singleEnqueue(ctx: ScenarioContext, system: SystemAdapter, url: string): Promise<number> {
  const { single: n, producers } = ctx.sizes;
  const child = await Child.start(ctx.script, { type: 'init', system: system.id, url, role: 'producer' }, START_MS, ctx.execArgv);
  try {
    const { ms } = await child.request<{ ms: number }>({ op: 'single', n, producers }, 120_000);
    return n / (ms / 1000);
  } finally {
    await child.stop(10_000);
  }
}

/** The result of one drain run. */
export interface DrainResult {
  jobsPerSecond: number;
  /** Peak RSS of each worker process, bytes. */
  peakRss: number[];
  /** Peak V8 heap (total) of each worker process, bytes. */
  peakHeap: number[];
  /**
   * CPU time per job, µs: the worker processes' (from their first handler start) and the
   * database's (every postgres process, from the workers' start; NaN when not local).
   */
  cpuPerJob: { workers: number; database: number };
}

/**
 * Drains pre-enqueued jobs: from the first handler start in any worker process until the database
 * holds no job that is not completed (so batched completions must have committed).
 */
export async function drain(ctx: ScenarioContext, system: SystemAdapter, url: string, shape: DrainShape): Promise<DrainResult> {
  const n = ctx.sizes.drain;
  const producer = await system.producer(url);
  try {
    for (let i = 0; i < n; i += 10_000) {
      await producer.enqueueBulk(Array.from({ length: Math.min(10_000, n - i) }, (_, k) => ({ i: i + k })));
    }
  } finally {
    await producer.close();
  }
  await ctx.server.settle(url);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const workers: Child[] = [];
  const db0 = databaseCpuUs();
  try {
    const starting = Array.from({ length: shape.processes }, () => Child.start(ctx.script, { type: 'init', system: system.id, url, role: 'worker', concurrency: shape.concurrency }, START_MS, ctx.execArgv));
    for (const s of await Promise.allSettled(starting)) {
      if (s.status === 'fulfilled') workers.push(s.value);
      else throw s.reason;
    }
    const deadline = Date.now() + Math.max(60_000, (n / 500) * 1000);
    let end = 0;
    for (;;) {
      const { rows } = await db.query<{ pending: boolean }>(system.pendingSql);
      if (!rows[0]!.pending) {
        end = wallMs();
        break;
      }
      if (Date.now() > deadline) throw new Error(`drain of ${n} jobs not finished in time`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const dbUs = databaseCpuUs() - db0;
    const stats = await Promise.all(workers.map((w) => w.stop<WorkerStats>(20_000)));
    const firsts = stats.map((s) => s?.firstAt).filter((x): x is number => typeof x === 'number');
    const handled = stats.reduce((a, s) => a + (s?.handled ?? 0), 0);
    if (handled < n) throw new Error(`workers report ${handled} jobs handled of ${n}`);
    const start = Math.min(...firsts);
    const workersUs = stats.reduce((a, s) => a + (s?.cpuUsSinceFirst ?? NaN), 0);
    return {
      jobsPerSecond: n / ((end - start) / 1000),
      peakRss: stats.map((s) => s?.peakRss ?? NaN),
      peakHeap: stats.map((s) => s?.peakHeapTotal ?? NaN),
      cpuPerJob: { workers: workersUs / n, database: dbUs / n },
    };
  } finally {
    for (const w of workers) w.kill();
    await db.end();
  }
}

/** Latency percentiles of one run, ms. */
export interface LatencyResult {
  p50: number;
  p95: number;
  p99: number;
  samples: number;
}

/** Enqueue-to-handler-start latency at a steady rate into an idle running worker. */
export async function latency(ctx: ScenarioContext, system: SystemAdapter, url: string): Promise<LatencyResult> {
  const n = Math.round(ctx.sizes.latencyPerSecond * ctx.sizes.latencySeconds);
  const worker = await Child.start(ctx.script, { type: 'init', system: system.id, url, role: 'worker', concurrency: 10 }, START_MS, ctx.execArgv);
  let producer: Child | undefined;
  try {
    // Let the worker go idle (its polling backs off as it would between bursts in production).
    await new Promise((r) => setTimeout(r, 1_500));
    producer = await Child.start(ctx.script, { type: 'init', system: system.id, url, role: 'producer' }, START_MS, ctx.execArgv);
    await producer.request({ op: 'paced', n, perSecond: ctx.sizes.latencyPerSecond }, ctx.sizes.latencySeconds * 1000 + 30_000);
    const stats = await withTimeout(
      (async () => {
        for (;;) {
          const s = await worker.request<WorkerStats>({ op: 'stats' }, 10_000);
          if (s.handled >= n) return s;
          await new Promise((r) => setTimeout(r, 100));
        }
      })(),
      30_000,
      `${system.id} latency: waiting for ${n} jobs`,
    );
    const l = stats.latencies;
    return { p50: percentile(l, 50), p95: percentile(l, 95), p99: percentile(l, 99), samples: l.length };
  } finally {
    await producer?.stop(10_000);
    await worker.stop(20_000);
  }
}
