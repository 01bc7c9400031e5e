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

/**
 * Fleet-wide limits on, never hit (the limited-drain measure), each far above what the drain
 * reaches, so the figure is the cost of enforcing them, not of waiting for them. BENCH_LIMITS picks
 * the set: `concurrency` (default: a global limit and one per key over 100 keys), `rate` (a rate
 * limit) or `all` (both). A kind under a rate limit is claimed only for free slots (no claiming
 * ahead: docs/flow-control.md), so `rate` and `all` measure that too.
 */
const LIMIT_SET = process.env.BENCH_LIMITS ?? 'concurrency';
if (!['concurrency', 'rate', 'all'].includes(LIMIT_SET)) throw new Error(`BENCH_LIMITS must be concurrency, rate or all, got ${LIMIT_SET}`);
const CONCURRENCY_NOT_HIT = [{ limit: 100_000 }, { limit: 10_000, key: (p: { i?: number }) => String((p.i ?? 0) % 100) }];
const RATE_NOT_HIT = { limit: 1_000_000, per: 1_000 };
const LIMITS_NOT_HIT = {
  ...(LIMIT_SET !== 'rate' ? { concurrency: CONCURRENCY_NOT_HIT } : {}),
  ...(LIMIT_SET !== 'concurrency' ? { rateLimit: RATE_NOT_HIT } : {}),
};
const LIMITS_TEXT = [LIMIT_SET !== 'rate' ? 'concurrency 100,000 in total and 10,000 per key (100 keys)' : '', LIMIT_SET !== 'concurrency' ? '1,000,000 starts per second' : ''].filter(Boolean).join(', ');

function noop(hook: JobHook, limited = false) {
  return defineJob({ kind: KIND, payload, run: (p) => hook(p), ...(limited ? LIMITS_NOT_HIT : {}) });
}

// For experiments: client options to try, as JSON (recorded in the results' settings).
const overrides = JSON.parse(process.env.BENCH_NIGHTSHIFT_OPTIONS ?? '{}') as Partial<NightshiftOptions>;

function client(url: string, hook: JobHook, concurrency = 10, shape: WorkerShape = {}, limited = false): Nightshift {
  // Several queues: one role claiming all of them (a process claims the queues its roles name).
  const queues = shape.queues && shape.queues > 1 ? Array.from({ length: shape.queues }, (_, q) => queueName(q)) : undefined;
  // Every guarantee at its default: leases with fencing tokens, heartbeats, LISTEN/NOTIFY wake-ups
  // with polling as the safety net, maintenance (rescue, expiry, pruning) in the worker process.
  return createNightshift({
    databaseUrl: url,
    schema: SCHEMA,
    jobs: [noop(hook, limited)],
    concurrency,
    logger: silentLogger(),
    ...(queues ? { roles: { bench: { queues } }, activeRoles: ['bench'] } : {}),
    ...overrides,
  });
}

/** nightshift with its defaults; with `limited`, the job kind has fleet-wide limits that the run never hits. */
function adapter(limited: boolean): SystemAdapter {
  return {
    id: limited ? 'nightshift-limited' : 'nightshift',
    label: limited ? 'nightshift, limits on (not hit)' : 'nightshift (this checkout)',
    settings: (concurrency) => ({
      concurrency: String(concurrency),
      ...(Object.keys(overrides).length ? { overrides: JSON.stringify(overrides) } : {}),
      other: `all defaults: pool 10, lease 30 s, heartbeat 10 s, LISTEN/NOTIFY on, poll ≤ 1 s, maintenance on, zod payload schema validated on enqueue and run${limited ? `; limits (BENCH_LIMITS=${LIMIT_SET}): ${LIMITS_TEXT}` : ''}`,
    }),
    async migrate(url) {
      const ns = client(url, () => undefined);
      try {
        await ns.migrate();
      } finally {
        await ns.stop();
      }
    },
    pendingSql: PENDING_SQL,
    async producer(url): Promise<Producer> {
      const ns = client(url, () => undefined, 10, {}, limited);
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
      const ns = client(url, hook, concurrency, shape, limited);
      await ns.start();
      return { stop: () => ns.stop() };
    },
  };
}

// Running jobs are found through the lease index (a running job always holds a lease: the
// jobs_lease_when_running constraint). `state = 'running'` alone has no index and scanned the
// whole table, retained history included: 72 ms a poll at 1 M finished rows, in the drain's tail.
const PENDING_SQL = `SELECT EXISTS (SELECT 1 FROM ${SCHEMA}.jobs WHERE state = 'available') OR EXISTS (SELECT 1 FROM ${SCHEMA}.jobs WHERE lease_expires_at IS NOT NULL AND state = 'running') AS pending`;

/** The limited drain: nightshift with limits on its kind that the run never reaches (see LIMITS_NOT_HIT). */
export const nightshiftLimitedAdapter: SystemAdapter = adapter(true);

/** nightshift with its defaults. */
export const nightshiftAdapter: SystemAdapter = adapter(false);
