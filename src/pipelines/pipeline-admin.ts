import type { Executor } from '../db/executor.js';
import type { RunRow } from '../db/pipelines-runs.js';
import { OptionsInvalidError, PipelineCleanupRefusedError, PipelineRunNotFoundError, PipelineStateError, UnknownPipelineError, type Issue } from '../errors.js';
import { cleanText } from '../jobs/error-text.js';
import { toJson } from '../jobs/payload.js';
import type { PayloadSchema } from '../jobs/standard-schema.js';
import { issuePath } from '../jobs/standard-schema.js';
import { startPipelineSpan } from '../telemetry/tracing.js';
import type { ArtifactPublisher, VerifyResult } from './artifact-publisher.js';
import { graphOf, keyProblem, type PipelineDefinition, type PipelineSpec } from './define-pipeline.js';
import { artifactRun, effects, type Effects, type EngineContext } from './engine-context.js';
import { descendants, graphStep, readGraph } from './graph.js';
import { PipelineQueries, type PipelineRun, type RunSelector } from './pipeline-queries.js';
import type { PipelineSweep, SweepOptions, SweepReport } from './pipeline-sweep.js';
import type { RunTransitions } from './run-transitions.js';
import type { StepRunner } from './step-runner.js';

/** Who does a manual action and why: written to the audit log. */
export interface PipelineActorOptions {
  /** Default: the client's `actor`, else `user@host`. */
  actor?: string;
  reason?: string;
}

/** Options of `start`. */
export interface StartOptions extends PipelineActorOptions {
  /** A dry run: `ctx.dryRun`, effect steps skipped, no follow-ups, artifacts apart. Default false. */
  dryRun?: boolean;
  /** Your transaction: the run (and its first steps' jobs) commit or roll back with it. */
  db?: Executor;
}

/** What `start` did: the run, and whether this call created it. */
export interface StartResult {
  run: PipelineRun;
  created: boolean;
}

/** What `cleanup` removed. */
export interface CleanupResult {
  removed: string[];
}

/** How a run is started: by whom, audited or not, in whose transaction. */
interface StartHow {
  dryRun: boolean;
  db: Executor | undefined;
  startedBy: string;
  audit: { actor: string; reason: string | null } | undefined;
}

/**
 * The pipeline admin API (`ns.pipelines`): start, rerun, restart, cancel, verify and clean up runs,
 * list them and read one in full — what the CLI and a dashboard use. Every manual action writes an
 * audit entry in the transaction that makes the change.
 */
export class PipelineAdmin extends PipelineQueries {
  constructor(
    c: EngineContext,
    private readonly transitions: RunTransitions,
    private readonly publisher: ArtifactPublisher,
    private readonly runner: StepRunner,
    private readonly sweeper: PipelineSweep,
    private readonly defaultActor: string,
  ) {
    super(c);
  }

  /** The names of the pipelines this client defines. */
  get names(): string[] {
    return this.c.names();
  }

  /**
   * Starts a run for `key`, or returns the run that holds the key (`created: false`) — one live run
   * per pipeline and key, decided by a unique index, so concurrent starts give one run. A dry run
   * (`dryRun`) has a key of its own among dry runs while it runs. Audited.
   */
  async start<K extends string, I, O>(pipeline: PipelineDefinition<K, I, O> | string, key: K, input?: I, options: StartOptions = {}): Promise<StartResult> {
    const spec = this.spec(pipeline);
    const who = this.who(options);
    return this.startRun(spec, key, input, { dryRun: options.dryRun === true, db: options.db, startedBy: who.actor, audit: who });
  }

  /** Runs a starter job's start (schedules): inside the job's fenced transaction, not audited. */
  async startFromStarter(spec: PipelineSpec, payload: { key: string; input?: unknown; by?: string | undefined }, tx: Executor): Promise<StartResult> {
    return this.startRun(spec, payload.key, payload.input, { dryRun: false, db: tx, startedBy: payload.by ?? 'starter', audit: undefined });
  }

  /**
   * Resumes a failed, cancelled or held run: succeeded steps keep their outputs; failed, cancelled
   * and skipped ones (and such items of a fan-out) run again as their needs allow. A running run is
   * left as it is; a succeeded one is refused (restart it from a step instead). Audited.
   */
  async rerun(pipeline: { readonly name: string } | string, key: string, options: RunSelector & PipelineActorOptions = {}): Promise<PipelineRun> {
    const spec = this.spec(pipeline);
    const found = await this.find(spec.name, key, options);
    const who = this.who(options);
    const fx = effects();
    await this.c.database.pool.transaction(async (tx) => {
      const run = (await this.c.pipelines.runs.lock({ tx, id: found.id }))!;
      if (run.state === 'running') return;
      if (run.state === 'succeeded') {
        throw new PipelineStateError(run.id, 'rerun', 'succeeded', `a rerun resumes a failed, cancelled or held run; to run steps of a succeeded run again: pipelines restart ${spec.name} ${key} --from <step>`);
      }
      await this.c.pipelines.steps.reset({ tx, runId: run.id });
      await this.c.pipelines.runs.resume({ tx, id: run.id, generation: run.generation, deadlineMs: null });
      Object.assign(run, { state: 'running', reason: null, error: null, finished_at: null, warnings: 0 });
      await this.transitions.advance(tx, run, fx);
      await this.audit(tx, run, 'pipeline-rerun', who, {}, fx);
    });
    await this.runner.after(fx);
    return this.summary(found.id);
  }

  /**
   * Runs `from` and every step that depends on it again as a new generation: their rows go to the
   * history, their artifacts are kept as superseded, the steps before `from` keep their outputs.
   * Refused for a running run. Audited.
   */
  async restart(pipeline: { readonly name: string } | string, key: string, options: RunSelector & PipelineActorOptions & { from: string }): Promise<PipelineRun> {
    const spec = this.spec(pipeline);
    const found = await this.find(spec.name, key, options);
    const graph = readGraph(found.graph);
    if (typeof options?.from !== 'string' || !graphStep(graph, options.from)) {
      throw new OptionsInvalidError('restart options', [{ path: 'from', message: `${JSON.stringify(options?.from)} is not a step of run ${found.id}; its steps: ${graph.steps.map((s) => s.name).join(', ')}` }]);
    }
    if (found.state === 'running') throw new PipelineStateError(found.id, 'restart', 'running', `cancel it first (pipelines cancel ${spec.name} ${key}), or wait for it to end`);
    const steps = descendants(graph, options.from);
    // The superseded files are copied aside before the transaction (copies: a crash leaves an extra one).
    const store = this.c.store(spec);
    const moves: { id: string; location: string }[] = [];
    for (const a of (await this.c.pipelines.artifacts.list({ runId: found.id, current: true })).filter((x) => steps.includes(x.step))) {
      const location = await store.archive(artifactRun(found), { name: a.name, location: a.location, sha256: a.sha256, size: Number(a.size_bytes) }, found.generation);
      if (location !== a.location) moves.push({ id: a.id, location });
    }
    const who = this.who(options);
    const fx = effects();
    await this.c.database.pool.transaction(async (tx) => {
      const run = (await this.c.pipelines.runs.lock({ tx, id: found.id }))!;
      if (run.state === 'running' || run.generation !== found.generation) {
        throw new PipelineStateError(run.id, 'restart', run.state, 'the run changed while it was being restarted: look at it again (pipelines show)');
      }
      await this.c.pipelines.artifacts.supersede({ tx, runId: run.id, steps });
      await this.c.pipelines.artifacts.relocate({ tx, runId: run.id, moves });
      await this.c.pipelines.steps.restart({ tx, runId: run.id, steps, generation: run.generation });
      await this.c.pipelines.steps.reset({ tx, runId: run.id });
      const generation = run.generation + 1;
      await this.c.pipelines.runs.resume({ tx, id: run.id, generation, deadlineMs: spec.deadlineMs ?? null });
      Object.assign(run, { state: 'running', generation, reason: null, error: null, finished_at: null, warnings: 0 });
      await this.transitions.advance(tx, run, fx);
      await this.audit(tx, run, 'pipeline-restart', who, { from: options.from, steps }, fx);
    });
    await this.runner.after(fx);
    return this.summary(found.id);
  }

  /**
   * Cancels a running or held run: its ready and running steps' jobs are cancelled through the
   * job core (a running handler's signal aborts), its unfinished steps end as cancelled, nothing
   * new starts. Audited. A rerun resumes it.
   */
  async cancel(pipeline: { readonly name: string } | string, key: string, options: RunSelector & PipelineActorOptions = {}): Promise<PipelineRun> {
    const name = typeof pipeline === 'string' ? pipeline : pipeline.name;
    const found = await this.find(name, key, options);
    const who = this.who(options);
    const fx = effects();
    const cancelled = await this.c.database.pool.transaction(async (tx) => {
      const run = (await this.c.pipelines.runs.lock({ tx, id: found.id }))!;
      if (run.state !== 'running' && run.state !== 'held') throw new PipelineStateError(run.id, 'cancel', run.state, 'cancel applies to running and held runs');
      const jobs = await this.c.pipelines.steps.openJobs({ tx, runId: run.id });
      const changed = jobs.length ? await this.c.database.admin.change({ action: 'cancel', filter: { ids: jobs }, who, limit: jobs.length, db: tx }) : [];
      await this.c.pipelines.steps.cancelOpen({ tx, runId: run.id });
      await this.transitions.finishRun(tx, run, 'cancelled', cleanText(`cancelled by ${who.actor}${who.reason ? `: ${who.reason}` : ''}`, 2_000), null, fx);
      await this.audit(tx, run, 'pipeline-cancel', who, { jobs: changed.length }, fx);
      return changed;
    });
    for (const j of cancelled) fx.events.push({ type: 'job.cancelled', jobId: j.id, kind: j.kind, queue: j.queue, attempt: j.attempt });
    await this.runner.after(fx);
    return this.summary(found.id);
  }

  /** Re-reads every artifact of the run and compares it with its recorded SHA-256 and size. Audited. */
  async verify(pipeline: { readonly name: string } | string, key: string, options: RunSelector & PipelineActorOptions = {}): Promise<VerifyResult> {
    const spec = this.spec(pipeline);
    const run = await this.find(spec.name, key, options);
    const result = await this.publisher.verify(run);
    const fx = effects();
    const missing = result.artifacts.filter((a) => a.status === 'missing').map((a) => a.name);
    const changed = result.artifacts.filter((a) => a.status === 'changed').map((a) => a.name);
    await this.audit(undefined, run, 'pipeline-verify', this.who(options), { ok: result.ok, missing, changed }, fx);
    await this.runner.after(fx);
    return result;
  }

  /**
   * Removes the key's finished dry runs (steps, outputs, history, artifacts and their files) and
   * calls the pipeline's cleanup hook for each in the transaction that deletes it. Refuses a live
   * run and a dry run still running (NS_PIPELINE_CLEANUP_REFUSED); nothing is removed then. Audited.
   */
  async cleanup(pipeline: { readonly name: string } | string, key: string, options: PipelineActorOptions & { runId?: string } = {}): Promise<CleanupResult> {
    const spec = this.spec(pipeline);
    const who = this.who(options);
    const all = await this.c.pipelines.runs.list({ filter: { pipeline: spec.name, states: null, key, dryRun: null, beforeId: null, id: options.runId ?? null }, limit: 1_000 });
    if (all.length === 0) throw new PipelineRunNotFoundError(spec.name, `key "${key}"${options.runId ? ` with id ${options.runId}` : ''}`);
    const live = all.find((r) => !r.dry_run);
    const dry = all.filter((r) => r.dry_run);
    if (options.runId && live) throw new PipelineCleanupRefusedError(spec.name, `run ${live.id} of key "${key}" is a live run (${live.state}), not a dry run`);
    if (dry.length === 0) throw new PipelineCleanupRefusedError(spec.name, `key "${key}" has a live run (${live!.id}, ${live!.state}) and no dry run`);
    const active = dry.find((r) => r.state === 'running' || r.state === 'held');
    if (active) throw new PipelineCleanupRefusedError(spec.name, `dry run ${active.id} of key "${key}" is ${active.state}: cancel it first`);
    const removed: string[] = [];
    for (const r of dry) {
      const fx = effects();
      const gone = await this.c.database.pool.transaction(async (tx) => {
        const run = await this.c.pipelines.runs.lock({ tx, id: r.id });
        if (!run) return undefined;
        if (!run.dry_run || run.state === 'running' || run.state === 'held') throw new PipelineCleanupRefusedError(spec.name, `run ${run.id} is ${run.dry_run ? run.state : 'a live run'}`);
        if (spec.cleanup) await spec.cleanup(Object.freeze({ runId: run.id, pipeline: run.pipeline, key: run.key, input: run.input ?? undefined }), tx);
        const locations = (await this.c.pipelines.artifacts.list({ runId: run.id, current: null, db: tx })).map((a) => a.location);
        await this.audit(tx, run, 'pipeline-cleanup', who, { artifacts: locations.length }, fx);
        await this.c.pipelines.runs.remove({ ids: [run.id], db: tx });
        return { run, locations };
      });
      if (!gone) continue;
      // After the rows: a crash here leaves files of a run that no longer exists, under its own dry-run directory.
      await this.c.store(spec).remove(artifactRun(gone.run), gone.locations);
      await this.runner.after(fx);
      removed.push(r.id);
    }
    return { removed };
  }

  /** One pass of the pipeline sweep now (deadlines, steps whose job ended unrecorded, held steps, publication, retention). */
  sweep(options: SweepOptions = {}): Promise<SweepReport> {
    return this.sweeper.runOnce(options);
  }

  private async startRun(spec: PipelineSpec, key: string, input: unknown, how: StartHow): Promise<StartResult> {
    const issues: Issue[] = [];
    let theKey = key;
    const kp = keyProblem(key);
    if (kp) issues.push({ path: 'key', message: kp });
    else if (spec.keySchema) {
      const r = await validate(spec.keySchema, key, 'key');
      if ('issues' in r) issues.push(...r.issues);
      else if (typeof r.value !== 'string' || keyProblem(r.value)) issues.push({ path: 'key', message: `the key schema gave ${JSON.stringify(r.value)}, which is not a key string` });
      else theKey = r.value;
    }
    let inputJson: string | null = null;
    if (spec.inputSchema) {
      const r = await validate(spec.inputSchema, input, 'input');
      if ('issues' in r) issues.push(...r.issues);
      else if (r.value !== undefined) inputJson = jsonOrIssue(r.value, issues);
    } else if (input !== undefined) inputJson = jsonOrIssue(input, issues);
    if (issues.length) throw new OptionsInvalidError(`start of pipeline "${spec.name}"`, issues);
    const graph = graphOf(spec);
    const traceContext = startPipelineSpan(spec.name);
    const body = async (tx: Executor) => {
      const fx = effects();
      const row = await this.c.pipelines.runs.start({
        tx,
        run: {
          pipeline: spec.name,
          key: theKey,
          dryRun: how.dryRun,
          input: inputJson,
          graph: JSON.stringify(graph),
          traceContext: traceContext ? JSON.stringify(traceContext) : null,
          startedBy: cleanText(how.startedBy, 200),
          deadlineMs: spec.deadlineMs ?? null,
        },
      });
      if (row.created) {
        await this.c.pipelines.steps.insertMain({ tx, runId: row.id, steps: graph.steps.map((s) => s.name) });
        fx.events.push({ type: 'pipeline.started', pipeline: spec.name, runId: row.id, generation: row.generation, dryRun: row.dry_run, by: row.started_by });
        await this.transitions.advance(tx, row, fx);
      }
      if (how.audit) await this.audit(tx, row, 'pipeline-start', how.audit, { created: row.created, dryRun: row.dry_run }, fx);
      return { row, fx, run: await this.summary(row.id, tx) };
    };
    const { row, fx, run } = how.db ? await body(how.db) : await this.c.database.pool.transaction(body);
    await this.runner.after(fx);
    return { run, created: row.created };
  }

  private async audit(db: Executor | undefined, run: RunRow, action: string, who: { actor: string; reason: string | null }, details: Record<string, unknown>, fx: Effects): Promise<void> {
    const entry = { actor: who.actor, action, pipeline: run.pipeline, key: run.key, reason: who.reason, details: { runId: run.id, dryRun: run.dry_run, ...details } };
    await this.c.pipelines.runs.audit({ entry, ...(db ? { db } : {}) });
    fx.events.push({ type: 'pipeline.action', pipeline: run.pipeline, runId: run.id, generation: run.generation, action, actor: who.actor });
  }

  private spec(pipeline: { readonly name: string } | string): PipelineSpec {
    const name = typeof pipeline === 'string' ? pipeline : (pipeline as { name?: unknown } | null)?.name;
    const spec = typeof name === 'string' ? this.c.definition(name) : undefined;
    if (!spec) throw new UnknownPipelineError(String(name), this.c.names());
    return spec;
  }

  private who(o: PipelineActorOptions): { actor: string; reason: string | null } {
    return { actor: cleanText(o.actor ?? this.defaultActor, 200), reason: o.reason === undefined ? null : cleanText(o.reason, 2_000) };
  }
}

async function validate(schema: PayloadSchema, value: unknown, path: string): Promise<{ value: unknown } | { issues: Issue[] }> {
  let r = schema['~standard'].validate(value);
  if (r instanceof Promise) r = await r;
  if (r.issues) return { issues: r.issues.map((i) => ({ path: issuePath(i.path) ? `${path}.${issuePath(i.path)}` : path, message: i.message })) };
  return { value: r.value };
}

function jsonOrIssue(value: unknown, issues: Issue[]): string | null {
  try {
    return toJson('input', value, 1_048_576);
  } catch (err) {
    issues.push({ path: 'input', message: err instanceof Error ? err.message.replace(/\s+/g, ' ') : String(err) });
    return null;
  }
}
