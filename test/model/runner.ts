/**
 * Runs one model scenario for real: worker processes (model-worker.ts, through a proxy that can cut
 * their LISTEN connection), the enqueue timeline from a producer client, the fault timeline through
 * the fault harness's injector, a sampler of the jobs table, then a bounded drain and a graceful
 * stop. Returns everything observed; judging it is the checker's job.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createNightshift, type EnqueueOptions } from '../../src/index.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { Fleet, type Member } from '../faults/harness/fleet.js';
import { FaultInjector, ownerPid, runTimeline } from '../faults/harness/injector.js';
import { Random } from '../faults/harness/random.js';
import { prepareContext } from '../faults/harness/scenario.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { waitFor } from '../support/wait.js';
import { modelJobs, type ModelPayload } from './model-jobs.js';
import { loadRecord, readRunLog, type EnqueueRecord, type InstanceRecord, type Observation } from './observation.js';
import { Sampler } from './sampler.js';
import { timelineMs, type EnqueueStep, type FaultStep, type ModelScenario } from './scenario.js';

/** Where and how to run. */
export interface RunEnv {
  url: string;
  schema: string;
  /** How long the drain may wait for every job to finish after the timeline. */
  drainMs: number;
  log(line: string): void;
}

type Instance = InstanceRecord & { member: Member };

/** How long the final SIGTERM may take before the harness SIGKILLs a process (the checker's bound is shorter). */
const STOP_BOUND_MS = 10_000;

/** The options of one step's enqueue, with times resolved now. */
function enqueueOptions(step: EnqueueStep): EnqueueOptions {
  const j = step.job;
  const o: EnqueueOptions = { queue: j.queue };
  if (j.maxAttempts !== undefined) o.maxAttempts = j.maxAttempts;
  if (j.dedupeKey !== undefined) o.dedupeKey = j.dedupeKey;
  if (j.debounceMs !== undefined) o.debounceMs = j.debounceMs;
  const dueMs = j.debounceMs ?? j.delay?.ms ?? 0;
  if (j.delay && j.debounceMs === undefined) {
    if (j.delay.as === 'delayMs') o.delayMs = j.delay.ms;
    else o.runAt = new Date(Date.now() + j.delay.ms);
  }
  if (j.deadline) {
    if (j.deadline.as === 'maxAgeMs') o.maxAgeMs = dueMs + j.deadline.afterDueMs;
    else o.expiresAt = new Date(Date.now() + dueMs + j.deadline.afterDueMs);
  }
  return o;
}

/** Runs `scenario` and returns what it observed. Always ends every process and pool it started. */
export async function runModelScenario(scenario: ModelScenario, env: RunEnv): Promise<Observation> {
  const ctx = await prepareContext({ url: env.url, schema: env.schema, server: undefined, random: new Random(1), log: env.log });
  const dir = mkdtempSync(join(tmpdir(), 'nightshift-model-'));
  const u = new URL(env.url);
  const proxy = new TcpProxy(u.hostname, Number(u.port));
  await proxy.listen();
  const injector = new FaultInjector(ctx.admin, ctx.random);
  const fleet = new Fleet('test/model/model-worker.ts', { DATABASE_URL: proxy.url(env.url), NS_SCHEMA: env.schema });
  const jobs = modelJobs(env.schema, undefined, scenario.limits);
  const producer = createNightshift({ databaseUrl: env.url, schema: env.schema, jobs: [jobs.alo, jobs.amo], logger: silentLogger() });
  const sampler = new Sampler(ctx.admin, env.schema);
  const instances: Instance[] = [];
  const enqueues: EnqueueRecord[] = [];
  const errors: string[] = [];

  const startInstance = async (spec: number, wait: boolean): Promise<Instance> => {
    const name = `w${spec}.${instances.filter((i) => i.spec === spec).length}`;
    const logPath = join(dir, `${name}.log`);
    const member = await fleet.start({ env: { MODEL_WORKER: JSON.stringify(scenario.workers[spec]), MODEL_RUN_LOG: logPath, MODEL_LIMITS: JSON.stringify(scenario.limits ?? {}) }, wait: false });
    const inst: Instance = { name, spec, pid: member.proc.pid, startedAt: Date.now(), readyAt: undefined, exitAt: undefined, killed: false, stop: undefined, output: '', logPath, member };
    instances.push(inst);
    void member.proc.exited.then(() => (inst.exitAt = Date.now()));
    const ready = member.proc.waitForLine('ready').then(() => {
      inst.readyAt = Date.now();
    });
    if (wait) await ready;
    else ready.catch(() => undefined);
    return inst;
  };
  const live = (spec: number) => instances.filter((i) => i.spec === spec && i.exitAt === undefined).at(-1);

  const enqueueAction = (step: EnqueueStep, index: number) => async () => {
    const def = step.job.kind === 'alo' ? jobs.alo : jobs.amo;
    const payloads: ModelPayload[] = Array.from({ length: step.count }, (_, copy) => ({
      step: index,
      copy,
      plan: step.job.plan,
      workMs: step.job.workMs,
      ...(step.job.limitKey !== undefined ? { lkey: step.job.limitKey } : {}),
    }));
    const at = Date.now();
    try {
      const results = step.count === 1 ? [await producer.enqueue(def, payloads[0]!, enqueueOptions(step))] : await producer.enqueueMany(def, payloads, enqueueOptions(step));
      results.forEach((r, copy) => enqueues.push({ step: index, copy, at, id: r.id, deduped: r.deduped, error: undefined }));
    } catch (err) {
      for (let copy = 0; copy < step.count; copy++) enqueues.push({ step: index, copy, at, id: undefined, deduped: undefined, error: String(err) });
    }
  };
  const faultActions = (f: FaultStep) => {
    let resume: (() => void) | undefined;
    const act = async () => {
      const victim = live(f.worker);
      if (!victim) return;
      const pid = victim.pid;
      if (f.kind === 'kill') {
        victim.killed = true;
        await injector.kill(victim.member);
        if (f.restart) await startInstance(f.worker, false);
      } else if (f.kind === 'pause') resume = injector.pause(victim.member);
      else if (f.kind === 'conn-kill') await injector.terminateBackends({ count: 1_000, pids: new Set([pid]) });
      else {
        const at = Date.now();
        for (const name of proxy.cut((n) => n.endsWith(':listener') && ownerPid(n) === pid)) injector.record('listener-cut', pid, `${name} silently cut`, at);
      }
    };
    const actions = [{ atMs: f.atMs, run: act }];
    if (f.kind === 'pause') actions.push({ atMs: f.atMs + f.pauseMs, run: async () => resume?.() });
    return actions;
  };

  let t0 = 0;
  let drainedAt = 0;
  let drainTimedOut = false;
  try {
    await Promise.all(scenario.workers.map((_, spec) => startInstance(spec, true)));
    sampler.start();
    t0 = Date.now();
    env.log(`model: ${scenario.workers.length} workers, ${scenario.steps.length} enqueue steps, ${scenario.faults.length} faults over ${timelineMs(scenario)} ms`);
    await Promise.all([
      runTimeline(
        scenario.steps.map((s, i) => ({ atMs: s.atMs, run: enqueueAction(s, i) })),
        (err) => errors.push(`enqueue: ${String(err)}`),
      ),
      runTimeline(scenario.faults.flatMap(faultActions), (err) => errors.push(`fault: ${String(err)}`)),
    ]);
    try {
      const q = ctx.recorder.q;
      await waitFor('every job to finish', async () => (await ctx.admin.query(`SELECT 1 FROM ${q}.jobs_all WHERE state IN ('available', 'running') LIMIT 1`)).rowCount === 0, {
        timeoutMs: env.drainMs,
        everyMs: 200,
      });
    } catch {
      drainTimedOut = true;
    }
    drainedAt = Date.now();
    env.log(`model: timeline and drain took ${drainedAt - t0} ms${drainTimedOut ? ' (the drain reached its bound)' : ''}; stopping`);
    await sampler.stop();
    // A replacement still starting has no SIGTERM handler yet: let it come up, so the stop is judged fairly.
    await waitFor('every process to be ready', () => instances.every((i) => i.readyAt !== undefined || i.exitAt !== undefined), { timeoutMs: 60_000, everyMs: 100 }).catch(() => undefined);
    const stopAt = Date.now();
    // Bounded: a process that ignores SIGTERM this long is SIGKILLed, and the checker says so.
    for (const x of await fleet.stopAll(STOP_BOUND_MS)) {
      const inst = instances.find((i) => i.pid === x.pid);
      if (inst) inst.stop = { ms: (inst.exitAt ?? Date.now()) - stopAt, code: x.code, signal: x.signal };
    }
    env.log(`model: every process stopped ${Date.now() - stopAt} ms later`);
    await ctx.recorder.writeFaults(injector.seal());
    const record = await loadRecord(ctx.admin, env.schema);
    const byPid = new Map(instances.map((i) => [i.pid, i.name]));
    return {
      scenario,
      t0,
      drainedAt,
      drainTimedOut,
      instances: instances.map(({ member, ...i }) => ({ ...i, output: member.proc.output() })),
      harnessErrors: errors,
      faults: injector.log.map((f) => ({ ...f, instance: byPid.get(f.targetPid ?? -1) ?? '?' })),
      enqueues,
      samples: sampler.samples,
      jobs: record.jobs,
      effects: record.effects,
      runs: instances.flatMap((i) => readRunLog(i.logPath, i.pid)),
    };
  } finally {
    await sampler.stop();
    await producer.stop();
    await fleet.close();
    await proxy.close();
    await ctx.admin.end();
    rmSync(dir, { recursive: true, force: true });
  }
}
