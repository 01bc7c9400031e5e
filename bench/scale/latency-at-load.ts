import { Child, withTimeout } from '../children.js';
import type { WorkerStats } from '../protocol.js';
import { percentile } from '../stats.js';
import type { SystemAdapter } from '../systems/system.js';
import { pause, START_MS, type ScaleContext } from './context.js';

/** Latency percentiles of one run at one offered load, ms, and the rate the producer achieved. */
export interface LoadLatency {
  p50: number;
  p95: number;
  p99: number;
  /** Jobs per second the producer actually enqueued (below the offered rate when enqueue cannot keep up). */
  achieved: number;
}

/**
 * Enqueue → handler start latency at `perSecond` jobs/s for `seconds` into a running worker
 * (concurrency `concurrency`) idle for 1.5 s before: an open loop, each job sent at its slot by
 * the system's single-job API whether or not earlier sends have resolved, from another process.
 */
export async function latencyAtLoad(ctx: ScaleContext, system: SystemAdapter, url: string, perSecond: number, seconds: number, concurrency: number): Promise<LoadLatency> {
  const n = Math.round(perSecond * seconds);
  const worker = await Child.start(ctx.script, { type: 'init', system: system.id, url, role: 'worker', concurrency }, START_MS, ctx.execArgv);
  let producer: Child | undefined;
  try {
    await pause(1_500);
    producer = await Child.start(ctx.script, { type: 'init', system: system.id, url, role: 'producer' }, START_MS, ctx.execArgv);
    // A producer that cannot keep up is still bounded: it gets 200 jobs/s and 60 s of slack.
    const paceMs = (n / Math.min(perSecond, 200)) * 1000 + 60_000;
    const { ms } = await producer.request<{ ms: number }>({ op: 'paced', n, perSecond }, paceMs);
    const stats = await withTimeout(
      (async () => {
        for (;;) {
          const s = await worker.request<WorkerStats>({ op: 'stats' }, 10_000);
          if (s.handled >= n) return s;
          await pause(100);
        }
      })(),
      60_000,
      `${system.id} latency at ${perSecond}/s: waiting for ${n} jobs`,
    );
    const l = stats.latencies;
    return { p50: percentile(l, 50), p95: percentile(l, 95), p99: percentile(l, 99), achieved: n / (ms / 1000) };
  } finally {
    await producer?.stop(10_000);
    await worker.stop(20_000);
  }
}
