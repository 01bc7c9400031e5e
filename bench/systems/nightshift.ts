import { z } from 'zod';
import { createNightshift, defineJob, type Nightshift, type NightshiftOptions } from '../../src/index.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import type { BenchPayload, JobHook, Producer, RunningWorker, SystemAdapter, WorkerShape } from './system.js';

const SCHEMA = 'nightshift';
const KIND = 'bench.noop';

// A real payload schema: nightshift validates on enqueue and again before the handler runs.
const payload = z.object({ i: z.number().int().optional(), t: z.number().optional(), q: z.number().int().optional(), pad: z.string().optional() });

/** The queue of queue index `q` when jobs are spread over several queues (bench/scale). */
const queueName = (q: number) => `q${q}`;

function noop(hook: JobHook) {
  return defineJob({ kind: KIND, payload, run: (p) => hook(p) });
}

// For experiments: client options to try, as JSON (recorded in the results' settings).
const overrides = JSON.parse(process.env.BENCH_NIGHTSHIFT_OPTIONS ?? '{}') as Partial<NightshiftOptions>;

function client(url: string, hook: JobHook, concurrency = 10, shape: WorkerShape = {}): Nightshift {
  // Several queues: one role claiming all of them (a process claims the queues its roles name).
  const queues = shape.queues && shape.queues > 1 ? Array.from({ length: shape.queues }, (_, q) => queueName(q)) : undefined;
  // Every guarantee at its default: leases with fencing tokens, heartbeats, LISTEN/NOTIFY wake-ups
  // with polling as the safety net, maintenance (rescue, expiry, pruning) in the worker process.
  return createNightshift({
    databaseUrl: url,
    schema: SCHEMA,
    jobs: [noop(hook)],
    concurrency,
    logger: silentLogger(),
    ...(queues ? { roles: { bench: { queues } }, activeRoles: ['bench'] } : {}),
    ...overrides,
  });
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
  // Running jobs are found through the lease index (a running job always holds a lease: the
  // jobs_lease_when_running constraint). `state = 'running'` alone has no index and scanned the
  // whole table, retained history included: 72 ms a poll at 1 M finished rows, in the drain's tail.
  pendingSql: `SELECT EXISTS (SELECT 1 FROM ${SCHEMA}.jobs WHERE state = 'available') OR EXISTS (SELECT 1 FROM ${SCHEMA}.jobs WHERE lease_expires_at IS NOT NULL AND state = 'running') AS pending`,
  async producer(url): Promise<Producer> {
    const ns = client(url, () => undefined);
    return {
      async enqueueBulk(payloads: BenchPayload[]) {
        const spread = payloads.some((p) => p.q !== undefined);
        await ns.enqueueMany(KIND, payloads, spread ? (p) => ({ queue: queueName((p as BenchPayload).q ?? 0) }) : undefined);
      },
      async enqueueOne(p: BenchPayload) {
        await ns.enqueue(KIND, p);
      },
      close: () => ns.stop(),
    };
  },
  async startWorker(url, concurrency, hook, shape): Promise<RunningWorker> {
    const ns = client(url, hook, concurrency, shape);
    await ns.start();
    return { stop: () => ns.stop() };
  },
};
