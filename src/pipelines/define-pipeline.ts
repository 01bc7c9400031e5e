import type { Executor } from '../db/executor.js';
import { ConfigError, unknownKey, type Issue } from '../errors.js';
import { defineJob, type JobDefinition } from '../jobs/define-job.js';
import { nameProblem } from '../jobs/names.js';
import type { Backoff } from '../jobs/retry-policy.js';
import { isPayloadSchema, type PayloadSchema, type SchemaInput, type SchemaOutput } from '../jobs/standard-schema.js';
import type { ScheduleDefinition } from '../schedules/define-schedule.js';
import { parseDuration } from '../schedules/duration.js';
import { isArtifactStore, type ArtifactStore } from './artifact-store.js';
import { directoryStore } from './directory-store.js';
import type { FrozenGraph, OptionalMode } from './graph.js';
import { pipelineSchedule, starterJob, type PipelineScheduleOptions } from './pipeline-schedule.js';
import type { ItemOk, ItemResult, StepContext, StepResult } from './step-context.js';

/** Pipeline and step names: 1 to 60 letters, digits, _ . - (they are part of job kinds). */
const NAME = /^[A-Za-z0-9_.-]{1,60}$/;
const KEY = /^[A-Za-z0-9_:=@+-][A-Za-z0-9_.:=@+-]{0,199}$/;

/** What is wrong with a run key, or undefined. Keys name a run's artifact directory. */
export function keyProblem(key: unknown): string | undefined {
  if (typeof key !== 'string') return `must be a string, got ${typeof key}`;
  if (!KEY.test(key)) return `"${key.slice(0, 60)}" is not allowed: 1 to 200 letters, digits and _ . : = @ + -, not starting with "."`;
  return undefined;
}

/** Settings of a step's job kind. */
export interface StepSettings {
  /** The step job's queue. Default: the pipeline's. */
  queue?: string;
  /** Attempts before the step fails for good, 1 to 1000. Default: the pipeline's, else 10. */
  maxAttempts?: number;
  /** Delay between attempts. Default: the pipeline's, else the job core's. */
  backoff?: Backoff;
  /** Aborts an attempt after this long (the attempt fails). Default: the pipeline's, else none. */
  timeoutMs?: number;
}

/** Options of a step. `D` are the names of the steps it needs. */
export interface StepOptions<D extends string = string> extends StepSettings {
  /** The steps whose outputs it receives, and waits for. Default none. */
  needs?: readonly D[];
  /**
   * Default `false` (a failure fails the run). `true`: a failure is a warning the run carries, and
   * dependents run and receive `{ ok: false, error }`. `'skip-dependents'`: a warning, and the
   * steps that need it are skipped.
   */
  optional?: boolean | 'skip-dependents';
  /** The step acts outside nightshift: in a dry run it is skipped, with the steps that need it. Default false. */
  effect?: boolean;
}

/** Options of a fan-out step: one job per item of `items`. */
export interface MapOptions<D extends string, N, T> extends StepOptions<D> {
  /** The items, from the needed steps' outputs; computed once when the step starts, and persisted. */
  items: (needs: N) => readonly T[] | Promise<readonly T[]>;
  /** Each item's key, unique within the step. Default: its index. */
  itemKey?: (item: T, index: number) => string;
}

/** A run as a follow-up's payload function sees it. */
export interface FinishedRun<K = string, I = unknown, O = Record<string, unknown>> {
  readonly runId: string;
  readonly pipeline: string;
  readonly key: K;
  readonly input: I;
  readonly state: 'succeeded' | 'failed';
  readonly reason: string | null;
  readonly warnings: number;
  readonly generation: number;
  /** The outputs of the run's succeeded steps (not fan-outs), as stored. */
  readonly outputs: Partial<O>;
}

/** A dry run as the cleanup hook sees it. */
export interface CleanupRun<K = string, I = unknown> {
  readonly runId: string;
  readonly pipeline: string;
  readonly key: K;
  readonly input: I;
}

/** The options of {@link definePipeline}. */
export interface PipelineOptions<KS extends PayloadSchema | undefined = undefined, IS extends PayloadSchema | undefined = undefined> extends StepSettings {
  /** The pipeline's stable name: 1 to 60 letters, digits, _ . - */
  name: string;
  /** A Standard Schema for the key (its output a string). Default: any key string. */
  key?: KS;
  /** A Standard Schema for the run's input. Default: no input. */
  input?: IS;
  /** A run not finished this long after it started raises `pipeline.deadline-missed` (ms or `'6h'`). Default none. */
  deadline?: number | string;
  /** How long finished runs are kept (ms or `'30d'`), or false. Default 30 days. */
  retention?: number | string | false;
  /** Largest step output, in bytes of JSON. Default 262 144. */
  maxOutputBytes?: number;
  /** Most items of a fan-out step. Default 10 000. */
  maxItems?: number;
  /** Where artifacts go: a store, or `'database'`. Default `directoryStore()`. */
  store?: ArtifactStore | 'database';
}

/** A step as the runtime keeps it. */
export interface StepSpec {
  readonly name: string;
  readonly kind: string;
  readonly needs: readonly string[];
  readonly map: boolean;
  readonly optional: OptionalMode;
  readonly effect: boolean;
  readonly queue: string;
  readonly maxAttempts: number | undefined;
  readonly backoff: Backoff | undefined;
  readonly timeoutMs: number | undefined;
  readonly run: (ctx: StepContext<string, unknown, Record<string, unknown>>, item: unknown) => unknown;
  readonly items: ((needs: Record<string, unknown>) => unknown) | undefined;
  readonly itemKey: ((item: unknown, index: number) => string) | undefined;
}

/** A follow-up as the runtime keeps it. */
export interface FollowUpSpec {
  readonly on: 'success' | 'failure';
  readonly job: JobDefinition | string;
  readonly name: string;
  readonly payload: ((run: FinishedRun) => unknown) | undefined;
}

/** A pipeline as the runtime keeps it. */
export interface PipelineSpec {
  readonly name: string;
  readonly keySchema: PayloadSchema | undefined;
  readonly inputSchema: PayloadSchema | undefined;
  readonly queue: string;
  readonly settings: StepSettings;
  readonly deadlineMs: number | undefined;
  readonly retentionMs: number | false;
  readonly maxOutputBytes: number;
  readonly maxItems: number;
  readonly store: ArtifactStore | 'database';
  readonly steps: readonly StepSpec[];
  readonly followUps: readonly FollowUpSpec[];
  readonly cleanup: ((run: CleanupRun, tx: Executor) => Promise<void> | void) | undefined;
  /** The starter job kind (`pipeline:<name>`), which schedules enqueue. */
  readonly starter: JobDefinition;
}

type Out<O, N extends string, V> = O & { readonly [P in N]: V };
type NeedsOf<O, D extends keyof O> = { readonly [P in D]: O[P] };
type Handler<K, I, N, R> = (ctx: StepContext<K, I, N>) => R | Promise<R>;
type ItemHandler<K, I, N, T, R> = (ctx: StepContext<K, I, N>, item: T) => R | Promise<R>;

/**
 * A pipeline: a graph of steps built one call at a time, each call returning a new definition
 * whose types know every step so far. `K` is the key's type, `I` the input's, `O` what each step
 * gives the steps that need it.
 */
export interface PipelineDefinition<K extends string = string, I = unknown, O = Record<never, never>> {
  readonly name: string;
  /** The runtime's view (steps, settings, follow-ups); not for application code. */
  readonly spec: PipelineSpec;
  /** A step that needs nothing. */
  step<N extends string, R>(name: N, run: Handler<K, I, Record<never, never>, R>): PipelineDefinition<K, I, Out<O, N, Awaited<R>>>;
  /** An optional step: dependents receive `{ ok, value | error }`. */
  step<N extends string, R, D extends keyof O & string = never>(
    name: N,
    options: StepOptions<D> & { optional: true },
    run: Handler<K, I, NeedsOf<O, D>, R>,
  ): PipelineDefinition<K, I, Out<O, N, StepResult<Awaited<R>>>>;
  /** A step with options (fatal, or optional with `'skip-dependents'`). */
  step<N extends string, R, D extends keyof O & string = never>(name: N, options: StepOptions<D>, run: Handler<K, I, NeedsOf<O, D>, R>): PipelineDefinition<K, I, Out<O, N, Awaited<R>>>;
  /** An optional fan-out: its fan-in receives every item's result, failed ones included. */
  map<N extends string, T, R, D extends keyof O & string = never>(
    name: N,
    options: MapOptions<D, NeedsOf<O, D>, T> & { optional: true },
    run: ItemHandler<K, I, NeedsOf<O, D>, T, R>,
  ): PipelineDefinition<K, I, Out<O, N, ItemResult<Awaited<R>>[]>>;
  /** A fan-out: one job per item, each with its own key, retries and outcome. */
  map<N extends string, T, R, D extends keyof O & string = never>(
    name: N,
    options: MapOptions<D, NeedsOf<O, D>, T>,
    run: ItemHandler<K, I, NeedsOf<O, D>, T, R>,
  ): PipelineDefinition<K, I, Out<O, N, ItemOk<Awaited<R>>[]>>;
  /** Enqueues `job` when a run succeeds, once per run and generation (not for dry runs). */
  onSuccess<S extends PayloadSchema>(job: JobDefinition<S> | string, payload?: (run: FinishedRun<K, I, O>) => SchemaInput<S>): PipelineDefinition<K, I, O>;
  /** Enqueues `job` when a run fails, once per run and generation (not for dry runs). */
  onFailure<S extends PayloadSchema>(job: JobDefinition<S> | string, payload?: (run: FinishedRun<K, I, O>) => SchemaInput<S>): PipelineDefinition<K, I, O>;
  /** Removes your rows of a dry run when it is cleaned up, in the same transaction as its deletion. */
  cleanup(fn: (run: CleanupRun<K, I>, tx: Executor) => Promise<void> | void): PipelineDefinition<K, I, O>;
  /** A schedule whose every tick starts a run with a key built from the tick. */
  schedule(options: PipelineScheduleOptions<K, I>): ScheduleDefinition;
}

const PIPELINE_KEYS = ['name', 'key', 'input', 'queue', 'maxAttempts', 'backoff', 'timeoutMs', 'deadline', 'retention', 'maxOutputBytes', 'maxItems', 'store'];
const STEP_KEYS = ['needs', 'optional', 'effect', 'queue', 'maxAttempts', 'backoff', 'timeoutMs'];
const MAP_KEYS = [...STEP_KEYS, 'items', 'itemKey'];
const DAY_MS = 86_400_000;

function isInt(v: unknown, min: number, max: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}

/**
 * Defines a pipeline: its name, key and input schemas and settings; add steps with `.step` and
 * `.map`, follow-ups with `.onSuccess` and `.onFailure`, a cleanup hook with `.cleanup`. Every call
 * checks what it is given and throws NS_CONFIG_INVALID listing every problem.
 */
export function definePipeline<KS extends PayloadSchema | undefined = undefined, IS extends PayloadSchema | undefined = undefined>(
  options: PipelineOptions<KS, IS>,
): PipelineDefinition<KS extends PayloadSchema ? Extract<SchemaOutput<KS>, string> : string, IS extends PayloadSchema ? SchemaOutput<IS> : undefined> {
  const issues: Issue[] = [];
  if (typeof options !== 'object' || options === null) throw new ConfigError('pipeline definition', [{ path: '', message: 'pass an object: definePipeline({ name, … })' }]);
  const o = options as unknown as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!PIPELINE_KEYS.includes(k)) issues.push(unknownKey(k, PIPELINE_KEYS));
  const name = o.name;
  if (typeof name !== 'string' || !NAME.test(name)) issues.push({ path: 'name', message: `${JSON.stringify(name)} is not allowed: 1 to 60 letters, digits, _ . -` });
  for (const field of ['key', 'input'] as const) {
    if (o[field] !== undefined && !isPayloadSchema(o[field])) issues.push({ path: field, message: 'must be a Standard Schema such as z.string() from zod 4' });
  }
  const queue = o.queue ?? 'default';
  const queueIssue = nameProblem(queue);
  if (queueIssue) issues.push({ path: 'queue', message: queueIssue });
  const settings = stepSettings(o, '', issues);
  const deadlineMs = duration(o.deadline, 'deadline', issues, 1_000);
  let retentionMs: number | false = 30 * DAY_MS;
  if (o.retention === false) retentionMs = false;
  else if (o.retention !== undefined) retentionMs = duration(o.retention, 'retention', issues, 0) ?? retentionMs;
  if (o.maxOutputBytes !== undefined && !isInt(o.maxOutputBytes, 1, 64 * 1_048_576)) issues.push({ path: 'maxOutputBytes', message: 'must be an integer from 1 to 67108864' });
  if (o.maxItems !== undefined && !isInt(o.maxItems, 1, 1_000_000)) issues.push({ path: 'maxItems', message: 'must be an integer from 1 to 1000000' });
  if (o.store !== undefined && o.store !== 'database' && !isArtifactStore(o.store)) {
    issues.push({ path: 'store', message: "must be an artifact store (directoryStore(...), or an object with kind, stage, publish, read, archive, remove) or 'database'" });
  }
  const label = typeof name === 'string' ? `pipeline "${name}"` : 'pipeline definition';
  if (issues.length) throw new ConfigError(label, issues);
  const spec: PipelineSpec = Object.freeze({
    name: name as string,
    keySchema: options.key,
    inputSchema: options.input,
    queue: queue as string,
    settings,
    deadlineMs,
    retentionMs,
    maxOutputBytes: options.maxOutputBytes ?? 262_144,
    maxItems: options.maxItems ?? 10_000,
    store: options.store ?? directoryStore(),
    steps: Object.freeze([]),
    followUps: Object.freeze([]),
    cleanup: undefined,
    starter: starterJob(name as string, queue as string),
  });
  return new Pipeline(spec) as never;
}

function duration(value: unknown, path: string, issues: Issue[], min: number): number | undefined {
  if (value === undefined) return undefined;
  const d = parseDuration(value);
  if ('problem' in d) issues.push({ path, message: d.problem });
  else if (d.ms < min || d.ms > 100 * 365 * DAY_MS) issues.push({ path, message: `must be from ${min} ms to 100 years` });
  else return d.ms;
  return undefined;
}

/** Checks the kind-level settings of a pipeline or step through the job core's own rules. */
function stepSettings(o: Record<string, unknown>, prefix: string, issues: Issue[]): StepSettings {
  if (o.timeoutMs !== undefined && !isInt(o.timeoutMs, 1, 2_147_483_647)) issues.push({ path: `${prefix}timeoutMs`, message: 'must be a positive integer number of milliseconds' });
  const picked = {
    ...(o.maxAttempts !== undefined ? { maxAttempts: o.maxAttempts as number } : {}),
    ...(o.backoff !== undefined ? { backoff: o.backoff as Backoff } : {}),
  };
  try {
    defineJob({ kind: 'pipeline.settings', payload: { '~standard': { version: 1, vendor: 'nightshift', validate: (value: unknown) => ({ value }) } }, run: () => undefined, ...picked });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const i of err.issues) issues.push({ path: `${prefix}${i.path}`, message: i.message });
  }
  return Object.freeze({ ...picked, ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs as number } : {}) });
}

/** The immutable builder: each call returns a new Pipeline with the step added. */
class Pipeline {
  constructor(readonly spec: PipelineSpec) {}

  get name(): string {
    return this.spec.name;
  }

  step(name: string, a: unknown, b?: unknown): Pipeline {
    return typeof a === 'function' ? this.add(name, {}, a, false) : this.add(name, a, b, false);
  }

  map(name: string, options: unknown, run: unknown): Pipeline {
    return this.add(name, options, run, true);
  }

  onSuccess(job: JobDefinition | string, payload?: (run: FinishedRun) => unknown): Pipeline {
    return this.followUp('success', job, payload);
  }

  onFailure(job: JobDefinition | string, payload?: (run: FinishedRun) => unknown): Pipeline {
    return this.followUp('failure', job, payload);
  }

  cleanup(fn: (run: CleanupRun, tx: Executor) => Promise<void> | void): Pipeline {
    if (typeof fn !== 'function') throw new ConfigError(`pipeline "${this.name}"`, [{ path: 'cleanup', message: 'must be a function (run, tx) => …' }]);
    return new Pipeline(Object.freeze({ ...this.spec, cleanup: fn }));
  }

  schedule(options: PipelineScheduleOptions<string, unknown>): ScheduleDefinition {
    return pipelineSchedule(this.spec, options);
  }

  private followUp(on: 'success' | 'failure', job: JobDefinition | string, payload: ((run: FinishedRun) => unknown) | undefined): Pipeline {
    const issues: Issue[] = [];
    const kind = typeof job === 'string' ? job : (job as JobDefinition | null)?.kind;
    const p = nameProblem(kind);
    if (p) issues.push({ path: `on${on === 'success' ? 'Success' : 'Failure'}.job`, message: `must be a job from defineJob or its kind (${p})` });
    if (payload !== undefined && typeof payload !== 'function') issues.push({ path: `on${on === 'success' ? 'Success' : 'Failure'}.payload`, message: 'must be a function (run) => payload' });
    const followName = `${on}:${String(kind)}`;
    if (this.spec.followUps.some((f) => f.name === followName)) issues.push({ path: `on${on === 'success' ? 'Success' : 'Failure'}.job`, message: `job "${String(kind)}" is a ${on} follow-up already` });
    if (issues.length) throw new ConfigError(`pipeline "${this.name}"`, issues);
    const f: FollowUpSpec = Object.freeze({ on, job, name: followName, payload });
    return new Pipeline(Object.freeze({ ...this.spec, followUps: Object.freeze([...this.spec.followUps, f]) }));
  }

  private add(name: string, options: unknown, run: unknown, map: boolean): Pipeline {
    const issues: Issue[] = [];
    const where = `steps.${String(name)}.`;
    if (typeof name !== 'string' || !NAME.test(name)) issues.push({ path: 'steps', message: `step name ${JSON.stringify(name)} is not allowed: 1 to 60 letters, digits, _ . -` });
    else if (this.spec.steps.some((s) => s.name === name)) issues.push({ path: `steps.${name}`, message: 'a step of this name exists already' });
    const kind = `pipeline:${this.name}:${String(name)}`;
    if (typeof name === 'string' && NAME.test(name) && nameProblem(kind))
      issues.push({ path: `steps.${name}`, message: `the step's job kind "${kind}" is longer than 128 characters: shorten the pipeline or step name` });
    if (typeof run !== 'function') issues.push({ path: `${where}run`, message: map ? 'must be a function (ctx, item) => output' : 'must be a function (ctx) => output' });
    const o = (typeof options === 'object' && options !== null ? options : {}) as Record<string, unknown>;
    if (typeof options !== 'object' || options === null) issues.push({ path: `${where}options`, message: 'must be an object' });
    const keys = map ? MAP_KEYS : STEP_KEYS;
    for (const k of Object.keys(o))
      if (!keys.includes(k))
        issues.push(
          unknownKey(
            `${where}${k}`,
            keys.map((x) => `${where}${x}`),
          ),
        );
    const needs = o.needs ?? [];
    if (!Array.isArray(needs)) issues.push({ path: `${where}needs`, message: 'must be an array of earlier steps' });
    else {
      const known = this.spec.steps.map((s) => s.name);
      needs.forEach((n, i) => {
        if (typeof n !== 'string' || !known.includes(n))
          issues.push({ path: `${where}needs.${i}`, message: `${JSON.stringify(n)} is not an earlier step${known.length ? ` (earlier steps: ${known.join(', ')})` : ''}` });
      });
      if (new Set(needs).size !== needs.length) issues.push({ path: `${where}needs`, message: 'names a step twice' });
    }
    if (o.optional !== undefined && o.optional !== true && o.optional !== false && o.optional !== 'skip-dependents')
      issues.push({ path: `${where}optional`, message: "must be true, false or 'skip-dependents'" });
    if (o.effect !== undefined && typeof o.effect !== 'boolean') issues.push({ path: `${where}effect`, message: 'must be true or false' });
    if (o.queue !== undefined && nameProblem(o.queue)) issues.push({ path: `${where}queue`, message: nameProblem(o.queue)! });
    const settings = stepSettings(o, where, issues);
    if (map) {
      if (typeof o.items !== 'function') issues.push({ path: `${where}items`, message: 'must be a function (needs) => items[]' });
      if (o.itemKey !== undefined && typeof o.itemKey !== 'function') issues.push({ path: `${where}itemKey`, message: 'must be a function (item, index) => string' });
    }
    if (issues.length) throw new ConfigError(`pipeline "${this.name}"`, issues);
    const base = this.spec.settings;
    const step: StepSpec = Object.freeze({
      name,
      kind,
      needs: Object.freeze([...(needs as string[])]),
      map,
      optional: o.optional === true ? 'run' : o.optional === 'skip-dependents' ? 'skip' : false,
      effect: o.effect === true,
      queue: (o.queue as string | undefined) ?? this.spec.queue,
      maxAttempts: settings.maxAttempts ?? base.maxAttempts,
      backoff: settings.backoff ?? base.backoff,
      timeoutMs: settings.timeoutMs ?? base.timeoutMs,
      run: run as StepSpec['run'],
      items: map ? (o.items as StepSpec['items']) : undefined,
      itemKey: map ? (o.itemKey as StepSpec['itemKey']) : undefined,
    });
    return new Pipeline(Object.freeze({ ...this.spec, steps: Object.freeze([...this.spec.steps, step]) }));
  }
}

/** Any pipeline, whatever its key, input and steps: what a client or a config lists. */
export interface PipelineLike {
  readonly name: string;
  readonly spec: PipelineSpec;
}

/** Whether a value is a pipeline made by {@link definePipeline}. */
export function isPipelineDefinition(value: unknown): value is PipelineLike {
  return (
    value instanceof Pipeline ||
    (typeof value === 'object' && value !== null && typeof (value as { spec?: { starter?: unknown } }).spec?.starter === 'object' && typeof (value as { step?: unknown }).step === 'function')
  );
}

/** The graph a run of this pipeline freezes when it starts. */
export function graphOf(spec: PipelineSpec): FrozenGraph {
  return { version: 1, steps: spec.steps.map((s) => ({ name: s.name, needs: [...s.needs], map: s.map, optional: s.optional, effect: s.effect })) };
}
