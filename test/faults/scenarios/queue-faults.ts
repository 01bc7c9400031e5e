import { waitFor } from '../../support/wait.js';
import { effectJobs } from '../fixtures/effect-jobs.js';
import { checkAtLeastOnce, checkAtMostOnce } from '../harness/checker.js';
import type { Member } from '../harness/fleet.js';
import { FaultInjector, runTimeline } from '../harness/injector.js';
import type { Scenario, ScenarioContext, ScenarioResult } from '../harness/scenario.js';

/** Parameters of the queue-under-faults scenarios (1 and 2). */
export interface QueueFaultParams {
  jobs: number;
  workers: number;
  concurrency: number;
  /** How long faults are injected; the drain continues after it. */
  faultWindowMs: number;
  /** A random worker is SIGKILLed (and a replacement started) this often. */
  killEveryMs: number;
  /** Full PostgreSQL restarts, spread over the window. */
  pgRestarts: number;
  /** A random backend of a worker (pool or listener) is terminated this often. */
  terminateEveryMs: number;
  /** Each job works for a random time in this range (ms) after writing its effect. */
  workMs: [number, number];
  leaseMs: number;
  heartbeatMs: number;
  /** Wall-clock skew of the workers, by slot (cycled); replacements keep their slot's skew. */
  skewsMs: number[];
  drainTimeoutMs: number;
}

const full: QueueFaultParams = {
  jobs: 10_000,
  workers: 4,
  concurrency: 10,
  faultWindowMs: 60_000,
  killEveryMs: 2_000,
  pgRestarts: 2,
  terminateEveryMs: 1_500,
  workMs: [100, 300],
  leaseMs: 5_000,
  heartbeatMs: 1_000,
  skewsMs: [0, 120_000, -120_000, 0],
  drainTimeoutMs: 600_000,
};

const short: QueueFaultParams = {
  jobs: 600,
  workers: 3,
  concurrency: 8,
  faultWindowMs: 7_000,
  killEveryMs: 2_000,
  pgRestarts: 1,
  terminateEveryMs: 1_000,
  workMs: [100, 300],
  leaseMs: 5_000,
  heartbeatMs: 1_000,
  skewsMs: [0, 60_000, -60_000],
  drainTimeoutMs: 240_000,
};

async function run(ctx: ScenarioContext, p: QueueFaultParams, delivery: 'at-least-once' | 'at-most-once', id: string, title: string): Promise<ScenarioResult> {
  if (!ctx.server) throw new Error(`${id} restarts PostgreSQL: it needs a server of its own`);
  const server = ctx.server;
  const defs = effectJobs(ctx.schema);
  const def = delivery === 'at-least-once' ? defs.atLeastOnce : defs.atMostOnce;
  const injector = new FaultInjector(ctx.admin, ctx.random);
  const producer = ctx.resources.nightshift({ jobs: [def] });
  const fleet = ctx.resources.fleet('test/faults/fixtures/fault-worker.ts', {
    DATABASE_URL: ctx.url,
    NS_SCHEMA: ctx.schema,
    NS_CONCURRENCY: String(p.concurrency),
    NS_LEASE_MS: String(p.leaseMs),
    NS_HEARTBEAT_MS: String(p.heartbeatMs),
    NS_MAINTENANCE_MS: '500',
    NS_POLL_MS: '500',
    NS_GRACE_MS: '5000',
  });
  const slotOf = new Map<Member, number>();
  const startWorker = async (slot: number, wait: boolean) => {
    const skewMs = p.skewsMs[slot % p.skewsMs.length] ?? 0;
    const m = await fleet.start({ skewMs, wait });
    slotOf.set(m, slot);
    if (skewMs) injector.record('clock-skew', m.proc.pid, `${m.name} wall clock ${skewMs > 0 ? '+' : ''}${skewMs} ms`);
    return m;
  };
  const errors: string[] = [];
  for (let start = 0; start < p.jobs; start += 5_000) {
    const n = Math.min(5_000, p.jobs - start);
    await producer.enqueueMany(
      def,
      Array.from({ length: n }, (_, i) => ({ n: start + i, workMs: ctx.random.int(p.workMs[0], p.workMs[1]) })),
    );
  }
  await producer.stop();
  await Promise.all(Array.from({ length: p.workers }, (_, slot) => startWorker(slot, true)));
  ctx.log(`${id}: ${p.jobs} ${delivery} jobs, ${p.workers} workers, faults for ${p.faultWindowMs} ms`);

  const actions: { atMs: number; run: () => Promise<unknown> }[] = [];
  for (let t = p.killEveryMs; t <= p.faultWindowMs; t += p.killEveryMs) {
    actions.push({
      atMs: t,
      run: async () => {
        const live = fleet.alive();
        if (live.length === 0) return;
        const victim = ctx.random.pick(live);
        await injector.kill(victim);
        await startWorker(slotOf.get(victim) ?? 0, false);
      },
    });
  }
  for (let i = 1; i <= p.pgRestarts; i++) {
    actions.push({ atMs: Math.round((p.faultWindowMs * i) / (p.pgRestarts + 1)) + 250, run: () => injector.restartPostgres(server) });
  }
  for (let t = p.terminateEveryMs / 2; t <= p.faultWindowMs; t += p.terminateEveryMs) {
    actions.push({
      atMs: t,
      run: () => injector.terminateBackends({ count: ctx.random.int(1, 2), pids: new Set(fleet.alive().map((m) => m.proc.pid)) }),
    });
  }
  await runTimeline(actions, (err) => errors.push(String(err)));
  ctx.log(`${id}: faults done (${JSON.stringify(injector.counts())}); draining`);
  // Every process that is still starting must come up, so the drain has workers.
  if (fleet.alive().length === 0) await startWorker(0, true);
  await waitFor('every job to finish (none available or running)', async () => (await ctx.recorder.unfinished(def.kind)) === 0, { timeoutMs: p.drainTimeoutMs, everyMs: 250 });
  await fleet.stopAll();
  await ctx.recorder.writeFaults(injector.seal());
  const report = delivery === 'at-least-once' ? await checkAtLeastOnce(ctx.recorder, def.kind) : await checkAtMostOnce(ctx.recorder, def.kind);
  const restarts = injector.log.filter((f) => f.kind === 'pg-restart').map((f) => f.endedAt - f.startedAt);
  return {
    id,
    title,
    faults: injector.counts(),
    jobs: report.jobs,
    unit: 'jobs',
    lost: report.lost,
    duplicates: report.duplicates,
    maxRecoveryMs: report.maxRecoveryMs,
    recovery:
      delivery === 'at-least-once'
        ? 'longest time from a fault to a job it interrupted being handed back for another run (rescued or failed)'
        : 'longest time from a fault to the job it interrupted being marked abandoned',
    invariants: report.invariants,
    figures: { ...report.figures, 'PostgreSQL downtime per restart (ms)': restarts.join(', '), 'processes started': fleet.all().length, ...(errors.length ? { 'injector errors': errors.join('; ') } : {}) },
    durationMs: 0,
  };
}

/** Scenario 1: at-least-once jobs under SIGKILLs, PostgreSQL restarts and backend terminations. */
export const atLeastOnceUnderFaults: Scenario<QueueFaultParams> = {
  id: '1-at-least-once',
  title: 'at-least-once jobs: workers SIGKILLed, PostgreSQL restarted, backends terminated, clocks skewed',
  restartsServer: true,
  sizes: { full, short },
  run: (ctx, p) => run(ctx, p, 'at-least-once', '1-at-least-once', atLeastOnceUnderFaults.title),
};

/** Scenario 2: the same faults with at-most-once jobs. */
export const atMostOnceUnderFaults: Scenario<QueueFaultParams> = {
  id: '2-at-most-once',
  title: 'at-most-once jobs under the same faults',
  restartsServer: true,
  sizes: { full, short },
  run: (ctx, p) => run(ctx, p, 'at-most-once', '2-at-most-once', atMostOnceUnderFaults.title),
};
