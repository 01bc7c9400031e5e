import { Child } from '../children.js';
import type { SystemAdapter } from '../systems/system.js';
import { pause, START_MS, type ScaleContext } from './context.js';

/**
 * The idle cost of a worker serving `queues` queues with no jobs: transactions per second its
 * database sees (commits + rollbacks of pg_stat_database for that database alone; every idle poll,
 * heartbeat and maintenance statement is its own transaction, so this is the statement rate). The
 * window starts after `warmupMs`, so polling has backed off to its idle interval as it would
 * between bursts. Backends publish their counters when they go idle, at most once a second, so a
 * window of 20 s is accurate to a few per cent; a short one (quick mode) less so.
 */
export async function idleCost(ctx: ScaleContext, system: SystemAdapter, url: string, db: string, queues: number, warmupMs: number, windowMs: number): Promise<number> {
  const worker = await Child.start(ctx.script, { type: 'init', system: system.id, url, role: 'worker', concurrency: 10, queues }, START_MS, ctx.execArgv);
  const read = async () => {
    const { rows } = await ctx.server.admin.query<{ n: string }>('SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = $1', [db]);
    return Number(rows[0]?.n ?? NaN);
  };
  try {
    await pause(warmupMs);
    const before = await read();
    const t0 = Date.now();
    await pause(windowMs);
    const after = await read();
    return (after - before) / ((Date.now() - t0) / 1000);
  } finally {
    await worker.stop(20_000);
  }
}
