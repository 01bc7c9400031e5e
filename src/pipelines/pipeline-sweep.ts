import type { StaleStepRow, WaitingStepRow } from '../db/pipelines-maintenance.js';
import { workerError } from '../telemetry/events.js';
import type { ArtifactPublisher } from './artifact-publisher.js';
import { artifactRun, effects, type EngineContext } from './engine-context.js';
import type { RunTransitions } from './run-transitions.js';
import type { StepRunner } from './step-runner.js';

/** What one pass of the sweep did. */
export interface SweepReport {
  /** Runs whose deadline passed (each reported once). */
  deadlinesMissed: number;
  /** Steps whose job ended without recording them, now failed with the job's reason. */
  reconciled: number;
  /** Runs held because a due step's kind has no handler in any live process. */
  held: number;
  /** Ended runs whose artifacts were published now (their worker did not get to it). */
  published: number;
  /** Runs deleted by retention. */
  pruned: number;
}

/** Options of one pass (the defaults are the production values). */
export interface SweepOptions {
  /** A ready step's job waits unclaimed this long before its kind is checked for a host. Default 10 s. */
  heldAfterMs?: number;
  /** An ended run's artifacts are left this long to the worker that ended it. Default 10 s. */
  publishAfterMs?: number;
}

const BATCH = 100;

/**
 * The pipeline sweep, run by one elected process (the `nightshift:pipelines` daemon) every
 * maintenance interval: deadlines, steps whose job ended without recording them (discarded by the
 * rescuer on its last attempt, cancelled or resolved by hand, gone), due steps nobody can run
 * (held), publication a crash interrupted, and retention. Each action is one transaction that
 * locks the run and checks again what it found, so a sweep racing a worker (or another sweep)
 * never acts twice.
 */
export class PipelineSweep {
  constructor(
    private readonly c: EngineContext,
    private readonly transitions: RunTransitions,
    private readonly runner: StepRunner,
    private readonly publisher: ArtifactPublisher,
  ) {}

  async runOnce(options: SweepOptions = {}): Promise<SweepReport> {
    const report: SweepReport = { deadlinesMissed: 0, reconciled: 0, held: 0, published: 0, pruned: 0 };
    for (const d of await this.c.pipelines.maintenance.deadlinesMissed()) {
      report.deadlinesMissed++;
      this.c.events.emit({ type: 'pipeline.deadline-missed', pipeline: d.pipeline, runId: d.id, deadlineAt: d.deadline_at });
    }
    for (const s of await this.c.pipelines.maintenance.stepsStale({ limit: BATCH })) if (await this.reconcile(s)) report.reconciled++;
    for (const w of await this.c.pipelines.maintenance.stepsWaiting({ graceMs: options.heldAfterMs ?? 10_000, limit: BATCH })) if (await this.holdUnhosted(w)) report.held++;
    for (const id of await this.c.pipelines.maintenance.runsUnpublished({ graceMs: options.publishAfterMs ?? 10_000, limit: BATCH })) {
      if (await this.publisher.publish(id).catch((err: unknown) => this.error(`pipeline artifacts of run ${id}`, err))) report.published++;
    }
    report.pruned = await this.prune();
    return report;
  }

  /** A step waiting on a job that ended without recording it: it fails for good with the job's reason. */
  private async reconcile(s: StaleStepRow): Promise<boolean> {
    if (s.job_id === null) return false;
    const jobId = s.job_id;
    const fx = effects();
    const done = await this.c.database.pool.transaction(async (tx) => {
      const run = await this.c.pipelines.runs.lock({ tx, id: s.run_id });
      if (!run) return false;
      const row = await this.c.pipelines.steps.begin({ runId: s.run_id, step: s.step, item: s.item, db: tx });
      if (!row || row.job_id !== jobId || (row.state !== 'ready' && row.state !== 'running')) return false;
      const job = await this.c.pipelines.maintenance.jobStateLocked({ tx, jobId });
      if (job && ['available', 'running', 'held'].includes(job.state)) return false;
      const message = job ? `its job ${jobId} ended ${job.state} without recording the step${job.reason ? `: ${job.reason}` : ''}` : `its job ${jobId} is gone (deleted) without recording the step`;
      return this.transitions.stepFailed(tx, run, { runId: run.id, step: s.step, item: s.item, jobId }, { message }, fx);
    });
    await this.runner.after(fx);
    return done;
  }

  /**
   * A ready step whose job nobody claims, of a kind this process's code lacks and no live process
   * registers: its job is cancelled (if still unclaimed), the step waits again, the run is held.
   */
  private async holdUnhosted(w: WaitingStepRow): Promise<boolean> {
    if (this.c.definition(w.pipeline)?.steps.some((s) => s.kind === w.kind)) return false;
    if ((await this.c.pipelines.maintenance.kindsHosted({ kinds: [w.kind], liveMs: this.c.liveProcessMs })).has(w.kind)) return false;
    const fx = effects();
    const held = await this.c.database.pool.transaction(async (tx) => {
      const run = await this.c.pipelines.runs.lock({ tx, id: w.run_id });
      if (!run || run.state !== 'running') return false;
      if (!(await this.c.pipelines.maintenance.jobCancelUnclaimed({ tx, jobId: w.job_id, reason: `pipeline run ${run.id} held: no deployed code has step "${w.step}"` }))) return false;
      await this.c.pipelines.steps.unready({ tx, ref: { runId: run.id, step: w.step, item: w.item, jobId: w.job_id } });
      await this.transitions.hold(tx, run, `step "${w.step}" is in run ${run.id}'s graph but no deployed code has it (kind ${w.kind}): deploy it and rerun, or restart from an earlier step`, fx);
      return true;
    });
    await this.runner.after(fx);
    return held;
  }

  /** Deletes ended runs past their pipeline's retention: files first, then rows (cascading to steps, artifacts, follow-ups). */
  private async prune(): Promise<number> {
    let pruned = 0;
    for (const name of this.c.names()) {
      const spec = this.c.definition(name)!;
      if (spec.retentionMs === false) continue;
      for (const id of await this.c.pipelines.maintenance.runsPrunable({ pipeline: name, retentionMs: spec.retentionMs, limit: BATCH })) {
        const run = await this.c.pipelines.runs.get({ id });
        if (!run) continue;
        try {
          const locations = (await this.c.pipelines.artifacts.list({ runId: id, current: null })).map((a) => a.location);
          await this.c.store(spec).remove(artifactRun(run), locations);
        } catch (err) {
          this.error(`pipeline retention of run ${id}`, err);
          continue;
        }
        await this.c.pipelines.runs.remove({ ids: [id] });
        pruned++;
      }
    }
    return pruned;
  }

  private error(where: string, err: unknown): false {
    this.c.events.emit(workerError(where, err));
    return false;
  }
}
