import type { Database } from '../db/database.js';
import { DuplicateKindError, OptionsInvalidError } from '../errors.js';
import { defineJob, type JobDefinition } from '../jobs/define-job.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import { discard } from '../jobs/job-control.js';
import { defineDaemon, type DaemonDefinition } from '../leadership/define-daemon.js';
import type { EventBus } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import { ArtifactPublisher } from './artifact-publisher.js';
import type { ArtifactStore } from './artifact-store.js';
import { DatabaseArtifactStore } from './database-store.js';
import type { PipelineLike, PipelineSpec } from './define-pipeline.js';
import type { EngineContext } from './engine-context.js';
import { PipelineAdmin } from './pipeline-admin.js';
import { STARTER_PAYLOAD, STEP_PAYLOAD } from './pipeline-schedule.js';
import { PipelineSweep } from './pipeline-sweep.js';
import { RunTransitions } from './run-transitions.js';
import { StepRunner } from './step-runner.js';

/** The name of the sweep daemon (its lease: `daemon:nightshift:pipelines`). */
export const PIPELINE_SWEEP_DAEMON = 'nightshift:pipelines';

/** What an engine needs from its client. */
export interface PipelineEngineOptions {
  database: Database;
  events: EventBus;
  logger: Logger;
  pipelines: readonly PipelineLike[];
  actor: string;
  /** How often the sweep runs on its elected process, in ms. */
  sweepEveryMs: number;
  /** A process seen longer ago than this is not counted as hosting a step's kind. */
  liveProcessMs: number;
  errorMessages: boolean;
}

/**
 * The pipelines of one client: the job definitions of their step and starter kinds (bound to this
 * client's database), the admin API, and the sweep daemon. Built before the client's registry,
 * which takes its jobs; the client hands it its enqueuer once built.
 */
export class PipelineEngine {
  readonly jobs: JobDefinition[] = [];
  readonly admin: PipelineAdmin;
  private readonly specs = new Map<string, PipelineSpec>();
  private readonly byKind = new Map<string, JobDefinition>();
  private readonly stores = new Map<PipelineSpec, ArtifactStore>();
  private enqueuer_: Enqueuer | undefined;
  private readonly sweeper: PipelineSweep;
  private readonly sweepEveryMs: number;
  private readonly c: EngineContext;

  constructor(o: PipelineEngineOptions) {
    for (const p of o.pipelines) {
      const existing = this.specs.get(p.name);
      if (existing && existing !== p.spec) {
        throw new OptionsInvalidError('pipelines', [{ path: 'pipelines', message: `two pipelines are named "${p.name}"` }]);
      }
      this.specs.set(p.name, p.spec);
    }
    const database = o.database;
    const c: EngineContext = {
      database,
      pipelines: database.pipelines,
      events: o.events,
      logger: o.logger,
      enqueuer: () => {
        if (!this.enqueuer_) throw new Error('pipeline engine used before its client attached an enqueuer');
        return this.enqueuer_;
      },
      definition: (name) => this.specs.get(name),
      names: () => [...this.specs.keys()],
      store: (spec) => this.store(spec),
      job: (kind) => this.byKind.get(kind),
      liveProcessMs: o.liveProcessMs,
      errorMessages: o.errorMessages,
    };
    this.c = c;
    const transitions = new RunTransitions(c);
    const publisher = new ArtifactPublisher(c);
    const runner = new StepRunner(c, transitions, publisher);
    this.sweeper = new PipelineSweep(c, transitions, runner, publisher);
    this.admin = new PipelineAdmin(c, transitions, publisher, runner, this.sweeper, o.actor);
    this.sweepEveryMs = o.sweepEveryMs;
    for (const spec of this.specs.values()) {
      // The step jobs (and their logs) are kept as long as the runs.
      const keep = spec.retentionMs;
      const retention = { completed: keep, discarded: keep, cancelled: keep, expired: keep };
      const kinds = [
        defineJob({
          kind: spec.starter.kind,
          payload: STARTER_PAYLOAD,
          queue: spec.queue,
          maxAttempts: 5,
          retention,
          run: async (p, ctx) => {
            try {
              await ctx.transaction((tx) => this.admin.startFromStarter(spec, p, tx));
            } catch (err) {
              // A key or input the pipeline refuses would be refused on every attempt. The reason
              // (logged) names the fields, not their values: a key is business data.
              if (err instanceof OptionsInvalidError) return discard(`the pipeline refused this start: invalid ${err.issues.map((i) => i.path).join(', ')} (NS_OPTIONS_INVALID)`);
              throw err;
            }
            return undefined;
          },
        }),
        ...spec.steps.map((step) =>
          defineJob({
            kind: step.kind,
            payload: STEP_PAYLOAD,
            queue: step.queue,
            retention,
            ...(step.maxAttempts !== undefined ? { maxAttempts: step.maxAttempts } : {}),
            ...(step.backoff !== undefined ? { backoff: step.backoff } : {}),
            run: (p, ctx) => runner.run(spec, step, p, ctx),
          }),
        ),
      ];
      for (const job of kinds) {
        if (this.byKind.has(job.kind)) throw new DuplicateKindError(job.kind);
        this.byKind.set(job.kind, job);
        this.jobs.push(job);
      }
    }
  }

  /** Whether this client defines any pipeline. */
  get size(): number {
    return this.specs.size;
  }

  /** Every kind of this client's pipelines (steps and starters). */
  kinds(): string[] {
    return [...this.byKind.keys()];
  }

  /** Gives the engine the client's enqueuer (step jobs and follow-ups are enqueued through it). */
  attach(enqueuer: Enqueuer): void {
    this.enqueuer_ = enqueuer;
  }

  /** The sweep as an elected daemon: one process of those hosting pipeline steps runs it. */
  daemon(): DaemonDefinition {
    return defineDaemon({
      name: PIPELINE_SWEEP_DAEMON,
      everyMs: this.sweepEveryMs,
      run: async () => {
        await this.sweeper.runOnce();
      },
    });
  }

  private store(spec: PipelineSpec): ArtifactStore {
    let store = this.stores.get(spec);
    if (!store) {
      store = spec.store === 'database' ? new DatabaseArtifactStore(this.c.pipelines.artifacts) : spec.store;
      this.stores.set(spec, store);
    }
    return store;
  }
}
