import { limitJobs, limitRunsTable } from '../../flow/fixtures/limit-jobs.js';
import { maxOverlap, startsInWindow } from '../../flow/overlap.js';
import { limitRuns, rateStarts, type LimitRun } from '../../flow/runs.js';
import { waitFor } from '../../support/wait.js';
import type { Member } from '../harness/fleet.js';
import { FaultInjector, runTimeline } from '../harness/injector.js';
import type { Invariant, Scenario, ScenarioContext, ScenarioResult } from '../harness/scenario.js';

/** Parameters of scenario 12. */
export interface LimitFaultParams {
  workers: number;
  concurrency: number;
  /** Jobs of each limited kind: global, per key, rate. */
  jobs: { global: number; perKey: number; rate: number };
  keys: number;
  limits: { global: number; perKey: number; rate: number; perMs: number };
  faultWindowMs: number;
  killEveryMs: number;
  pgRestarts: number;
  terminateEveryMs: number;
  workMs: number;
  leaseMs: number;
  drainTimeoutMs: number;
}

const full: LimitFaultParams = {
  workers: 3,
  concurrency: 20,
  jobs: { global: 300, perKey: 1_000, rate: 600 },
  keys: 20,
  limits: { global: 2, perKey: 1, rate: 20, perMs: 1_000 },
  faultWindowMs: 40_000,
  killEveryMs: 4_000,
  pgRestarts: 2,
  terminateEveryMs: 3_000,
  workMs: 100,
  leaseMs: 3_000,
  drainTimeoutMs: 600_000,
};

const short: LimitFaultParams = {
  workers: 3,
  concurrency: 20,
  jobs: { global: 40, perKey: 200, rate: 120 },
  keys: 20,
  limits: { global: 2, perKey: 1, rate: 20, perMs: 1_000 },
  faultWindowMs: 6_000,
  killEveryMs: 2_000,
  pgRestarts: 1,
  terminateEveryMs: 2_500,
  workMs: 150,
  leaseMs: 3_000,
  drainTimeoutMs: 240_000,
};

const KINDS = ['lim-global', 'lim-key', 'lim-rate'];

async function run(ctx: ScenarioContext, p: LimitFaultParams): Promise<ScenarioResult> {
  if (!ctx.server) throw new Error('12-limits restarts PostgreSQL: it needs a server of its own');
  const server = ctx.server;
  const injector = new FaultInjector(ctx.admin, ctx.random);
  await ctx.admin.query(limitRunsTable(ctx.schema));
  const jobs = limitJobs(ctx.schema, p.limits);
  const producer = ctx.resources.nightshift({ jobs: [jobs.global, jobs.perKey, jobs.rate] });
  await producer.enqueueMany(
    jobs.global,
    Array.from({ length: p.jobs.global }, (_, n) => ({ key: String(n), workMs: p.workMs })),
  );
  await producer.enqueueMany(
    jobs.perKey,
    Array.from({ length: p.jobs.perKey }, (_, n) => ({ key: `k${n % p.keys}`, workMs: p.workMs })),
  );
  await producer.enqueueMany(
    jobs.rate,
    Array.from({ length: p.jobs.rate }, (_, n) => ({ key: String(n), workMs: 0 })),
  );
  await producer.stop();
  const fleet = ctx.resources.fleet('test/flow/fixtures/limit-worker.ts', {
    DATABASE_URL: ctx.url,
    NS_SCHEMA: ctx.schema,
    NS_CONCURRENCY: String(p.concurrency),
    NS_LEASE_MS: String(p.leaseMs),
    NS_HEARTBEAT_MS: '500',
    NS_MAINTENANCE_MS: '300',
    NS_POLL_MS: '500',
    NS_GRACE_MS: '2000',
    NS_LIMIT_GLOBAL: String(p.limits.global),
    NS_LIMIT_KEY: String(p.limits.perKey),
    NS_LIMIT_RATE: String(p.limits.rate),
    NS_LIMIT_PER_MS: String(p.limits.perMs),
  });
  await Promise.all(Array.from({ length: p.workers }, () => fleet.start()));
  ctx.log(`12-limits: ${p.jobs.global + p.jobs.perKey + p.jobs.rate} limited jobs, ${p.workers} workers × ${p.concurrency}, faults for ${p.faultWindowMs} ms`);
  const errors: string[] = [];
  const actions: { atMs: number; run: () => Promise<unknown> }[] = [];
  for (let at = p.killEveryMs; at <= p.faultWindowMs; at += p.killEveryMs) {
    actions.push({
      atMs: at,
      run: async () => {
        const live = fleet.alive();
        if (live.length === 0) return;
        const victim: Member = ctx.random.pick(live);
        await injector.kill(victim);
        await fleet.start({ wait: false });
      },
    });
  }
  for (let i = 1; i <= p.pgRestarts; i++) actions.push({ atMs: Math.round((p.faultWindowMs * i) / (p.pgRestarts + 1)) + 250, run: () => injector.restartPostgres(server) });
  for (let at = p.terminateEveryMs / 2; at <= p.faultWindowMs; at += p.terminateEveryMs) {
    actions.push({ atMs: at, run: () => injector.terminateBackends({ count: 1, pids: new Set(fleet.alive().map((m) => m.proc.pid)) }) });
  }
  await runTimeline(actions, (err) => errors.push(String(err)));
  if (fleet.alive().length === 0) await fleet.start();
  const unfinished = async () => (await Promise.all(KINDS.map((k) => ctx.recorder.unfinished(k)))).reduce((a, b) => a + b, 0);
  await waitFor('every limited job to finish', async () => (await unfinished()) === 0, { timeoutMs: p.drainTimeoutMs, everyMs: 250 });
  await fleet.stopAll();
  const faults = injector.seal();
  await ctx.recorder.writeFaults(faults);
  const lastRestart = Math.max(0, ...faults.filter((f) => f.kind === 'pg-restart').map((f) => f.endedAt));

  const runs = await limitRuns(ctx.admin, ctx.schema);
  const of = (kind: string) => runs.filter((r) => r.kind === kind);
  const { rows: states } = await ctx.admin.query<{ kind: string; state: string; n: number }>(`SELECT kind, state::text, count(*)::int AS n FROM "${ctx.schema}".jobs_all WHERE kind = ANY($1) GROUP BY 1, 2`, [
    KINDS,
  ]);
  const total = p.jobs.global + p.jobs.perKey + p.jobs.rate;
  const completed = states.filter((s) => s.state === 'completed').reduce((n, s) => n + s.n, 0);
  const openEnded = runs.filter((r) => !Number.isFinite(r.end));
  const keyOverlaps = [...new Set(of('lim-key').map((r) => r.key))].map((k) => ({ k, n: maxOverlap(of('lim-key').filter((r) => r.key === k)) }));
  const worstKey = keyOverlaps.reduce((a, b) => (b.n > a.n ? b : a), { k: '', n: 0 });
  // The starts the rate limit counted: every claim's (a claim whose process died before the
  // handler ran counts too), at least one per run.
  const rateCounted = await rateStarts(ctx.admin, ctx.schema);
  const { rows: limitRows } = await ctx.admin.query(`SELECT name FROM "${ctx.schema}".limits ORDER BY name`);
  const invariants: Invariant[] = [
    {
      name: 'every limited job completed (no slot leaked through a kill or a restart)',
      holds: completed === total,
      detail: completed === total ? '' : `states: ${JSON.stringify(states)}`,
    },
    {
      name: 'every run that recorded no end was ended for it (rescued or failed): slots held by the dead are freed',
      holds: openEnded.length === 0,
      detail: openEnded
        .map((r: LimitRun) => `job ${r.jobId} pid ${r.pid}`)
        .slice(0, 5)
        .join('; '),
    },
    {
      name: `the global limit (${p.limits.global}) was never exceeded`,
      holds: maxOverlap(of('lim-global')) <= p.limits.global,
      detail: `max overlap ${maxOverlap(of('lim-global'))}`,
    },
    {
      name: `the limit per key (${p.limits.perKey}) was never exceeded on any of ${p.keys} keys`,
      holds: worstKey.n <= p.limits.perKey && keyOverlaps.length === p.keys,
      detail: `worst key ${worstKey.k}: ${worstKey.n}; keys seen ${keyOverlaps.length}`,
    },
    {
      name: `at most ${p.limits.rate} starts in any ${p.limits.perMs} ms window`,
      holds: startsInWindow(rateCounted, p.limits.perMs) <= p.limits.rate && rateCounted.length >= of('lim-rate').length,
      detail: `most starts in a window: ${startsInWindow(rateCounted, p.limits.perMs)}; counted ${rateCounted.length} for ${of('lim-rate').length} runs`,
    },
    {
      name: 'the limits survived the PostgreSQL restarts (still registered, still enforced after them)',
      holds: limitRows.length === 3 && injector.counts()['pg-restart'] === p.pgRestarts && runs.some((r) => r.start > lastRestart),
      detail: `limits: ${limitRows.map((r: { name: string }) => r.name).join(', ')}; restarts ${injector.counts()['pg-restart'] ?? 0}; runs after the last: ${runs.filter((r) => r.start > lastRestart).length}`,
    },
  ];
  return {
    id: '12-limits',
    title: 'fleet-wide limits (global, per key, rate) while workers are SIGKILLed, PostgreSQL restarted, backends terminated',
    faults: injector.counts(),
    jobs: total,
    unit: 'jobs',
    lost: total - completed,
    duplicates: { explained: runs.length - completed, unexplained: 0 },
    maxRecoveryMs: null,
    recovery: 'not measured (the invariants are the limits)',
    invariants,
    figures: {
      runs: runs.length,
      'runs ended by a fault': runs.filter((r) => r.killed).length,
      'global: max overlap': maxOverlap(of('lim-global')),
      'per key: worst overlap': worstKey.n,
      'rate: most starts in a window': startsInWindow(rateCounted, p.limits.perMs),
      'processes started': fleet.all().length,
      ...(errors.length ? { 'injector errors': errors.join('; ') } : {}),
    },
    durationMs: 0,
  };
}

/** Scenario 12: the limits hold, and free their slots, under kills and restarts. */
export const limitsUnderFaults: Scenario<LimitFaultParams> = {
  id: '12-limits',
  title: 'fleet-wide limits (global, per key, rate) while workers are SIGKILLed, PostgreSQL restarted, backends terminated',
  restartsServer: true,
  sizes: { full, short },
  run,
};
