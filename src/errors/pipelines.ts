/** Errors of pipelines: their definitions, runs, steps and artifacts. */
import { NightshiftError } from './base.js';
import { knownHint } from './suggest.js';

/** A pipeline named by an admin action or the CLI is not defined in this client (or config). */
export class UnknownPipelineError extends NightshiftError {
  constructor(name: string, known: readonly string[]) {
    super('NS_UNKNOWN_PIPELINE', `unknown pipeline "${name}"`, {
      hint: knownHint(name, known, 'pipelines', 'define it with definePipeline and pass it to createNightshift({ pipelines }) or defineConfig({ pipelines })', 'defined'),
    });
  }
}

/** No run of the pipeline for that key (or with that id). */
export class PipelineRunNotFoundError extends NightshiftError {
  constructor(pipeline: string, what: string) {
    super('NS_PIPELINE_RUN_NOT_FOUND', `no run of pipeline "${pipeline}" for ${what}`, {
      hint: '`nightshift pipelines list --name <pipeline>` lists its runs; `pipelines start` starts one',
    });
  }
}

/** A pipeline action does not apply to the run's state (rerun of a succeeded run, restart of a running one, …). */
export class PipelineStateError extends NightshiftError {
  constructor(runId: string, action: string, state: string, hint: string) {
    super('NS_PIPELINE_INVALID_STATE', `cannot ${action} pipeline run ${runId}: it is ${state}`, { hint });
  }
}

/** `cleanup` was asked to remove something that is not a finished dry run. */
export class PipelineCleanupRefusedError extends NightshiftError {
  constructor(pipeline: string, why: string) {
    super('NS_PIPELINE_CLEANUP_REFUSED', `cleanup of pipeline "${pipeline}" refused: ${why}`, {
      hint: 'cleanup removes finished dry runs only; a live run is kept (retention prunes it), a running dry run must be cancelled first; nothing was removed',
    });
  }
}

/** A step returned an output larger than the pipeline's `maxOutputBytes`. The step fails for good. */
export class PipelineOutputTooLargeError extends NightshiftError {
  constructor(step: string, bytes: number, limit: number) {
    super('NS_PIPELINE_OUTPUT_TOO_LARGE', `the output of step "${step}" is ${bytes} bytes, over the limit of ${limit} bytes`, {
      hint: 'write large data as an artifact (ctx.artifact) and return its name or checksum, or raise maxOutputBytes in definePipeline',
    });
  }
}

/** A step wrote an artifact whose name another step of the run already wrote. */
export class PipelineArtifactExistsError extends NightshiftError {
  constructor(name: string, step: string) {
    super('NS_PIPELINE_ARTIFACT_EXISTS', `artifact "${name}" of step "${step}" exists already in this run`, {
      hint: 'artifact names are unique within a run (they are files of one directory): put the step or item in the name, e.g. settle-pool-3.json',
    });
  }
}

/** (As a step's `ctx.signal.reason` and in its history) an attempt ran past the step's `timeoutMs`. */
export class PipelineStepTimeoutError extends NightshiftError {
  constructor(step: string, ms: number) {
    super('NS_PIPELINE_STEP_TIMEOUT', `step "${step}" ran past its timeout of ${ms} ms`, {
      hint: 'make the step faster, split it (a map step runs items in parallel), or raise its timeoutMs',
    });
  }
}

/** A fan-out step's `items` did not give a list of distinct, storable items. The step fails for good. */
export class PipelineItemsInvalidError extends NightshiftError {
  constructor(step: string, why: string) {
    super('NS_PIPELINE_ITEMS_INVALID', `the items of map step "${step}" are invalid: ${why}`, {
      hint: 'items must return an array of JSON values (at most maxItems) with distinct itemKey values',
    });
  }
}
