import type { Executor } from '../db/executor.js';
import type { ArtifactRow } from '../db/pipelines-artifacts.js';
import type { PipelineRunState, RunListRow, RunRow } from '../db/pipelines-runs.js';
import type { StepLogRow, StepRow, StepState } from '../db/pipelines-steps.js';
import { OptionsInvalidError, PipelineRunNotFoundError, type Issue } from '../errors.js';
import type { EngineContext } from './engine-context.js';
import { readGraph } from './graph.js';

/** The states of a run. */
export const PIPELINE_RUN_STATES: readonly PipelineRunState[] = ['running', 'succeeded', 'failed', 'cancelled', 'held'];

/** A run, as listed. */
export interface PipelineRun {
  id: string;
  pipeline: string;
  key: string;
  dryRun: boolean;
  state: PipelineRunState;
  generation: number;
  /** Why it failed, was cancelled or is held. */
  reason: string | null;
  error: Record<string, unknown> | null;
  /** Failed optional steps (and items), counted when it ended. */
  warnings: number;
  startedBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  finishedAt: Date | null;
  deadlineAt: Date | null;
  deadlineMissedAt: Date | null;
  artifactsPublishedAt: Date | null;
  /** Steps (not items) that ended, of all. */
  steps: { done: number; total: number };
}

/** One step of a run, with its items when it is a fan-out. */
export interface PipelineStepInfo {
  name: string;
  needs: string[];
  map: boolean;
  optional: false | 'run' | 'skip';
  effect: boolean;
  state: StepState;
  attempts: number;
  jobId: string | null;
  jobState: string | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  durationMs: number | null;
  outputBytes: number | null;
  output: unknown;
  error: Record<string, unknown> | null;
  /** A fan-out's items: how many in each state, and each one. */
  items?: { total: number; byState: Partial<Record<StepState, number>>; list: PipelineItemInfo[] };
}

/** One item of a fan-out step. */
export interface PipelineItemInfo {
  key: string;
  state: StepState;
  attempts: number;
  jobId: string | null;
  jobState: string | null;
  startedAt: Date | null;
  finishedAt: Date | null;
  outputBytes: number | null;
  output: unknown;
  error: Record<string, unknown> | null;
}

/** An artifact of a run. */
export interface PipelineArtifactInfo {
  id: string;
  name: string;
  step: string;
  item: string;
  generation: number;
  current: boolean;
  contentType: string | null;
  sha256: string;
  size: number;
  store: string;
  location: string;
  jobId: string;
  attempt: number;
  createdAt: Date;
  verifiedAt: Date | null;
}

/** A run with everything `show` prints. */
export interface PipelineRunDetail extends PipelineRun {
  input: unknown;
  steps: { done: number; total: number };
  stepList: PipelineStepInfo[];
  artifacts: PipelineArtifactInfo[];
  followUps: { generation: number; name: string; jobId: string | null; error: string | null; createdAt: Date }[];
  /** Rows of earlier generations (restarts). */
  history: {
    generation: number;
    step: string;
    item: string;
    state: string;
    attempts: number;
    jobId: string | null;
    outputBytes: number | null;
    error: Record<string, unknown> | null;
    startedAt: Date | null;
    finishedAt: Date | null;
  }[];
}

/** Filters of {@link PipelineQueries.listRuns}. */
export interface ListRunsOptions {
  pipeline?: string;
  state?: PipelineRunState | PipelineRunState[];
  key?: string;
  dryRun?: boolean;
  /** Page cursor: only runs with a smaller id. */
  beforeId?: string;
  /** Default 50, at most 1000. */
  limit?: number;
}

/** Which run of a key: the live one (default, else the newest dry run), the newest dry run, or one by id. */
export interface RunSelector {
  runId?: string;
  dryRun?: boolean;
}

const ID = /^[1-9][0-9]{0,18}$/;

/** Reads runs for the admin API: listings, one run in full, its logs. */
export class PipelineQueries {
  constructor(protected readonly c: EngineContext) {}

  /** Runs matching the filter, newest first. */
  async listRuns(options: ListRunsOptions = {}): Promise<PipelineRun[]> {
    const issues: Issue[] = [];
    const limit = options.limit ?? 50;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) issues.push({ path: 'limit', message: 'must be an integer from 1 to 1000' });
    const states = options.state === undefined ? null : Array.isArray(options.state) ? options.state : [options.state];
    for (const s of states ?? []) if (!PIPELINE_RUN_STATES.includes(s)) issues.push({ path: 'state', message: `"${String(s)}" is not a run state; states are ${PIPELINE_RUN_STATES.join(', ')}` });
    if (options.beforeId !== undefined && !ID.test(String(options.beforeId))) issues.push({ path: 'beforeId', message: 'must be a run id' });
    if (issues.length) throw new OptionsInvalidError('listRuns options', issues);
    const filter = { pipeline: options.pipeline ?? null, states, key: options.key ?? null, dryRun: options.dryRun ?? null, beforeId: options.beforeId ?? null };
    const rows = await this.c.pipelines.runs.list({ filter, limit });
    return rows.map(toRun);
  }

  /** One run in full: steps with items, attempts, timings, outputs and errors; artifacts; follow-ups; history. */
  async getRun(pipeline: string, key: string, selector: RunSelector = {}): Promise<PipelineRunDetail> {
    return this.detail(await this.find(pipeline, key, selector));
  }

  /** One run by id, in full. */
  async getRunById(id: string): Promise<PipelineRunDetail> {
    if (!ID.test(String(id))) throw new OptionsInvalidError('run id', [{ path: 'id', message: `"${String(id).slice(0, 40)}" is not a run id` }]);
    const run = await this.c.pipelines.runs.get({ id: String(id) });
    if (!run) throw new PipelineRunNotFoundError('?', `id ${id}`);
    return this.detail(run);
  }

  /** One run as listed, by id (after an action). */
  protected async summary(id: string, db?: Executor): Promise<PipelineRun> {
    const [row] = await this.c.pipelines.runs.list({ filter: { pipeline: null, states: null, key: null, dryRun: null, beforeId: null, id }, limit: 1, db });
    if (!row) throw new PipelineRunNotFoundError('?', `id ${id}`);
    return toRun(row);
  }

  /** What the steps of a run logged with `ctx.log`, in time order (bounded). */
  async logs(runId: string, options: { limit?: number } = {}): Promise<StepLogRow[]> {
    if (!ID.test(String(runId))) throw new OptionsInvalidError('run id', [{ path: 'runId', message: 'must be a run id' }]);
    return this.c.pipelines.steps.logs({ runId: String(runId), limit: Math.min(Math.max(1, options.limit ?? 1_000), 10_000) });
  }

  /** The run a selector names; NS_PIPELINE_RUN_NOT_FOUND when there is none. */
  protected async find(pipeline: string, key: string, selector: RunSelector): Promise<RunRow> {
    if (selector.runId !== undefined) {
      if (!ID.test(String(selector.runId))) throw new OptionsInvalidError('run selector', [{ path: 'runId', message: 'must be a run id' }]);
      const run = await this.c.pipelines.runs.get({ id: String(selector.runId) });
      if (!run || run.pipeline !== pipeline || run.key !== key) throw new PipelineRunNotFoundError(pipeline, `key "${key}" with id ${selector.runId}`);
      return run;
    }
    const run = await this.c.pipelines.runs.find({ pipeline, key, dryRun: selector.dryRun ?? null });
    if (!run) throw new PipelineRunNotFoundError(pipeline, `key "${key}"${selector.dryRun ? ' (dry runs)' : ''}`);
    return run;
  }

  private async detail(run: RunRow): Promise<PipelineRunDetail> {
    const [rows, artifacts, followUps, history] = await Promise.all([
      this.c.pipelines.steps.list({ runId: run.id, limit: 20_000 }),
      this.c.pipelines.artifacts.list({ runId: run.id, current: null }),
      this.c.pipelines.maintenance.followUps({ runId: run.id }),
      this.c.pipelines.steps.history({ runId: run.id, limit: 10_000 }),
    ]);
    const graph = readGraph(run.graph);
    const stepsOut: PipelineStepInfo[] = graph.steps.map((g) => {
      const main = rows.find((r) => r.step === g.name && r.item === '');
      const info: PipelineStepInfo = {
        name: g.name,
        needs: [...g.needs],
        map: g.map,
        optional: g.optional,
        effect: g.effect,
        state: main?.state ?? 'blocked',
        attempts: main?.attempts ?? 0,
        jobId: main?.job_id ?? null,
        jobState: main?.job_state ?? null,
        startedAt: main?.started_at ?? null,
        finishedAt: main?.finished_at ?? null,
        durationMs: main?.started_at && main.finished_at ? main.finished_at.getTime() - main.started_at.getTime() : null,
        outputBytes: main?.output_bytes ?? null,
        output: main?.output ?? null,
        error: main?.error ?? null,
      };
      if (g.map) {
        const list = rows.filter((r) => r.step === g.name && r.item !== '').map(toItem);
        const byState: Partial<Record<StepState, number>> = {};
        for (const i of list) byState[i.state] = (byState[i.state] ?? 0) + 1;
        info.items = { total: main?.items ?? list.length, byState, list };
      }
      return info;
    });
    const done = stepsOut.filter((s) => ['succeeded', 'failed', 'skipped', 'cancelled'].includes(s.state)).length;
    return {
      ...toRun({ ...run, steps_total: stepsOut.length, steps_done: done }),
      input: run.input,
      stepList: stepsOut,
      artifacts: artifacts.map(toArtifact),
      followUps: followUps.map((f) => ({ generation: f.generation, name: f.name, jobId: f.job_id, error: f.error, createdAt: f.created_at })),
      history: history.map((h) => ({
        generation: h.generation,
        step: h.step,
        item: h.item,
        state: h.state,
        attempts: h.attempts,
        jobId: h.job_id,
        outputBytes: h.output_bytes,
        error: h.error,
        startedAt: h.started_at,
        finishedAt: h.finished_at,
      })),
    };
  }
}

function toRun(r: RunListRow | (RunRow & { steps_total: number; steps_done: number })): PipelineRun {
  return {
    id: r.id,
    pipeline: r.pipeline,
    key: r.key,
    dryRun: r.dry_run,
    state: r.state,
    generation: r.generation,
    reason: r.reason,
    error: r.error,
    warnings: r.warnings,
    startedBy: r.started_by,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
    deadlineAt: r.deadline_at,
    deadlineMissedAt: r.deadline_missed_at,
    artifactsPublishedAt: r.artifacts_published_at,
    steps: { done: r.steps_done, total: r.steps_total },
  };
}

function toItem(r: StepRow): PipelineItemInfo {
  return {
    key: r.item,
    state: r.state,
    attempts: r.attempts,
    jobId: r.job_id,
    jobState: r.job_state ?? null,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    outputBytes: r.output_bytes,
    output: r.output,
    error: r.error,
  };
}

function toArtifact(a: ArtifactRow): PipelineArtifactInfo {
  return {
    id: a.id,
    name: a.name,
    step: a.step,
    item: a.item,
    generation: a.generation,
    current: a.current,
    contentType: a.content_type,
    sha256: a.sha256,
    size: Number(a.size_bytes),
    store: a.store,
    location: a.location,
    jobId: a.job_id,
    attempt: a.attempt,
    createdAt: a.created_at,
    verifiedAt: a.verified_at,
  };
}
