import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNightshift } from '../../../src/index.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { waitFor } from '../../support/wait.js';
import { faultPipeline } from '../fixtures/fault-pipeline.js';
import { Fleet, type Member } from '../harness/fleet.js';
import { FaultInjector, runTimeline } from '../harness/injector.js';
import { type Invariant, type Scenario, type ScenarioContext, type ScenarioResult } from '../harness/scenario.js';

/** Parameters of scenario 11. */
export interface PipelineFaultParams {
  /** Runs started at once, before the faults. */
  runs: number;
  /** Runs started one by one while the faults are injected (each started twice: a keyed start). */
  lateRuns: number;
  items: number;
  workers: number;
  faultWindowMs: number;
  /** A random worker is SIGKILLed (and a replacement started) this often. */
  killEveryMs: number;
  pgRestarts: number;
  workMs: [number, number];
  settleTimeoutMs: number;
}

// Steps work long enough (hundreds of ms) and runs keep starting through the window, so kills
// and the restart land on steps in flight.
const full: PipelineFaultParams = { runs: 40, lateRuns: 40, items: 10, workers: 4, faultWindowMs: 40_000, killEveryMs: 1_500, pgRestarts: 2, workMs: [100, 800], settleTimeoutMs: 600_000 };
const short: PipelineFaultParams = { runs: 8, lateRuns: 8, items: 6, workers: 3, faultWindowMs: 8_000, killEveryMs: 1_500, pgRestarts: 1, workMs: [200, 700], settleTimeoutMs: 240_000 };

const ID = '11-pipelines';
const TITLE = 'pipeline runs: workers SIGKILLed mid-step, PostgreSQL restarted; every output recorded once, every run ends';

async function run(ctx: ScenarioContext, p: PipelineFaultParams): Promise<ScenarioResult> {
  if (!ctx.server) throw new Error(`${ID} restarts PostgreSQL: it needs a server of its own`);
  const server = ctx.server;
  const q = ctx.recorder.q;
  const artifacts = mkdtempSync(join(tmpdir(), 'ns-faults-pipelines-'));
  // The record: one row per attempt's start (written by the step itself), and one per transition
  // of a step to succeeded (a trigger on nightshift's table: an output written twice shows here).
  await ctx.admin.query(`
    CREATE TABLE ${q}.pl_effects (id bigserial PRIMARY KEY, run_id bigint, step text, item text, attempt int, pid int, at timestamptz DEFAULT clock_timestamp());
    CREATE TABLE ${q}.pl_writes (run_id bigint, step text, item text, at timestamptz DEFAULT clock_timestamp());
    CREATE FUNCTION ${q}.pl_count_writes() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO ${q}.pl_writes (run_id, step, item) VALUES (NEW.run_id, NEW.step, NEW.item); RETURN NEW; END $$;
    CREATE TRIGGER pl_count_writes AFTER UPDATE ON ${q}.pipeline_steps
      FOR EACH ROW WHEN (NEW.state = 'succeeded' AND OLD.state IS DISTINCT FROM 'succeeded') EXECUTE FUNCTION ${q}.pl_count_writes();`);
  const pipeline = faultPipeline(ctx.schema, artifacts, p.items, p.workMs);
  const ops = createNightshift({ databaseUrl: ctx.url, schema: ctx.schema, pipelines: [pipeline], logger: silentLogger(), maxConnections: 3 });
  const injector = new FaultInjector(ctx.admin, ctx.random);
  const fleet = new Fleet('test/faults/fixtures/pipeline-worker.ts', {
    DATABASE_URL: ctx.url,
    NS_SCHEMA: ctx.schema,
    NS_PL_ARTIFACTS: artifacts,
    NS_PL_ITEMS: String(p.items),
    NS_PL_WORK_MS: p.workMs.join(','),
  });
  const errors: string[] = [];
  // A start through a restart of PostgreSQL: retried until it answers (a keyed start is idempotent).
  const start = (key: string) => waitFor(`the start of ${key}`, () => ops.pipelines.start(pipeline, key).then(() => true), { timeoutMs: 60_000, everyMs: 200 });
  try {
    for (let i = 0; i < p.runs; i++) await start(`early-${i}`);
    await Promise.all(Array.from({ length: p.workers }, () => fleet.start()));
    ctx.log(`${ID}: ${p.runs} runs of ${p.items + 3} steps, ${p.workers} workers, faults for ${p.faultWindowMs} ms`);
    const actions: { atMs: number; run: () => Promise<unknown> }[] = [];
    for (let t = p.killEveryMs; t <= p.faultWindowMs; t += p.killEveryMs) {
      actions.push({
        atMs: t,
        run: async () => {
          const live = fleet.alive();
          if (live.length === 0) return;
          await injector.kill(ctx.random.pick(live) as Member);
          await fleet.start({ wait: false });
        },
      });
    }
    for (let i = 1; i <= p.pgRestarts; i++) actions.push({ atMs: Math.round((p.faultWindowMs * i) / (p.pgRestarts + 1)) + 250, run: () => injector.restartPostgres(server) });
    for (let i = 0; i < p.lateRuns; i++) {
      const at = Math.round((p.faultWindowMs * (i + 0.5)) / p.lateRuns);
      actions.push({ atMs: at, run: () => start(`late-${i}`) });
      actions.push({ atMs: at + 100, run: () => start(`late-${i}`) });
    }
    await runTimeline(actions, (err) => errors.push(String(err)));
    ctx.log(`${ID}: faults done (${JSON.stringify(injector.counts())}); waiting for every run to end`);
    if (fleet.alive().length === 0) await fleet.start();
    const open = async () => (await ctx.admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${q}.pipeline_runs WHERE state IN ('running', 'held')`)).rows[0]!.n;
    await waitFor('every run to end', async () => (await open()) === 0, { timeoutMs: p.settleTimeoutMs, everyMs: 250 });
    await fleet.stopAll();
    await ctx.recorder.writeFaults(injector.seal());

    const runs = (await ctx.admin.query<{ id: string; key: string; state: string; reason: string | null }>(`SELECT id::text, key, state, reason FROM ${q}.pipeline_runs ORDER BY id`)).rows;
    const steps = (
      await ctx.admin.query<{ run_id: string; step: string; item: string; state: string; output: { attempt?: number; pid?: number } | null }>(
        `SELECT run_id::text, step, item, state, output FROM ${q}.pipeline_steps ORDER BY run_id, step, item`,
      )
    ).rows;
    const writes = (await ctx.admin.query<{ run_id: string; step: string; item: string; n: number }>(`SELECT run_id::text, step, item, count(*)::int AS n FROM ${q}.pl_writes GROUP BY 1, 2, 3`)).rows;
    const effects = (await ctx.admin.query<{ run_id: string; step: string; item: string; attempt: number; pid: number }>(`SELECT run_id::text, step, item, attempt, pid FROM ${q}.pl_effects`)).rows;
    const ran = new Set(effects.map((e) => `${e.run_id}/${e.step}/${e.item}/${e.attempt}/${e.pid}`));
    const attemptsPer = new Map<string, number>();
    for (const e of effects) attemptsPer.set(`${e.run_id}/${e.step}/${e.item}`, (attemptsPer.get(`${e.run_id}/${e.step}/${e.item}`) ?? 0) + 1);

    const expectedKeys = [...Array.from({ length: p.runs }, (_, i) => `early-${i}`), ...Array.from({ length: p.lateRuns }, (_, i) => `late-${i}`)];
    const missingRuns = expectedKeys.filter((k) => !runs.some((r) => r.key === k));
    const unended = runs.filter((r) => !['succeeded', 'failed'].includes(r.state) || (r.state === 'failed' && !r.reason));
    const succeeded = new Set(runs.filter((r) => r.state === 'succeeded').map((r) => r.id));
    // A succeeded run: every step and item succeeded with its output (the optional report may have
    // failed; the fan-out's own row ends with its items and has no output of its own).
    const fanOut = (s: { step: string; item: string }) => s.step === 'work' && s.item === '';
    const lost = steps.filter((s) => succeeded.has(s.run_id) && !(s.state === 'succeeded' && (s.output !== null || fanOut(s))) && !(s.step === 'report' && s.state === 'failed'));
    const twice = writes.filter((w) => w.n > 1);
    const phantom = steps.filter((s) => s.state === 'succeeded' && s.output?.attempt !== undefined && !ran.has(`${s.run_id}/${s.step}/${s.item}/${s.output.attempt}/${s.output.pid}`));
    const notOnce = steps.filter((s) => s.state === 'succeeded' && !writes.some((w) => w.run_id === s.run_id && w.step === s.step && w.item === s.item));
    let unverified = 0;
    for (const r of runs.filter((x) => x.state === 'succeeded')) if (!(await ops.pipelines.verify(pipeline, r.key)).ok) unverified++;
    const rerunItems = [...attemptsPer.values()].filter((n) => n > 1).length;
    const invariants: Invariant[] = [
      {
        name: 'every run ends succeeded or failed, a failed one with its reason (none running, none held)',
        holds: unended.length === 0,
        detail: unended
          .slice(0, 5)
          .map((r) => `${r.key}: ${r.state} ${r.reason ?? ''}`)
          .join('; '),
      },
      {
        name: 'one run per key, though every late key was started twice under faults',
        holds: missingRuns.length === 0 && runs.length === expectedKeys.length,
        detail: missingRuns.length || runs.length !== expectedKeys.length ? `${runs.length} runs for ${expectedKeys.length} keys; missing ${missingRuns.join(', ')}` : '',
      },
      {
        name: 'no step output lost: every step of a succeeded run has its recorded output',
        holds: lost.length === 0,
        detail: lost
          .slice(0, 5)
          .map((s) => `${s.run_id}/${s.step}/${s.item}: ${s.state}`)
          .join('; '),
      },
      {
        name: 'no step output written twice (one transition to succeeded per step and item)',
        holds: twice.length === 0 && notOnce.length === 0,
        detail: [...twice.map((w) => `${w.run_id}/${w.step}/${w.item} × ${w.n}`), ...notOnce.map((s) => `${s.run_id}/${s.step}/${s.item} never`)].slice(0, 5).join('; '),
      },
      {
        name: 'every recorded output is that of an attempt that ran',
        holds: phantom.length === 0,
        detail: phantom
          .slice(0, 5)
          .map((s) => `${s.run_id}/${s.step}/${s.item} attempt ${s.output?.attempt}`)
          .join('; '),
      },
      { name: "every succeeded run's artifacts match their checksums", holds: unverified === 0, detail: unverified ? `${unverified} run(s) differ` : '' },
    ];
    return {
      id: ID,
      title: TITLE,
      faults: injector.counts(),
      jobs: runs.length,
      unit: 'runs',
      lost: lost.length + unended.length,
      duplicates: { explained: rerunItems, unexplained: twice.length },
      maxRecoveryMs: null,
      recovery: 'not measured here (rescue times are scenario 1’s)',
      invariants,
      figures: {
        'runs succeeded / failed': `${succeeded.size} / ${runs.filter((r) => r.state === 'failed').length}`,
        'step attempts (effects)': effects.length,
        'steps and items run more than once (a fault interrupted them)': rerunItems,
        'processes started': fleet.all().length,
        ...(errors.length ? { 'injector errors': errors.join('; ') } : {}),
      },
      durationMs: 0,
    };
  } catch (err) {
    throw new Error(`${ID} failed: ${String(err)}\n${fleet.outputs()}`, { cause: err });
  } finally {
    await ops.stop();
    await fleet.close();
    rmSync(artifacts, { recursive: true, force: true });
  }
}

/** Scenario 11: pipeline runs under SIGKILLs and PostgreSQL restarts. */
export const pipelineFaults: Scenario<PipelineFaultParams> = {
  id: ID,
  title: TITLE,
  restartsServer: true,
  sizes: { full, short },
  run,
};
