import pg from 'pg';
import { testPgMajor } from '../../support/postgres-server.js';
import { waitFor } from '../../support/wait.js';
import { effectJobs } from '../fixtures/effect-jobs.js';
import { failoverLosses, parseFleetOutput, type FailoverLosses } from '../harness/failover-record.js';
import { startReplicatedCluster, type ReplicationMode } from '../harness/pg-cluster.js';
import { Recorder } from '../harness/recorder.js';
import type { Invariant, Scenario, ScenarioContext, ScenarioResult } from '../harness/scenario.js';

/** Parameters of scenario 10. */
export interface PgFailoverParams {
  /** Jobs of each delivery (at-least-once and at-most-once). */
  jobs: number;
  workers: number;
  concurrency: number;
  workMs: [number, number];
  leaseMs: number;
  heartbeatMs: number;
  /** The failure comes once this fraction of the jobs has started. */
  failAtFraction: number;
  /** The replication stream is cut this long before the primary dies: the standby's lag at the failure. */
  lagMs: number;
  modes: ReplicationMode[];
  drainTimeoutMs: number;
}

const full: PgFailoverParams = {
  jobs: 2_000,
  workers: 3,
  concurrency: 10,
  workMs: [100, 200],
  leaseMs: 5_000,
  heartbeatMs: 1_000,
  failAtFraction: 0.4,
  lagMs: 2_000,
  modes: ['async', 'remote_apply'],
  drainTimeoutMs: 300_000,
};

const short: PgFailoverParams = {
  jobs: 250,
  workers: 2,
  concurrency: 8,
  workMs: [100, 200],
  leaseMs: 3_000,
  heartbeatMs: 500,
  failAtFraction: 0.3,
  lagMs: 1_000,
  modes: ['async', 'remote_apply'],
  drainTimeoutMs: 120_000,
};

interface ModeResult {
  mode: ReplicationMode;
  losses: FailoverLosses;
  /** From the primary's death: promotion done, first job started on the promoted server, first completion acknowledged after. */
  promoteMs: number;
  firstRunMs: number | null;
  firstCompletionMs: number | null;
  firstTickMs: number | null;
}

async function runMode(ctx: ScenarioContext, p: PgFailoverParams, mode: ReplicationMode): Promise<ModeResult> {
  return ctx.resources.part(`${mode} replication`, async (r) => {
    const cluster = await startReplicatedCluster(testPgMajor(), mode);
    r.defer('the cluster', () => cluster.destroy());
    r.detail(() => `--- primary\n${cluster.primary.log().slice(-2_000)}\n--- standby\n${cluster.standby.log().slice(-2_000)}`);
    const proxy = await r.proxy(cluster.primary.url);
    const url = proxy.url(cluster.primary.url);
    const defs = effectJobs(ctx.schema);
    const fleet = r.fleet('test/faults/fixtures/fault-worker.ts', {
      DATABASE_URL: url,
      NS_SCHEMA: ctx.schema,
      NS_CONCURRENCY: String(p.concurrency),
      NS_LEASE_MS: String(p.leaseMs),
      NS_HEARTBEAT_MS: String(p.heartbeatMs),
      NS_MAINTENANCE_MS: '500',
      NS_POLL_MS: '250',
      NS_GRACE_MS: '3000',
      NS_SCHEDULE_EVERY: '1s',
      NS_TICK_WORK_MS: '20',
      NS_ECHO_RUNS: '1',
    });
    const onPrimary = new pg.Pool({ connectionString: cluster.primary.url, max: 2 });
    const onStandby = new pg.Pool({ connectionString: cluster.standby.url, max: 2 });
    onPrimary.on('error', () => undefined);
    onStandby.on('error', () => undefined);
    r.defer('the pool on the primary', () => onPrimary.end());
    r.defer('the pool on the standby', () => onStandby.end());
    const setup = r.nightshift({ databaseUrl: url, jobs: [defs.atLeastOnce, defs.atMostOnce, defs.tick] });
    await setup.migrate();
    await new Recorder(onPrimary, ctx.schema).install();
    const payloads = (n: number) => Array.from({ length: n }, (_, i) => ({ n: i, workMs: ctx.random.int(p.workMs[0], p.workMs[1]) }));
    await setup.enqueueMany(defs.atLeastOnce, payloads(p.jobs));
    await setup.enqueueMany(defs.atMostOnce, payloads(p.jobs));
    await setup.stop();
    // The enqueues are on the standby too: this scenario measures what the failover does to work
    // in flight; an enqueue's own loss window is the same as a completion's (see reliability.md).
    await cluster.caughtUp();
    await Promise.all(Array.from({ length: p.workers }, () => fleet.start()));
    const q = `"${ctx.schema}"`;
    await waitFor(
      `${Math.round(p.failAtFraction * 100)} % of the jobs started`,
      async () => (await onPrimary.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${q}.jobs_all WHERE started_at IS NOT NULL AND kind <> 'tick-effect'`)).rows[0]!.n >= p.failAtFraction * 2 * p.jobs,
      { timeoutMs: 60_000, everyMs: 50 },
    );
    // The stream stops reaching the standby: the primary goes on committing (async) or its
    // commits wait (remote_apply); then the primary's host dies with the WAL the standby lacks.
    cluster.cutReplication();
    await new Promise((r) => setTimeout(r, p.lagMs)); // the fault's duration, not a synchronisation
    const killAt = Date.now();
    await cluster.primary.kill();
    await cluster.standby.promote();
    const promotedAt = Date.now();
    proxy.retarget('127.0.0.1', cluster.standby.port);
    ctx.log(`10-pg-failover (${mode}): primary killed after ${p.lagMs} ms of standby lag, standby promoted in ${promotedAt - killAt} ms`);
    const recorder = new Recorder(onStandby, ctx.schema);
    await waitFor('every job to finish on the promoted server', async () => (await recorder.unfinished('effect')) + (await recorder.unfinished('effect-amo')) === 0, {
      timeoutMs: p.drainTimeoutMs,
      everyMs: 250,
    });
    await waitFor(
      'a schedule tick to run on the promoted server',
      () => parseFleetOutput(fleet.all().map((m) => ({ pid: m.proc.pid, output: m.proc.output() }))).runs.some((r) => r.kind === 'tick-effect' && r.at > promotedAt),
      { timeoutMs: 30_000, everyMs: 100 },
    );
    await fleet.stopAll();
    const rec = parseFleetOutput(fleet.all().map((m) => ({ pid: m.proc.pid, output: m.proc.output() })));
    const after = (xs: number[]) => (xs.length ? Math.min(...xs) - killAt : null);
    return {
      mode,
      // A run that started before the promotion was interrupted or erased by the failover; so was
      // one claimed before it and started within a lease after it (a prefetched job held for a slot).
      losses: await failoverLosses(onStandby, ctx.schema, rec, promotedAt + p.leaseMs, killAt),
      promoteMs: promotedAt - killAt,
      firstRunMs: after(rec.runs.filter((r) => r.at > promotedAt && r.kind !== 'tick-effect').map((r) => r.at)),
      firstCompletionMs: after([...rec.completed.values()].filter((at) => at > promotedAt)),
      firstTickMs: after(rec.runs.filter((r) => r.kind === 'tick-effect' && r.at > promotedAt).map((r) => r.at)),
    };
  });
}

function invariantsOf(r: ModeResult): Invariant[] {
  const l = r.losses;
  const inv = (name: string, holds: boolean, detail: string): Invariant => ({ name: `${r.mode}: ${name}`, holds, detail: holds ? '' : detail });
  const both = [
    inv('no at-least-once job lost: every one completed on the promoted server', l.atLeastOnceLost === 0, `${l.atLeastOnceLost} not completed`),
    inv('no at-most-once job left waiting or running', l.atMostOnceStuck === 0, `${l.atMostOnceStuck} stuck: ${JSON.stringify(l.atMostOnceStates)}`),
    inv(
      'every re-run had a run the failover interrupted or erased (started before the promotion, or within a lease after it)',
      l.rerunExplained === l.atLeastOnceRerun,
      `${l.atLeastOnceRerun - l.rerunExplained} re-runs with no run before the promotion + leaseMs`,
    ),
  ];
  if (r.mode === 'async') return both;
  // remote_apply: a commit acknowledged to a worker is on the standby, so nothing acknowledged is lost.
  return [
    ...both,
    inv('no acknowledged completion lost (no job re-ran after its completion was acknowledged)', l.ackedCompletionsLost === 0, `${l.ackedCompletionsLost} acknowledged completions lost`),
    inv('no at-most-once job ran twice', l.atMostOnceRanTwice === 0, `${l.atMostOnceRanTwice} ran twice`),
    inv('no schedule tick became two jobs', l.ticksTwice === 0, `${l.ticksTwice} ticks twice`),
    inv('no leader token handed out twice or backwards', l.leaderTokenProblems.length === 0, l.leaderTokenProblems.join('; ')),
    inv('no job lease token handed out twice', l.jobTokensReused === 0, `${l.jobTokensReused} tokens reused`),
  ];
}

async function run(ctx: ScenarioContext, p: PgFailoverParams): Promise<ScenarioResult> {
  const results: ModeResult[] = [];
  for (const mode of p.modes) results.push(await runMode(ctx, p, mode));
  const figures: Record<string, string | number> = { 'PostgreSQL major': testPgMajor(), 'standby lag at the failure (ms)': p.lagMs };
  for (const r of results) {
    const l = r.losses;
    Object.assign(figures, {
      [`${r.mode}: promotion (ms after the kill)`]: r.promoteMs,
      [`${r.mode}: first job started on the promoted server (ms after the kill)`]: r.firstRunMs ?? '—',
      [`${r.mode}: first completion acknowledged after (ms after the kill)`]: r.firstCompletionMs ?? '—',
      [`${r.mode}: first schedule tick after (ms after the kill)`]: r.firstTickMs ?? '—',
      [`${r.mode}: at-least-once re-runs / acknowledged completions lost`]: `${l.atLeastOnceRerun} / ${l.ackedCompletionsLost}`,
      [`${r.mode}: at-most-once ran twice / states`]: `${l.atMostOnceRanTwice} / ${JSON.stringify(l.atMostOnceStates)}`,
      [`${r.mode}: ticks run / ticks that became two jobs`]: `${l.ticksRun} / ${l.ticksTwice}`,
      [`${r.mode}: leader token problems / job tokens reused`]: `${l.leaderTokenProblems.length ? l.leaderTokenProblems.join('; ') : 0} / ${l.jobTokensReused}`,
    });
  }
  const recoveries = results.map((r) => r.firstRunMs).filter((x): x is number => x !== null);
  return {
    id: '10-pg-failover',
    title: 'PostgreSQL failover: the primary killed with its streaming standby lagging, the standby promoted, the proxy re-pointed (async and remote_apply)',
    faults: { 'pg-failover': results.length },
    jobs: results.reduce((n, r) => n + r.losses.jobs, 0),
    unit: 'jobs',
    lost: results.reduce((n, r) => n + r.losses.atLeastOnceLost + r.losses.atMostOnceStuck, 0),
    duplicates: {
      explained: results.reduce((n, r) => n + r.losses.rerunExplained, 0),
      unexplained: results.reduce((n, r) => n + r.losses.atLeastOnceRerun - r.losses.rerunExplained, 0),
    },
    maxRecoveryMs: recoveries.length ? Math.max(...recoveries) : null,
    recovery: 'from the primary’s death to the first job started on the promoted server (promotion and re-pointing included)',
    invariants: results.flatMap(invariantsOf),
    figures,
    durationMs: 0,
  };
}

/** Scenario 10: a PostgreSQL failover under a draining fleet, with asynchronous and with synchronous (remote_apply) replication. */
export const pgFailover: Scenario<PgFailoverParams> = {
  id: '10-pg-failover',
  title: 'PostgreSQL failover: primary killed mid-drain, standby promoted (async and remote_apply)',
  restartsServer: false,
  sizes: { full, short },
  run,
};
