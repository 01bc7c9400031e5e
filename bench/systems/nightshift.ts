import { z } from 'zod';
import { createNightshift, defineJob, type Nightshift, type NightshiftOptions } from '../../src/index.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import type { BenchPayload, JobHook, Producer, RunningWorker, SystemAdapter } from './system.js';

const SCHEMA = 'nightshift';
const KIND = 'bench.noop';

// A real payload schema: nightshift validates on enqueue and again before the handler runs.
const payload = z.object({ i: z.number().int().optional(), t: z.number().optional() });

function noop(hook: JobHook) {
  return defineJob({ kind: KIND, payload, run: (p) => hook(p) });
}

// For experiments: client options to try, as JSON (recorded in the results' settings).
const overrides = JSON.parse(process.env.BENCH_NIGHTSHIFT_OPTIONS ?? '{}') as Partial<NightshiftOptions>;

function client(url: string, hook: JobHook, concurrency = 10): Nightshift {
  // Every guarantee at its default: leases with fencing tokens, heartbeats, LISTEN/NOTIFY wake-ups
  // with polling as the safety net, maintenance (rescue, expiry, pruning) in the worker process.
  return createNightshift({ databaseUrl: url, schema: SCHEMA, jobs: [noop(hook)], concurrency, logger: silentLogger(), ...overrides });
}

/** nightshift with its defaults. */
export const nightshiftAdapter: SystemAdapter = {
  id: 'nightshift',
  label: 'nightshift (this checkout)',
  settings: (concurrency) => ({
    concurrency: String(concurrency),
    ...(Object.keys(overrides).length ? { overrides: JSON.stringify(overrides) } : {}),
    other: 'all defaults: pool 10, lease 30 s, heartbeat 10 s, LISTEN/NOTIFY on, poll ≤ 1 s, maintenance on, zod payload schema validated on enqueue and run',
  }),
  async migrate(url) {
    const ns = client(url, () => undefined);
    try {
      await ns.migrate();
    } finally {
      await ns.stop();
    }
  },
  pendingSql: `SELECT EXISTS (SELECT 1 FROM ${SCHEMA}.jobs WHERE state = 'available') OR EXISTS (SELECT 1 FROM ${SCHEMA}.jobs WHERE state = 'running') AS pending`,
  async producer(url): Promise<Producer> {
    const ns = client(url, () => undefined);
    return {
      async enqueueBulk(payloads: BenchPayload[]) {
        await ns.enqueueMany(KIND, payloads);
      },
      async enqueueOne(p: BenchPayload) {
        await ns.enqueue(KIND, p);
      },
      close: () => ns.stop(),
    };
  },
  async startWorker(url, concurrency, hook): Promise<RunningWorker> {
    const ns = client(url, hook, concurrency);
    await ns.start();
    return { stop: () => ns.stop() };
  },
};
