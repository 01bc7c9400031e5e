import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Child } from '../children.js';
import { startBenchRedis, type BenchRedis } from './redis-server.js';
import { bullQueue, type StreamSide, type StreamTask, type StreamTaskResult } from './tasks.js';

/** Sizes of the streams scenario. */
export interface StreamSizes {
  runs: number;
  /** Entries (jobs) consumed per run. */
  consume: number;
  /** Entries (jobs) published per run. */
  publish: number;
  /** Concurrent publishing callers. */
  callers: number;
}

/** One measured line of the streams table. */
export interface StreamMeasure {
  key: string;
  label: string;
  /** The raw ceiling this line is compared with ('' for a ceiling itself). */
  ceiling: string;
  task: (key: string, s: StreamSizes) => StreamTask;
  /** Fills Redis before a consume run (outside the timed part). */
  preload?: 'stream' | 'bullmq';
}

/** The lines of the table, in the order they run within each round. */
export const STREAM_MEASURES: StreamMeasure[] = [
  {
    key: 'consume-raw',
    label: 'raw `XREADGROUP COUNT 100` + `XACK` loop (one connection)',
    ceiling: '',
    preload: 'stream',
    task: (key, s) => ({ kind: 'consume', side: 'raw', key, n: s.consume, concurrency: 1 }),
  },
  {
    key: 'consume-nightshift-c10',
    label: 'nightshift at-least-once consumer, concurrency 10',
    ceiling: 'consume-raw',
    preload: 'stream',
    task: (key, s) => ({ kind: 'consume', side: 'nightshift', key, n: s.consume, concurrency: 10 }),
  },
  {
    key: 'consume-nightshift-c50',
    label: 'nightshift at-least-once consumer, concurrency 50',
    ceiling: 'consume-raw',
    preload: 'stream',
    task: (key, s) => ({ kind: 'consume', side: 'nightshift', key, n: s.consume, concurrency: 50 }),
  },
  { key: 'consume-bullmq-c10', label: 'BullMQ worker, concurrency 10', ceiling: 'consume-raw', preload: 'bullmq', task: (key, s) => ({ kind: 'consume', side: 'bullmq', key, n: s.consume, concurrency: 10 }) },
  { key: 'consume-bullmq-c50', label: 'BullMQ worker, concurrency 50', ceiling: 'consume-raw', preload: 'bullmq', task: (key, s) => ({ kind: 'consume', side: 'bullmq', key, n: s.consume, concurrency: 50 }) },
  { key: 'publish-raw', label: 'raw `XADD`, pipelined 1,000 per round trip', ceiling: '', task: (key, s) => ({ kind: 'publish', side: 'raw', key, n: s.publish, callers: 1 }) },
  { key: 'publish-nightshift', label: 'nightshift `publish`, 16 concurrent callers', ceiling: 'publish-raw', task: (key, s) => ({ kind: 'publish', side: 'nightshift', key, n: s.publish, callers: s.callers }) },
  { key: 'publish-bullmq', label: 'BullMQ `Queue.add`, 16 concurrent callers', ceiling: 'publish-raw', task: (key, s) => ({ kind: 'publish', side: 'bullmq', key, n: s.publish, callers: s.callers }) },
];

/** What the scenario measured: entries/s of each run, per line. */
export interface StreamResults {
  redis: string;
  sizes: StreamSizes;
  figures: Record<string, number[]>;
  notes: string[];
}

const SIDE_PACKAGES: Record<StreamSide, string> = { nightshift: 'nightshift', raw: 'ioredis', bullmq: 'bullmq' };

/** Fills a stream with `n` entries as nightshift's publish writes them (`payload <json>`), pipelined. */
async function preloadStream(redis: Redis, key: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 1_000) {
    const p = redis.pipeline();
    for (let k = i; k < Math.min(n, i + 1_000); k++) p.xadd(key, '*', 'payload', JSON.stringify({ i: k }));
    await p.exec();
  }
}

/** Adds `n` BullMQ jobs with its bulk API (removed when completed, the cheapest setting). */
async function preloadBullmq(url: string, key: string, n: number): Promise<void> {
  const u = new URL(url);
  const queue = new Queue(bullQueue(key), { connection: { host: u.hostname, port: Number(u.port) } });
  try {
    for (let i = 0; i < n; i += 1_000) {
      await queue.addBulk(Array.from({ length: Math.min(1_000, n - i) }, (_, k) => ({ name: 'noop', data: { i: i + k }, opts: { removeOnComplete: true } })));
    }
  } finally {
    await queue.close();
  }
}

/**
 * Runs every line of the streams table `sizes.runs` times, round by round (every line once, then
 * again), each in a fresh child process on an emptied Redis (FLUSHALL, then the preload outside the
 * timed part). `unit` bounds and records each run; a failure is noted and the rest goes on.
 */
export async function measureStreams(script: string, sizes: StreamSizes, log: (line: string) => void, unit: (what: string, fn: () => Promise<void>, maxMs: number) => Promise<void>): Promise<StreamResults> {
  const results: StreamResults = { redis: '', sizes, figures: {}, notes: [] };
  let redis: BenchRedis | undefined;
  let admin: Redis | undefined;
  try {
    redis = await startBenchRedis();
    results.redis = redis.describe;
    admin = new Redis(redis.url);
    log(`streams: ${redis.describe} on port ${redis.port}`);
    for (let r = 1; r <= sizes.runs; r++) {
      for (const m of STREAM_MEASURES) {
        const task = m.task(`bench:${m.key}:${r}`, sizes);
        const n = task.n;
        await unit(
          `streams ${m.key} run ${r}`,
          async () => {
            await admin!.flushall();
            if (m.preload === 'stream') await preloadStream(admin!, task.key, n);
            if (m.preload === 'bullmq') await preloadBullmq(redis!.url, task.key, n);
            const child = await Child.start(script, { type: 'init', system: SIDE_PACKAGES[task.side], url: redis!.url, role: 'worker' }, 30_000);
            try {
              const res = await child.request<StreamTaskResult>({ op: 'stream', task }, Math.max(60_000, n / 2));
              if (res.handled < n) throw new Error(`${res.handled} of ${n} entries handled`);
              const rate = n / (res.ms / 1000);
              (results.figures[m.key] ??= []).push(rate);
              log(`streams ${m.key} run ${r}: ${Math.round(rate)} entries/s`);
            } finally {
              await child.stop(10_000);
            }
          },
          Math.max(120_000, n * 2),
        );
      }
    }
    await admin.flushall();
  } finally {
    admin?.disconnect();
    await redis?.destroy();
  }
  return results;
}
