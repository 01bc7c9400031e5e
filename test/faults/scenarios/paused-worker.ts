import { waitFor } from '../../support/wait.js';
import { effectJobs } from '../fixtures/effect-jobs.js';
import { checkAtLeastOnce, refusals } from '../harness/checker.js';
import { FaultInjector } from '../harness/injector.js';
import { enqueueJobs, type Invariant, type Scenario, type ScenarioContext, type ScenarioResult } from '../harness/scenario.js';

/** Parameters of scenario 3. */
export interface PausedWorkerParams {
  rounds: number;
  /** Jobs the paused worker holds in each round. */
  jobsPerRound: number;
  leaseMs: number;
  /** How long each job works after its effect: longer than the lease, so the pause catches it running. */
  workMs: number;
  /** The paused worker's clock is behind by this much, the rescuer's ahead by as much. */
  skewMs: number;
  timeoutMs: number;
}

const full: PausedWorkerParams = { rounds: 5, jobsPerRound: 5, leaseMs: 3_000, workMs: 4_000, skewMs: 600_000, timeoutMs: 120_000 };
const short: PausedWorkerParams = { rounds: 1, jobsPerRound: 3, leaseMs: 3_000, workMs: 4_000, skewMs: 600_000, timeoutMs: 90_000 };

async function run(ctx: ScenarioContext, p: PausedWorkerParams): Promise<ScenarioResult> {
  const def = effectJobs(ctx.schema).atLeastOnce;
  const injector = new FaultInjector(ctx.admin, ctx.random);
  const q = ctx.recorder.q;
  // The paused worker runs no maintenance, so the rescuer is the only one that can rescue.
  const fleet = ctx.resources.fleet('test/faults/fixtures/fault-worker.ts', {
    DATABASE_URL: ctx.url,
    NS_SCHEMA: ctx.schema,
    NS_LEASE_MS: String(p.leaseMs),
    NS_HEARTBEAT_MS: '1000',
    NS_MAINTENANCE_MS: '300',
    NS_POLL_MS: '300',
    NS_GRACE_MS: '2000',
  });
  const invariants: Invariant[] = [];
  const recoveries: number[] = [];
  const earlyRescues: string[] = [];
  let expectedRefusals = 0;
  for (let round = 0; round < p.rounds; round++) {
    const paused = await fleet.start({ skewMs: -p.skewMs, env: { NS_MAINTENANCE: '0', NS_CONCURRENCY: String(p.jobsPerRound) } });
    injector.record('clock-skew', paused.proc.pid, `paused worker's wall clock -${p.skewMs} ms`);
    const ids = await enqueueJobs(
      ctx,
      def,
      Array.from({ length: p.jobsPerRound }, (_, i) => ({ n: round * 1000 + i, workMs: p.workMs })),
    );
    await waitFor(
      'the worker to be running every job',
      async () => (await ctx.admin.query(`SELECT count(DISTINCT job_id)::int AS n FROM ${q}.effects WHERE job_id = ANY($1::bigint[]) AND pid = $2`, [ids, paused.proc.pid])).rows[0].n === ids.length,
      { timeoutMs: p.timeoutMs, everyMs: 100 },
    );
    const resume = injector.pause(paused);
    const stoppedAt = Date.now();
    // The leases the paused worker holds, as the database last extended them.
    const leaseEnds = new Map<string, number>();
    const rescuer = await fleet.start({ skewMs: p.skewMs, env: { NS_CONCURRENCY: String(p.jobsPerRound) } });
    injector.record('clock-skew', rescuer.proc.pid, `rescuer's wall clock +${p.skewMs} ms`);
    await waitFor(
      'the rescuer to complete every job',
      async () => {
        const { rows } = await ctx.admin.query<{ id: string; state: string; lease_expires_at: Date | null; pid: number | null }>(
          `SELECT j.id::text, j.state::text, j.lease_expires_at,
                  (SELECT e.pid FROM ${q}.effects e WHERE e.job_id = j.id AND e.token = j.lease_token) AS pid
           FROM ${q}.jobs_all j WHERE j.id = ANY($1::bigint[])`,
          [ids],
        );
        for (const r of rows) if (r.pid === paused.proc.pid && r.lease_expires_at) leaseEnds.set(r.id, Math.max(leaseEnds.get(r.id) ?? 0, r.lease_expires_at.getTime()));
        return rows.every((r) => r.state === 'completed' && r.pid === rescuer.proc.pid);
      },
      { timeoutMs: p.timeoutMs, everyMs: 50 },
    );
    recoveries.push(Date.now() - stoppedAt);
    // Rescue went by the database's clock: no job was taken back before its lease ran out there.
    const { rows: rescues } = await ctx.admin.query<{ id: string; at: string }>(
      `SELECT j.id::text, e->>'at' AS at FROM ${q}.jobs_all j, jsonb_array_elements(j.errors) e
       WHERE j.id = ANY($1::bigint[]) AND e->>'kind' = 'lease-expired'`,
      [ids],
    );
    for (const r of rescues) {
      const end = leaseEnds.get(r.id);
      if (end !== undefined && new Date(r.at).getTime() < end) earlyRescues.push(`job ${r.id} rescued at ${r.at}, lease ran to ${new Date(end).toISOString()}`);
    }
    if (rescues.length !== ids.length) earlyRescues.push(`round ${round}: ${rescues.length} of ${ids.length} jobs show a lease-expired rescue`);
    // Wake the paused worker: its handlers return and it tries to complete the jobs.
    resume();
    expectedRefusals += ids.length;
    await waitFor(
      'the woken worker’s completions to be refused',
      async () => (await ctx.admin.query(`SELECT count(*)::int AS n FROM ${q}.refusals WHERE pid = $1 AND job_id = ANY($2::bigint[])`, [paused.proc.pid, ids])).rows[0].n === ids.length,
      { timeoutMs: p.timeoutMs, everyMs: 100 },
    );
    await fleet.stopAll();
  }
  await ctx.recorder.writeFaults(injector.seal());
  const report = await checkAtLeastOnce(ctx.recorder, def.kind);
  const refused = await refusals(ctx.recorder);
  // Each refusal names the paused run's token, older than the job's final one, and the final state is the rescuer's.
  const { rows: wrong } = await ctx.admin.query(
    `SELECT r.job_id::text, r.token::text, j.lease_token::text AS final, j.state::text
     FROM ${q}.refusals r JOIN ${q}.jobs_all j ON j.id = r.job_id
     WHERE r.operation <> 'complete' OR r.token >= j.lease_token OR j.state <> 'completed'
        OR NOT EXISTS (SELECT 1 FROM ${q}.effects e WHERE e.job_id = r.job_id AND e.token = r.token AND e.pid = r.pid)`,
  );
  invariants.push(
    ...report.invariants,
    {
      name: 'the woken worker’s completion of every rescued job was refused by the fencing token',
      holds: refused.length === expectedRefusals && wrong.length === 0,
      detail: refused.length !== expectedRefusals || wrong.length ? `${refused.length} refusals for ${expectedRefusals} jobs; wrong: ${JSON.stringify(wrong.slice(0, 5))}` : '',
    },
    {
      name: 'rescue followed the database clock despite skewed worker clocks (no lease taken back early)',
      holds: earlyRescues.length === 0,
      detail: earlyRescues.slice(0, 5).join('; '),
    },
  );
  return {
    id: '3-paused-worker',
    title: 'a worker SIGSTOPped past its lease; the job is rescued and completed elsewhere; the worker wakes',
    faults: injector.counts(),
    jobs: report.jobs,
    unit: 'jobs',
    lost: report.lost,
    duplicates: report.duplicates,
    maxRecoveryMs: recoveries.length ? Math.max(...recoveries) : null,
    recovery: 'time from the pause until the rescuer completed every job the paused worker held',
    invariants,
    figures: { ...report.figures, 'refused writes': refused.length, 'lease (ms)': p.leaseMs },
    durationMs: 0,
  };
}

/** Scenario 3: a paused worker's late completion is refused; the rescuer's outcome stands. */
export const pausedWorker: Scenario<PausedWorkerParams> = {
  id: '3-paused-worker',
  title: 'a worker SIGSTOPped past its lease; the job is rescued and completed elsewhere; the worker wakes',
  restartsServer: false,
  sizes: { full, short },
  run,
};
