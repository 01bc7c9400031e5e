import { Database } from '../db/database.js';
import { createPool, type PgPool, type PoolHandle } from '../db/pool.js';
import type { JobDefinition } from '../jobs/define-job.js';
import { Enqueuer } from '../jobs/enqueuer.js';
import { JobRegistry } from '../jobs/job-registry.js';
import type { Nightshift } from '../runtime/nightshift.js';

/**
 * What the helpers of nightshift/testing build from a user's client, out of its public members
 * only (options, pool, events, logger): the client's own pool (wrapped, never ended here), its
 * schema's statements, and its jobs. Each helper call makes one and closes it, so no helper holds
 * anything between calls. Building these parts is what createNightshift does too; the helpers
 * then drive the very classes the worker and the schedule ticker use.
 */
export interface TestKit {
  readonly ns: Nightshift;
  readonly database: Database;
  readonly registry: JobRegistry;
  readonly enqueuer: Enqueuer;
  /** Settles enqueues made through the kit and lets go of the pool (which stays the client's). */
  close(): Promise<void>;
}

/**
 * Makes a kit for `ns`. `jobs` are definitions to use instead of the client's for their kinds
 * (runJob may run a job its client does not define); `wrap` replaces each definition the kit
 * runs (the helpers wrap handlers to keep what they returned).
 */
export function testKit(ns: Nightshift, options: { jobs?: readonly JobDefinition[]; wrap?: (def: JobDefinition) => JobDefinition } = {}): TestKit {
  const o = ns.options;
  const handle: PoolHandle = createPool({ pool: ns.db as PgPool, max: o.maxConnections, applicationName: `nightshift:${o.owner}` });
  const database = new Database(handle, o.schema, o.preparedStatements);
  const given = new Set((options.jobs ?? []).map((j) => j.kind));
  const defs = [...o.jobs.filter((j) => !given.has(j.kind)), ...(options.jobs ?? [])];
  const registry = new JobRegistry(options.wrap ? defs.map(options.wrap) : defs);
  const enqueuer = new Enqueuer({
    database,
    registry,
    maxPayloadBytes: o.maxPayloadBytes,
    events: ns.events,
    batching: { maxInFlight: o.enqueueBatchInFlight, maxBatch: 1_000 },
    errorMessages: o.logErrorMessages,
  });
  return {
    ns,
    database,
    registry,
    enqueuer,
    async close() {
      await enqueuer.drain();
      await handle.close();
    },
  };
}

/** Runs `fn` with a kit for `ns`, closing it afterwards. */
export async function withTestKit<T>(ns: Nightshift, fn: (kit: TestKit) => Promise<T>, options?: Parameters<typeof testKit>[1]): Promise<T> {
  const kit = testKit(ns, options);
  try {
    return await fn(kit);
  } finally {
    await kit.close();
  }
}
