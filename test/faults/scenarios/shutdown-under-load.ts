import { waitFor } from '../../support/wait.js';
import { effectJobs } from '../fixtures/effect-jobs.js';
import { checkAtLeastOnce } from '../harness/checker.js';
import { FaultInjector } from '../harness/injector.js';
import { enqueueJobs, type Scenario, type ScenarioContext, type ScenarioResult } from '../harness/scenario.js';

/** Parameters of scenario 8. */
export interface ShutdownParams {
  rounds: number;
  /** Jobs running when SIGTERM arrives. */
  running: number;
  graceMs: number;
  timeoutMs: number;
}

const full: ShutdownParams = { rounds: 3, running: 50, graceMs: 5_000, timeoutMs: 120_000 };
const short: ShutdownParams = { rounds: 1, running: 50, graceMs: 2_000, timeoutMs: 120_000 };

async function run(ctx: ScenarioContext, p: ShutdownParams): Promise<ScenarioResult> {
  const def = effectJobs(ctx.schema).atLeastOnce;
  const injector = new FaultInjector(ctx.admin, ctx.random);
  const q = ctx.recorder.q;
  const abortGraceMs = Math.min(5_000, Math.max(500, p.graceMs / 5));
  const fleet = ctx.resources.fleet('test/faults/fixtures/fault-worker.ts', {
    DATABASE_URL: ctx.url,
    NS_SCHEMA: ctx.schema,
    NS_CONCURRENCY: String(p.running + 10),
    NS_MAX_CONNECTIONS: '20',
    NS_GRACE_MS: String(p.graceMs),
  });
  const exits: { ms: number; code: number | null }[] = [];
  const notHandedBack: string[] = [];
  for (let round = 0; round < p.rounds; round++) {
    // A third finish within the grace period, a third run past it but honour the abort, a third
    // ignore the abort altogether.
    const payloads = Array.from({ length: p.running }, (_, i) => ({
      n: round * 1000 + i,
      workMs: i % 3 === 0 ? Math.round(p.graceMs / 4) : p.graceMs * 3,
      ignoreAbort: i % 3 === 2,
    }));
    const ids = await enqueueJobs(ctx, def, payloads);
    const worker = await fleet.start();
    await waitFor(
      `all ${p.running} jobs to be running`,
      async () => (await ctx.admin.query(`SELECT count(DISTINCT job_id)::int AS n FROM ${q}.effects WHERE pid = $1`, [worker.proc.pid])).rows[0].n === p.running,
      { timeoutMs: p.timeoutMs, everyMs: 100 },
    );
    const exit = await injector.terminate(worker);
    exits.push({ ms: exit.ms, code: exit.code });
    // Right after the exit: nothing may be left running under the dead process's lease.
    const { rows } = await ctx.admin.query<{ id: string; state: string; due: boolean; why: string | null }>(
      `SELECT id::text, state::text, run_at <= now() AS due, errors->-1->>'kind' AS why FROM ${q}.jobs_all WHERE id = ANY($1::bigint[])`,
      [ids],
    );
    for (const r of rows) {
      if (r.state === 'completed') continue;
      if (r.state !== 'available' || !r.due || r.why !== 'shutdown') notHandedBack.push(`job ${r.id}: ${r.state}, due ${r.due}, last error ${r.why}`);
    }
    // Another worker picks the handed-back jobs up: nothing was lost.
    const next = await fleet.start();
    await waitFor('the handed-back jobs to complete', async () => (await ctx.recorder.unfinished(def.kind)) === 0, { timeoutMs: p.timeoutMs, everyMs: 200 });
    next.proc.kill('SIGTERM');
    await next.proc.exited;
  }
  await ctx.recorder.writeFaults(injector.seal());
  const report = await checkAtLeastOnce(ctx.recorder, def.kind);
  const bound = p.graceMs + abortGraceMs;
  const worst = Math.max(...exits.map((e) => e.ms));
  return {
    id: '8-shutdown',
    title: `SIGTERM while ${p.running} jobs run (grace ${p.graceMs} ms): finish, or hand back at once`,
    faults: injector.counts(),
    jobs: report.jobs,
    unit: 'jobs',
    lost: report.lost,
    duplicates: report.duplicates,
    maxRecoveryMs: worst,
    recovery: `longest time from SIGTERM to the process's exit (grace + abort grace = ${bound} ms)`,
    invariants: [
      ...report.invariants,
      { name: 'the process exited 0 after SIGTERM', holds: exits.every((e) => e.code === 0), detail: JSON.stringify(exits) },
      {
        name: 'at exit every job was completed or available again at once (handed back, reason recorded)',
        holds: notHandedBack.length === 0,
        detail: notHandedBack.slice(0, 5).join('; '),
      },
    ],
    figures: {
      'exit after SIGTERM (ms)': exits.map((e) => e.ms).join(', '),
      'exits within grace + abort grace + 1 s': `${exits.filter((e) => e.ms <= bound + 1_000).length} of ${exits.length}`,
    },
    durationMs: 0,
  };
}

/** Scenario 8: graceful, bounded shutdown under load. */
export const shutdownUnderLoad: Scenario<ShutdownParams> = {
  id: '8-shutdown',
  title: 'SIGTERM while 50 jobs run: finish, or hand back at once',
  restartsServer: false,
  sizes: { full, short },
  run,
};
