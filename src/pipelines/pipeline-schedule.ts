import { z } from 'zod';
import { ConfigError, unknownKey, UnknownPipelineError } from '../errors.js';
import { defineJob, type JobDefinition } from '../jobs/define-job.js';
import { defineSchedule, type CatchUp, type Overlap, type ScheduleDefinition, type ScheduleTick } from '../schedules/define-schedule.js';

/** The payload of a pipeline's starter job: the run's key and input, and who asked. */
export const STARTER_PAYLOAD = z.object({ key: z.string(), input: z.unknown().optional(), by: z.string().optional() });

/** The payload of a step job: which run, step and item it records. */
export const STEP_PAYLOAD = z.object({ run: z.string().regex(/^[1-9][0-9]{0,18}$/), step: z.string(), item: z.string() });

/** The kind of a pipeline's starter job. */
export function starterKind(pipeline: string): string {
  return `pipeline:${pipeline}`;
}

/**
 * The starter job as a schedule refers to it. Its handler here is a stand-in: a client that has
 * the pipeline runs its own (which starts the run); a worker of a client without the pipeline
 * never claims the kind.
 */
export function starterJob(pipeline: string, queue: string): JobDefinition {
  return defineJob({
    kind: starterKind(pipeline),
    payload: STARTER_PAYLOAD,
    queue,
    run: () => {
      throw new UnknownPipelineError(pipeline, []);
    },
  });
}

/** The options of `pipeline.schedule(...)`: a schedule's timing and policies, and the run's key (and input) from the tick. */
export interface PipelineScheduleOptions<K = string, I = unknown> {
  /** The schedule's name. */
  name: string;
  cron?: string;
  every?: number | string;
  tz?: string;
  /** The run's key from the tick (00:00 UTC → yesterday's day id). */
  key: (tick: ScheduleTick) => K | Promise<K>;
  /** The run's input from the tick. Default none. */
  input?: (tick: ScheduleTick) => I | Promise<I>;
  /** Missed ticks after downtime. Default `'latest'` (the schedules' default); `{ all: true, window }` settles every missed one. */
  catchUp?: CatchUp;
  /**
   * Default `'allow'`: the starter job ends as soon as its run has started, so "the previous job"
   * of a tick is only ever a starter; `'skip'` would drop all but the first of several missed
   * ticks caught up in one pass.
   */
  overlap?: Overlap;
  graceMs?: number | string;
}

const KEYS = ['name', 'cron', 'every', 'tz', 'key', 'input', 'catchUp', 'overlap', 'graceMs'];

/** A schedule whose ticks enqueue the pipeline's starter with the key (and input) built from each tick. */
export function pipelineSchedule(spec: { name: string; starter: JobDefinition }, options: PipelineScheduleOptions<string, unknown>): ScheduleDefinition {
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  const issues = Object.keys(o)
    .filter((k) => !KEYS.includes(k))
    .map((k) => unknownKey(k, KEYS));
  if (typeof o.key !== 'function') issues.push({ path: 'key', message: 'must be a function (tick) => key, e.g. ({ at }) => dayId(at)' });
  if (o.input !== undefined && typeof o.input !== 'function') issues.push({ path: 'input', message: 'must be a function (tick) => input' });
  if (issues.length) throw new ConfigError(`schedule of pipeline "${spec.name}"`, issues);
  const key = options.key;
  const input = options.input;
  const by = `schedule:${String(options.name)}`;
  return defineSchedule({
    name: options.name,
    ...(options.cron !== undefined ? { cron: options.cron } : {}),
    ...(options.every !== undefined ? { every: options.every } : {}),
    ...(options.tz !== undefined ? { tz: options.tz } : {}),
    ...(options.catchUp !== undefined ? { catchUp: options.catchUp } : {}),
    ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}),
    overlap: options.overlap ?? 'allow',
    job: spec.starter as JobDefinition<typeof STARTER_PAYLOAD>,
    payload: async (tick) => ({ key: await key(tick), ...(input ? { input: await input(tick) } : {}), by }),
  });
}
