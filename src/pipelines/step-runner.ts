import type { Executor } from '../db/executor.js';
import type { RunRow } from '../db/pipelines-runs.js';
import type { StepRef } from '../db/pipelines-steps.js';
import { isNightshiftError, PipelineArtifactExistsError, PipelineItemsInvalidError, PipelineOutputTooLargeError } from '../errors.js';
import type { JobContext } from '../jobs/define-job.js';
import { describeError } from '../jobs/error-text.js';
import { discard, isJobControl } from '../jobs/job-control.js';
import { toJson } from '../jobs/payload.js';
import { workerError } from '../telemetry/events.js';
import type { ArtifactPublisher } from './artifact-publisher.js';
import type { PipelineSpec, StepSpec } from './define-pipeline.js';
import { effects, type Effects, type EngineContext } from './engine-context.js';
import { graphStep, readGraph, type FrozenGraph } from './graph.js';
import type { RunTransitions, StepError } from './run-transitions.js';
import { StepAttempt } from './step-attempt.js';

/** The job payload of a step. */
export interface StepPayload {
  run: string;
  step: string;
  item: string;
}

/** Why an attempt's signal aborted, when it was not the step's own timeout: the job core decides then. */
const NOT_OURS = new Set(['NS_SHUTDOWN', 'NS_LEASE_LOST', 'NS_JOB_CANCELLED']);
/** How long a recording transaction is retried through database trouble before the attempt is given back. */
const RECORD_RETRY_MS = 10_000;

/**
 * The handler of every step job. It runs the step's function and records the outcome in one
 * transaction fenced by the attempt's lease (`ctx.transaction`), so only an attempt that still
 * holds its lease writes: a step's output, its artifacts' records, the next steps' jobs and the
 * run's end commit together or not at all. The job itself completes after that, as any job does.
 */
export class StepRunner {
  constructor(
    private readonly c: EngineContext,
    private readonly transitions: RunTransitions,
    private readonly publisher: ArtifactPublisher,
  ) {}

  async run(spec: PipelineSpec, step: StepSpec, payload: StepPayload, ctx: JobContext): Promise<unknown> {
    const ref: StepRef = { runId: payload.run, step: step.name, item: payload.item, jobId: ctx.jobId };
    const row = await this.c.pipelines.steps.begin({ runId: ref.runId, step: ref.step, item: ref.item });
    // The run was deleted (a cleaned-up dry run, retention), or the step now has another job (a
    // rerun replaced this one): nothing of this job's is to be recorded.
    if (!row || row.job_id !== ctx.jobId) return undefined;
    if (row.state === 'failed') return discard(`step "${ref.step}" is recorded as failed (pipelines show)`);
    if (row.state !== 'ready' && row.state !== 'running') return undefined;
    if (row.run_state !== 'running') {
      // The run failed, was cancelled or is held: no new attempt starts.
      await this.record(ctx, ref.runId, async (tx, run, fx) => {
        if (await this.c.pipelines.steps.fail({ tx, ref, state: 'cancelled', error: { message: `not started: the run is ${run.state}` } })) {
          fx.events.push({ type: 'pipeline.step-finished', pipeline: run.pipeline, runId: run.id, generation: run.generation, step: ref.step, item: ref.item !== '', state: 'cancelled' });
          await this.transitions.stepEnded(tx, run, ref, fx);
        }
      });
      return undefined;
    }
    await this.c.pipelines.steps.started({ runId: ref.runId, step: ref.step, item: ref.item, jobId: ctx.jobId });
    const graph = readGraph(row.graph);
    const needs = await this.needs(ref.runId, graph, graphStep(graph, step.name)?.needs ?? step.needs);
    const attempt = new StepAttempt(
      { pipeline: spec.name, runId: ref.runId, key: row.key, input: row.input ?? undefined, generation: row.generation, dryRun: row.dry_run, step: step.name, item: ref.item, needs, timeoutMs: step.timeoutMs },
      ctx,
      this.c.store(spec),
    );
    const expanding = step.map && ref.item === '';
    let result: unknown;
    try {
      result = await attempt.run(() => (expanding ? step.items!(needs) : step.run(attempt.context, row.item_value ?? undefined)));
      if (isJobControl(result)) throw result;
    } catch (err) {
      attempt.close();
      return this.failed(ctx, ref, err, attempt.timedOut);
    }
    attempt.close();
    try {
      if (expanding) await this.expand(ctx, spec, ref, result);
      else await this.succeed(ctx, spec, ref, result, attempt);
    } catch (err) {
      if (err instanceof PipelineOutputTooLargeError || err instanceof PipelineItemsInvalidError || err instanceof PipelineArtifactExistsError || isInvalidValue(err)) {
        return this.failed(ctx, ref, err, false, true);
      }
      throw err;
    }
    return undefined;
  }

  private async succeed(ctx: JobContext, spec: PipelineSpec, ref: StepRef, result: unknown, attempt: StepAttempt): Promise<void> {
    const json = toJson(`output of step ${ref.step}`, result === undefined ? null : result, Number.MAX_SAFE_INTEGER);
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > spec.maxOutputBytes) throw new PipelineOutputTooLargeError(ref.step, bytes, spec.maxOutputBytes);
    await this.record(ctx, ref.runId, async (tx, run, fx) => {
      if (!(await this.c.pipelines.steps.succeed({ tx, ref, output: json, bytes }))) return;
      try {
        const at = { runId: run.id, generation: run.generation, step: ref.step, item: ref.item, jobId: ctx.jobId, attempt: ctx.attempt, leaseToken: ctx.leaseToken };
        await this.c.pipelines.artifacts.insert({ tx, at, rows: attempt.staged });
      } catch (err) {
        const e = err as { sqlState?: string; cause?: { constraint?: string } };
        if (e.sqlState === '23505' && e.cause?.constraint === 'pipeline_artifacts_name') {
          const name = attempt.staged.map((a) => a.name).join(', ');
          throw new PipelineArtifactExistsError(name, ref.step);
        }
        throw err;
      }
      fx.events.push({ type: 'pipeline.step-finished', pipeline: run.pipeline, runId: run.id, generation: run.generation, step: ref.step, item: ref.item !== '', state: 'succeeded' });
      await this.transitions.stepEnded(tx, run, ref, fx);
    });
  }

  /** A fan-out's own job: computes the items, writes one row per item, and lets `advance` enqueue them. */
  private async expand(ctx: JobContext, spec: PipelineSpec, ref: StepRef, result: unknown): Promise<void> {
    const step = spec.steps.find((s) => s.name === ref.step)!;
    if (!Array.isArray(result)) throw new PipelineItemsInvalidError(ref.step, `items returned ${result === null ? 'null' : typeof result}, not an array`);
    if (result.length > spec.maxItems) throw new PipelineItemsInvalidError(ref.step, `${result.length} items, over maxItems ${spec.maxItems}`);
    const seen = new Set<string>();
    const items = result.map((value, i) => {
      const key = step.itemKey ? step.itemKey(value, i) : String(i);
      if (typeof key !== 'string' || key.length < 1 || key.length > 200 || !key.isWellFormed() || key.includes('\u0000')) {
        throw new PipelineItemsInvalidError(ref.step, `itemKey gave ${JSON.stringify(key)} for item ${i}: keys are strings of 1 to 200 characters`);
      }
      if (seen.has(key)) throw new PipelineItemsInvalidError(ref.step, `two items have the key "${key.slice(0, 60)}"`);
      seen.add(key);
      let json: string;
      try {
        json = toJson(`item ${i} of step ${ref.step}`, value === undefined ? null : value, spec.maxOutputBytes);
      } catch (err) {
        throw new PipelineItemsInvalidError(ref.step, err instanceof Error ? err.message.split('\n')[0]! : String(err));
      }
      return { key, value: json };
    });
    await this.record(ctx, ref.runId, async (tx, run, fx) => {
      if (!(await this.c.pipelines.steps.expand({ tx, ref, items: items.length }))) return;
      await this.c.pipelines.steps.insertItems({ tx, runId: run.id, step: ref.step, items });
      await this.transitions.advance(tx, run, fx);
    });
  }

  /**
   * An attempt failed. With attempts left (and an error that may pass), the job core retries it;
   * otherwise the failure is recorded for good — a fatal step fails the run in the same fenced
   * transaction — and the job is discarded with the reason.
   */
  private async failed(ctx: JobContext, ref: StepRef, err: unknown, timedOut: boolean, final = false): Promise<unknown> {
    const reason = (ctx.signal.reason as { code?: unknown } | undefined)?.code;
    // Shutdown, a lost lease, a cancel: the job core hands the job back, refuses it, or has ended it.
    if (!timedOut && ctx.signal.aborted && typeof reason === 'string' && NOT_OURS.has(reason)) throw err;
    if (isJobControl(err) && err.action === 'retry') return err;
    // Input that is wrong (an artifact name, a value JSON cannot hold, options) is wrong on every attempt.
    const forGood = final || isInvalidValue(err) || isOptionsInvalid(err) || (isJobControl(err) && err.action !== 'retry') || ctx.attempt >= ctx.maxAttempts;
    if (!forGood) throw err;
    const d = describeError(err);
    const message = isJobControl(err) && err.action === 'hold' ? `steps cannot hold (a held step's job would leave the run waiting): ${d.message}` : d.message;
    const error: StepError = { message, ...(d.code ? { code: d.code } : {}), attempt: ctx.attempt };
    await this.record(ctx, ref.runId, (tx, run, fx) => this.transitions.stepFailed(tx, run, ref, error, fx).then(() => undefined));
    // The reason is logged with job.discarded: it names the failure, not its message (which may
    // quote secrets; it is stored with the step and the job's error history).
    return discard(`step "${ref.step}" failed for good after attempt ${ctx.attempt}${d.code ? ` (${d.code})` : ''}; its error is the run's (pipelines show)`);
  }

  /** The outputs of the steps `names` as the handler receives them: plain, as a result (optional), or per item (map). */
  private async needs(runId: string, graph: FrozenGraph, names: readonly string[]): Promise<Record<string, unknown>> {
    if (names.length === 0) return {};
    const rows = await this.c.pipelines.steps.needs({ runId, steps: names });
    const out: Record<string, unknown> = {};
    for (const name of names) {
      const g = graphStep(graph, name);
      const mine = rows.filter((r) => r.step === name);
      const result = (r: (typeof rows)[number]) =>
        r.state === 'succeeded' ? { ok: true, value: r.output } : { ok: false, error: { message: String(r.error?.message ?? r.state), ...(r.error?.code ? { code: r.error.code } : {}) } };
      if (g?.map) out[name] = mine.filter((r) => r.item !== '').map((r) => Object.freeze({ key: r.item, ...result(r) }));
      else {
        const main = mine.find((r) => r.item === '');
        out[name] = g?.optional === 'run' ? (main ? Object.freeze(result(main)) : { ok: false, error: { message: 'missing' } }) : main?.output;
      }
    }
    return Object.freeze(out);
  }

  /**
   * Runs `fn` in the attempt's fenced transaction with the run's row locked, then acts on what it
   * decided (events, publishing). Database trouble (a restart, a dropped connection, a deadlock)
   * is retried for a while — a recording that committed is found recorded and does nothing — and
   * then thrown, so the job core gives the attempt back; a lost lease is thrown at once.
   */
  private async record(ctx: JobContext, runId: string, fn: (tx: Executor, run: RunRow, fx: Effects) => Promise<void>): Promise<void> {
    const deadline = Date.now() + RECORD_RETRY_MS;
    for (let attempt = 0; ; attempt++) {
      const fx = effects();
      try {
        await ctx.transaction(async (tx) => {
          const run = await this.c.pipelines.runs.lock({ tx, id: runId });
          if (run) await fn(tx, run, fx);
        });
      } catch (err) {
        const retry = transient(err) && Date.now() < deadline && !ctx.signal.aborted;
        if (!retry) throw err;
        this.c.events.emit(workerError(`pipeline step ${runId}`, err));
        await new Promise((r) => setTimeout(r, Math.min(2_000, 100 * 2 ** attempt)));
        continue;
      }
      await this.after(fx);
      return;
    }
  }

  /** What a committed transition asked for: its events, and the publication of runs that ended. */
  async after(fx: Effects): Promise<void> {
    for (const e of fx.events) this.c.events.emit(e);
    for (const id of fx.finished) {
      await this.publisher.publish(id).catch((err: unknown) => this.c.events.emit(workerError(`pipeline artifacts of run ${id}`, err)));
    }
  }
}

/**
 * Database trouble that passes: a lost connection or a server going down (no SQLSTATE, or classes
 * 08 and 57), a deadlock or serialization failure (40), resources (53). A statement the server
 * refuses for what it is (a constraint, a type) would be refused again.
 */
function transient(err: unknown): boolean {
  if (!isNightshiftError(err)) return true;
  if (err.code !== 'NS_DATABASE') return false;
  const state = (err as { sqlState?: string }).sqlState;
  return state === undefined || /^(08|57|40|53)/.test(state) || /^E[A-Z]+$/.test(state);
}

function isOptionsInvalid(err: unknown): boolean {
  return isNightshiftError(err) && (err.code === 'NS_OPTIONS_INVALID' || err.code === 'NS_PIPELINE_ARTIFACT_EXISTS');
}

/** An output or item JSON cannot store (NaN, a Map, …): the step fails for good, retrying cannot fix it. */
function isInvalidValue(err: unknown): boolean {
  return isNightshiftError(err) && (err.code === 'NS_PAYLOAD_INVALID' || err.code === 'NS_PAYLOAD_TOO_LARGE');
}
