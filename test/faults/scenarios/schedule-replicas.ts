import { waitFor } from '../../support/wait.js';
import { checkAtLeastOnce } from '../harness/checker.js';
import type { Member } from '../harness/fleet.js';
import { FaultInjector, runTimeline } from '../harness/injector.js';
import type { Scenario, ScenarioContext, ScenarioResult } from '../harness/scenario.js';

/** Parameters of scenario 4. */
export interface ScheduleFaultParams {
  replicas: number;
  /** How long the replicas tick under faults. */
  durationMs: number;
  /** A random replica is killed and restarted, or paused, this often. */
  faultEveryMs: number;
  /** How long a paused replica stays paused. */
  pauseMs: number;
  /** Once, in the middle, every replica is killed for this long (0: never). */
  allDownMs: number;
  /** One replica's wall clock is off by this much. */
  skewMs: number;
  timeoutMs: number;
}

const full: ScheduleFaultParams = { replicas: 3, durationMs: 120_000, faultEveryMs: 5_000, pauseMs: 3_000, allDownMs: 5_000, skewMs: 45_000, timeoutMs: 120_000 };
const short: ScheduleFaultParams = { replicas: 3, durationMs: 9_000, faultEveryMs: 3_000, pauseMs: 2_000, allDownMs: 2_500, skewMs: 45_000, timeoutMs: 90_000 };

async function run(ctx: ScenarioContext, p: ScheduleFaultParams): Promise<ScenarioResult> {
  const injector = new FaultInjector(ctx.admin, ctx.random);
  const q = ctx.recorder.q;
  const fleet = ctx.resources.fleet('test/faults/fixtures/fault-worker.ts', {
    DATABASE_URL: ctx.url,
    NS_SCHEMA: ctx.schema,
    NS_SCHEDULE_EVERY: '1s',
    NS_TICK_WORK_MS: '50',
    NS_LEASE_MS: '3000',
    NS_HEARTBEAT_MS: '1000',
    NS_POLL_MS: '300',
    NS_GRACE_MS: '2000',
  });
  const start = async (slot: number, wait = true): Promise<Member> => {
    const skewMs = slot === 1 ? p.skewMs : 0;
    const m = await fleet.start({ skewMs, wait });
    if (skewMs) injector.record('clock-skew', m.proc.pid, `replica wall clock +${skewMs} ms`);
    slots.set(m, slot);
    return m;
  };
  const slots = new Map<Member, number>();
  const errors: string[] = [];
  await Promise.all(Array.from({ length: p.replicas }, (_, i) => start(i)));
  ctx.log(`4-schedules: ${p.replicas} replicas ticking every second for ${p.durationMs} ms under faults`);
  const actions: { atMs: number; run: () => Promise<unknown> }[] = [];
  for (let t = p.faultEveryMs; t < p.durationMs; t += p.faultEveryMs) {
    actions.push({
      atMs: t,
      run: async () => {
        const victim = ctx.random.pick(fleet.alive());
        if (ctx.random.chance(0.3)) {
          const resume = injector.pause(victim);
          await new Promise((r) => setTimeout(r, p.pauseMs));
          resume();
        } else {
          await injector.kill(victim);
          await start(slots.get(victim) ?? 0, false);
        }
      },
    });
  }
  if (p.allDownMs > 0) {
    actions.push({
      atMs: Math.round(p.durationMs / 2),
      run: async () => {
        const live = fleet.alive();
        await Promise.all(live.map((m) => injector.kill(m)));
        await new Promise((r) => setTimeout(r, p.allDownMs));
        await Promise.all(live.map((m) => start(slots.get(m) ?? 0, false)));
      },
    });
  }
  await runTimeline(actions, (err) => errors.push(String(err)));
  // Let every replica come back, then check the ticks up to a second ago.
  await waitFor('every replica to be ready', () => fleet.alive().every((m) => m.proc.output().includes('ready')), { timeoutMs: p.timeoutMs, everyMs: 100 });
  const endAt = (await ctx.admin.query<{ t: Date }>(`SELECT date_trunc('second', now()) - interval '1 second' AS t`)).rows[0]!.t;
  await waitFor(
    'every tick up to the end to be decided and its job completed',
    async () => {
      const { rows } = await ctx.admin.query<{ decided: boolean; pending: number }>(
        `SELECT (SELECT last_tick_at >= $1 FROM ${q}.schedules WHERE name = 'beat') AS decided,
                (SELECT count(*)::int FROM ${q}.schedule_ticks k JOIN ${q}.jobs_all j ON j.id = k.job_id
                 WHERE k.schedule = 'beat' AND k.tick_at <= $1 AND j.state <> 'completed') AS pending`,
        [endAt],
      );
      return rows[0]!.decided && rows[0]!.pending === 0;
    },
    { timeoutMs: p.timeoutMs, everyMs: 200 },
  );
  await fleet.stopAll();
  await ctx.recorder.writeFaults(injector.seal());

  const { rows: ticks } = await ctx.admin.query<{ tick_at: Date; outcome: string; job_id: string | null; at: string | null; late_ms: number }>(
    `SELECT k.tick_at, k.outcome, k.job_id::text, j.payload->>'at' AS at, (extract(epoch FROM k.created_at - k.tick_at) * 1000)::float8 AS late_ms
     FROM ${q}.schedule_ticks k LEFT JOIN ${q}.jobs_all j ON j.id = k.job_id
     WHERE k.schedule = 'beat' AND k.tick_at <= $1 ORDER BY k.tick_at`,
    [endAt],
  );
  const first = ticks[0]?.tick_at.getTime() ?? endAt.getTime();
  const expected = Math.floor((endAt.getTime() - first) / 1000) + 1;
  const seen = new Set(ticks.map((t) => t.tick_at.getTime()));
  const missing: string[] = [];
  for (let t = first; t <= endAt.getTime(); t += 1000) if (!seen.has(t)) missing.push(new Date(t).toISOString());
  const wrong = ticks.filter((t) => t.outcome !== 'enqueued' || t.job_id === null || t.at !== t.tick_at.toISOString());
  const { rows: doubled } = await ctx.admin.query<{ at: string; n: number }>(`SELECT payload->>'at' AS at, count(*)::int AS n FROM ${q}.jobs_all WHERE kind = 'tick-effect' GROUP BY 1 HAVING count(*) > 1`);
  const jobIds = ticks.map((t) => t.job_id).filter((id): id is string => id !== null);
  const report = await checkAtLeastOnce(ctx.recorder, 'tick-effect', jobIds);
  const lateness = ticks.map((t) => t.late_ms);
  return {
    id: '4-schedules',
    title: 'a one-second schedule on 3 replicas killed, paused and restarted (catch-up: all within 1 h)',
    faults: injector.counts(),
    jobs: ticks.length,
    unit: 'ticks',
    lost: missing.length + report.lost,
    duplicates: { explained: report.duplicates.explained, unexplained: report.duplicates.unexplained + doubled.length },
    maxRecoveryMs: lateness.length ? Math.max(...lateness) : null,
    recovery: 'longest delay from a tick’s time to its job being enqueued',
    invariants: [
      {
        name: 'every tick from the first to the end was decided, none missing (catch-up all)',
        holds: missing.length === 0 && ticks.length === expected,
        detail: missing.length ? `${missing.length} missing, e.g. ${missing.slice(0, 5).join(', ')}` : '',
      },
      { name: 'every tick enqueued exactly one job carrying its time', holds: wrong.length === 0, detail: wrong.length ? JSON.stringify(wrong.slice(0, 5)) : '' },
      { name: 'no tick enqueued twice', holds: doubled.length === 0, detail: doubled.length ? JSON.stringify(doubled.slice(0, 5)) : '' },
      ...report.invariants,
    ],
    figures: {
      ...report.figures,
      'ticks checked': `${ticks.length} (${new Date(first).toISOString()} to ${endAt.toISOString()})`,
      'ticks enqueued more than 1 s late': lateness.filter((l) => l > 1_000).length,
      'processes started': fleet.all().length,
      ...(errors.length ? { 'injector errors': errors.join('; ') } : {}),
    },
    durationMs: 0,
  };
}

/** Scenario 4: every tick runs exactly once across replicas that are killed, paused and restarted. */
export const scheduleReplicas: Scenario<ScheduleFaultParams> = {
  id: '4-schedules',
  title: 'a one-second schedule on 3 replicas killed, paused and restarted (catch-up: all within 1 h)',
  restartsServer: false,
  sizes: { full, short },
  run,
};
