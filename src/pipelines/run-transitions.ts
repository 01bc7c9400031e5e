import type { Executor } from '../db/executor.js';
import type { RunRow } from '../db/pipelines-runs.js';
import { STEP_DONE, type StepRef, type StepState } from '../db/pipelines-steps.js';
import { cleanText } from '../jobs/error-text.js';
import type { FinishedRun, PipelineSpec } from './define-pipeline.js';
import type { Effects, EngineContext } from './engine-context.js';
import { graphStep, readGraph, type FrozenGraph, type GraphStep } from './graph.js';

/** A step's error as stored and shown to dependents. */
export interface StepError {
  message: string;
  code?: string;
  attempt?: number;
}

interface StepView {
  main: StepState;
  items: number | null;
  counts: Partial<Record<StepState, number>>;
}

/**
 * The run's state machine. Every method runs inside a transaction that holds the run's row lock
 * (taken first, before any job row), so the transitions of one run are serialised and each
 * decision is made from the steps' committed states: a step becomes ready in the transaction of
 * its last need's end, with its job enqueued in it; the run ends in the transaction of its last
 * step's end. What happens after commit (events, publishing) is collected in `fx`.
 */
export class RunTransitions {
  constructor(private readonly c: EngineContext) {}

  /**
   * Decides what follows from the steps' states: ends fan-outs whose items all ended, skips steps
   * that cannot run, makes ready (and enqueues) steps whose needs ended, holds the run when a step
   * that is due has no handler anywhere, and ends the run when every step ended. Only the first
   * (bookkeeping) part applies to a run that is not running.
   */
  async advance(tx: Executor, run: RunRow, fx: Effects): Promise<void> {
    const graph = readGraph(run.graph);
    for (let round = 0; round <= graph.steps.length + 1; round++) {
      const view = await this.view(tx, run.id);
      let changed = await this.settleFanOuts(tx, run, graph, view, fx);
      if (run.state !== 'running') {
        if (changed) continue;
        return;
      }
      const skip: GraphStep[] = [];
      const ready: { step: GraphStep; item: string }[] = [];
      for (const s of graph.steps) {
        const v = view.get(s.name);
        if (!v) continue;
        if (v.main === 'running' && s.map && (v.counts.blocked ?? 0) > 0) {
          for (const i of await this.c.pipelines.steps.blockedItems({ tx, runId: run.id, step: s.name })) ready.push({ step: s, item: i.item });
          continue;
        }
        if (v.main !== 'blocked') continue;
        const needs = s.needs.map((n) => ({ g: graphStep(graph, n)!, v: view.get(n) }));
        if (needs.some((n) => !n.v || !STEP_DONE.includes(n.v.main))) continue;
        const blockedBy = needs.some((n) => n.v!.main === 'skipped' || n.v!.main === 'cancelled' || (n.v!.main === 'failed' && n.g.optional !== 'run'));
        if (blockedBy || (run.dry_run && s.effect)) skip.push(s);
        else if (s.map && v.items !== null) {
          // A rerun of a fan-out whose items exist: it runs again on the same items.
          await this.c.pipelines.steps.mainRunning({ tx, runId: run.id, step: s.name });
          changed = true;
        } else ready.push({ step: s, item: '' });
      }
      for (const s of skip) {
        if (await this.c.pipelines.steps.setMain({ tx, runId: run.id, step: s.name, state: 'skipped', error: null, from: ['blocked'] })) {
          fx.events.push({ type: 'pipeline.step-finished', pipeline: run.pipeline, runId: run.id, generation: run.generation, step: s.name, item: false, state: 'skipped' });
          changed = true;
        }
      }
      if (ready.length > 0) {
        if (!(await this.schedule(tx, run, ready, fx))) return;
        changed = true;
      }
      if (!changed) break;
    }
    if (run.state !== 'running') return;
    const view = await this.view(tx, run.id);
    if ([...view.values()].every((v) => STEP_DONE.includes(v.main))) {
      const fatal = graph.steps.find((s) => !s.optional && view.get(s.name)?.main === 'failed');
      if (fatal) await this.failRun(tx, run, `step "${fatal.name}" failed`, null, fx);
      else await this.finishRun(tx, run, 'succeeded', null, null, fx);
    }
  }

  /**
   * What follows a step's (or an item's) end. An item whose fan-out has other items still open
   * can change nothing else — only the last item's end settles the fan-out — so the full
   * decision is skipped: a fan-out of n items costs n small transitions, not n full ones.
   */
  async stepEnded(tx: Executor, run: RunRow, ref: StepRef, fx: Effects): Promise<void> {
    if (ref.item !== '' && (await this.c.pipelines.steps.hasOpenItems({ tx, runId: run.id, step: ref.step }))) return;
    await this.advance(tx, run, fx);
  }

  /**
   * A step (or item) failed for good: recorded as failed by the job `ref` names; a fatal one fails
   * the run, an optional one is a warning and the run goes on. False when `ref` may not record it.
   */
  async stepFailed(tx: Executor, run: RunRow, ref: StepRef, error: StepError, fx: Effects): Promise<boolean> {
    if (!(await this.c.pipelines.steps.fail({ tx, ref, state: 'failed', error }))) return false;
    const g = graphStep(readGraph(run.graph), ref.step);
    fx.events.push({ type: 'pipeline.step-finished', pipeline: run.pipeline, runId: run.id, generation: run.generation, step: ref.step, item: ref.item !== '', state: 'failed' });
    if (g && !g.optional && (run.state === 'running' || run.state === 'held')) {
      const what = ref.item ? `step "${ref.step}" item "${ref.item}"` : `step "${ref.step}"`;
      await this.failRun(tx, run, cleanText(`${what} failed: ${error.message}`, 2_000), { step: ref.step, ...(ref.item ? { item: ref.item } : {}), ...error }, fx);
    } else await this.stepEnded(tx, run, ref, fx);
    return true;
  }

  /**
   * Fails the run: steps not started end as cancelled (their unclaimed jobs are cancelled), steps
   * already running drain (they may finish and keep their output, but nothing follows them), and
   * the failure follow-ups are enqueued — all in the caller's transaction.
   */
  async failRun(tx: Executor, run: RunRow, reason: string, error: unknown, fx: Effects): Promise<void> {
    if (!(await this.finish(tx, run, 'failed', reason, error))) return;
    await this.c.pipelines.steps.cancelUnstarted({ tx, runId: run.id, reason: `pipeline run ${run.id} failed before this step started` });
    await this.followUps(tx, run, 'failure', fx);
    await this.advance(tx, run, fx);
    fx.finished.add(run.id);
    fx.events.push({ type: 'pipeline.finished', pipeline: run.pipeline, runId: run.id, generation: run.generation, state: 'failed', warnings: run.warnings, dryRun: run.dry_run });
  }

  /** Ends the run as succeeded (with its warnings) or cancelled. */
  async finishRun(tx: Executor, run: RunRow, state: 'succeeded' | 'cancelled', reason: string | null, error: unknown, fx: Effects): Promise<void> {
    if (!(await this.finish(tx, run, state, reason, error))) return;
    if (state === 'succeeded') await this.followUps(tx, run, 'success', fx);
    fx.finished.add(run.id);
    fx.events.push({ type: 'pipeline.finished', pipeline: run.pipeline, runId: run.id, generation: run.generation, state, warnings: run.warnings, dryRun: run.dry_run });
  }

  /** Holds a running run with its reason (nothing new starts until a rerun). */
  async hold(tx: Executor, run: RunRow, reason: string, fx: Effects): Promise<void> {
    if (!(await this.c.pipelines.runs.hold({ tx, id: run.id, reason }))) return;
    run.state = 'held';
    run.reason = reason;
    fx.events.push({ type: 'pipeline.held', pipeline: run.pipeline, runId: run.id, generation: run.generation, reason });
  }

  private async finish(tx: Executor, run: RunRow, state: 'succeeded' | 'failed' | 'cancelled', reason: string | null, error: unknown): Promise<boolean> {
    const graph = readGraph(run.graph);
    const optional = graph.steps.filter((s) => s.optional).map((s) => s.name);
    const warnings = await this.c.pipelines.steps.failedCount({ tx, runId: run.id, steps: optional });
    if (!(await this.c.pipelines.runs.finish({ tx, id: run.id, end: { state, reason, error, warnings } }))) return false;
    run.state = state;
    run.reason = reason;
    run.warnings = warnings;
    return true;
  }

  /** Each step's own state and its items' states, from one small aggregate. */
  private async view(tx: Executor, runId: string): Promise<Map<string, StepView>> {
    const view = new Map<string, StepView>();
    for (const r of await this.c.pipelines.steps.summary({ tx, runId })) {
      const v = view.get(r.step) ?? { main: 'blocked' as StepState, items: null, counts: {} };
      if (r.main) {
        v.main = r.state;
        v.items = r.items;
      } else v.counts[r.state] = (v.counts[r.state] ?? 0) + r.n;
      view.set(r.step, v);
    }
    return view;
  }

  /** A fan-out whose items all ended ends: failed if any item failed, cancelled if any was, else succeeded. */
  private async settleFanOuts(tx: Executor, run: RunRow, graph: FrozenGraph, view: Map<string, StepView>, fx: Effects): Promise<boolean> {
    let changed = false;
    for (const s of graph.steps) {
      const v = view.get(s.name);
      if (!s.map || !v || v.main !== 'running' || v.items === null) continue;
      const ended = STEP_DONE.reduce((n, st) => n + (v.counts[st] ?? 0), 0);
      const open = (v.counts.blocked ?? 0) + (v.counts.ready ?? 0) + (v.counts.running ?? 0);
      if (open > 0 || ended < v.items) continue;
      const failed = v.counts.failed ?? 0;
      const state: StepState = failed > 0 ? 'failed' : (v.counts.cancelled ?? 0) > 0 ? 'cancelled' : 'succeeded';
      const error = failed > 0 ? { message: `${failed} of ${v.items} items failed` } : null;
      if (await this.c.pipelines.steps.setMain({ tx, runId: run.id, step: s.name, state, error, from: ['running'] })) {
        v.main = state;
        fx.events.push({ type: 'pipeline.step-finished', pipeline: run.pipeline, runId: run.id, generation: run.generation, step: s.name, item: false, state: state as 'succeeded' });
        changed = true;
      }
    }
    return changed;
  }

  /**
   * Enqueues the jobs of steps (and items) that became ready, in the caller's transaction, and
   * marks them ready. A step missing from this process's definition is enqueued through the SQL
   * function when some live process hosts its kind (a rolling deploy); when none does, the run is
   * held and nothing is enqueued. False when the run was held.
   */
  private async schedule(tx: Executor, run: RunRow, ready: readonly { step: GraphStep; item: string }[], fx: Effects): Promise<boolean> {
    const spec = this.c.definition(run.pipeline);
    const kinds = [...new Set(ready.map((r) => `pipeline:${run.pipeline}:${r.step.name}`))];
    const foreign = kinds.filter((k) => !this.c.job(k) || !spec?.steps.some((s) => s.kind === k));
    if (foreign.length > 0) {
      const hosted = await this.c.pipelines.maintenance.kindsHosted({ kinds: foreign, liveMs: this.c.liveProcessMs, db: tx });
      const missing = foreign.find((k) => !hosted.has(k));
      if (missing) {
        const step = missing.slice(`pipeline:${run.pipeline}:`.length);
        await this.hold(tx, run, `step "${step}" is in run ${run.id}'s graph but no deployed code has it (kind ${missing}): deploy it and rerun, or restart from an earlier step`, fx);
        return false;
      }
    }
    const traceContext = run.trace_context ?? undefined;
    const rows: { step: string; item: string; jobId: string }[] = [];
    for (const kind of kinds) {
      const part = ready.filter((r) => `pipeline:${run.pipeline}:${r.step.name}` === kind);
      const payloads = part.map((r) => ({ run: run.id, step: r.step.name, item: r.item }));
      const job = this.c.job(kind);
      const ids =
        job && !foreign.includes(kind)
          ? (await this.c.enqueuer().enqueueMany(job, payloads, { db: tx, ...(traceContext ? { traceContext } : {}) })).map((r) => r.id)
          : await Promise.all(payloads.map(async (p) => (await this.c.enqueuer().enqueueRegistered(kind, p, { db: tx, ...(traceContext ? { traceContext } : {}) })).id));
      part.forEach((r, i) => rows.push({ step: r.step.name, item: r.item, jobId: ids[i]! }));
    }
    await this.c.pipelines.steps.setReady({ tx, runId: run.id, rows });
    return true;
  }

  /**
   * Enqueues the run's follow-ups of `on`, each once per run and generation (its row is the key).
   * A payload function that throws, or a payload its job refuses, is recorded on the row and
   * reported; the run still ends (under a savepoint, so a refused insert does not abort it).
   */
  private async followUps(tx: Executor, run: RunRow, on: 'success' | 'failure', fx: Effects): Promise<void> {
    if (run.dry_run) return;
    const spec: PipelineSpec | undefined = this.c.definition(run.pipeline);
    const list = spec?.followUps.filter((f) => f.on === on) ?? [];
    let view: FinishedRun | undefined;
    for (const f of list) {
      const ref = { runId: run.id, generation: run.generation, name: f.name };
      if (!(await this.c.pipelines.maintenance.followUpClaim({ tx, ref }))) continue;
      view ??= Object.freeze({
        runId: run.id,
        pipeline: run.pipeline,
        key: run.key,
        input: run.input ?? undefined,
        state: on === 'success' ? 'succeeded' : 'failed',
        reason: run.reason,
        warnings: run.warnings,
        generation: run.generation,
        outputs: await this.c.pipelines.steps.outputs({ tx, runId: run.id }),
      });
      await this.c.pipelines.maintenance.savepoint({ tx, name: 'nightshift_followup' });
      try {
        const payload = f.payload ? await f.payload(view) : {};
        const { id } = await this.c.enqueuer().enqueue(f.job, payload, { db: tx });
        await this.c.pipelines.maintenance.savepointRelease({ tx, name: 'nightshift_followup' });
        await this.c.pipelines.maintenance.followUpSet({ tx, ref, jobId: id, error: null });
      } catch (err) {
        // A transaction that cannot roll back to the savepoint is broken (the connection): the
        // whole transition is retried by its caller.
        await this.c.pipelines.maintenance.savepointRollback({ tx, name: 'nightshift_followup' }).catch(() => {
          throw err;
        });
        const message = cleanText(err instanceof Error ? err.message : err, 2_000);
        await this.c.pipelines.maintenance.followUpSet({ tx, ref, jobId: null, error: message });
        fx.events.push({ type: 'pipeline.follow-up-failed', pipeline: run.pipeline, runId: run.id, generation: run.generation, followUp: f.name, error: message });
      }
    }
  }
}
