import type { Database, PipelineTableQueries } from '../db/database.js';
import type { RunRow } from '../db/pipelines-runs.js';
import type { JobDefinition } from '../jobs/define-job.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import type { EventBus, NightshiftEvent } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import type { ArtifactRun, ArtifactStore } from './artifact-store.js';
import type { PipelineSpec } from './define-pipeline.js';

/** What the parts of the pipeline runtime share: one per client. */
export interface EngineContext {
  readonly database: Database;
  /** The pipeline tables' statements of the database (`database.pipelines`). */
  readonly pipelines: PipelineTableQueries;
  readonly events: EventBus;
  readonly logger: Logger;
  /** The client's enqueuer (set once the client has built it). */
  enqueuer(): Enqueuer;
  /** This client's definition of a pipeline, if it has one. */
  definition(name: string): PipelineSpec | undefined;
  /** The names of the pipelines this client defines. */
  names(): string[];
  /** The store of a pipeline. */
  store(spec: PipelineSpec): ArtifactStore;
  /** This client's job definition of a step kind (or starter kind), if it has one. */
  job(kind: string): JobDefinition | undefined;
  /** How recently a process must have been seen to count as live (held detection). */
  readonly liveProcessMs: number;
  /** Put error messages in logs and spans. */
  readonly errorMessages: boolean;
}

/** What a transaction decided that is acted on after it commits: events to emit, runs to publish. */
export interface Effects {
  events: NightshiftEvent[];
  finished: Set<string>;
}

/** An empty set of effects. */
export function effects(): Effects {
  return { events: [], finished: new Set() };
}

/** A run as its store sees it. */
export function artifactRun(run: Pick<RunRow, 'pipeline' | 'key' | 'id' | 'dry_run' | 'generation'>): ArtifactRun {
  return { pipeline: run.pipeline, key: run.key, runId: run.id, dryRun: run.dry_run, generation: run.generation };
}
