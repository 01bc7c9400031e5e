import type { Executor } from '../db/executor.js';
import type { ArtifactInsert } from '../db/pipelines-artifacts.js';
import { OptionsInvalidError, PipelineArtifactExistsError, PipelineStepTimeoutError } from '../errors.js';
import type { JobContext, JobLogger } from '../jobs/define-job.js';
import { toJson } from '../jobs/payload.js';
import type { ArtifactStore } from './artifact-store.js';
import { MANIFEST, sha256 } from './directory-store.js';
import type { ArtifactContent, ArtifactInfo, ArtifactOptions, StepContext } from './step-context.js';

const ARTIFACT_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.=+-]{0,199}$/;

/** Where an attempt runs: its run, step and item. */
export interface AttemptPlace {
  pipeline: string;
  runId: string;
  key: string;
  input: unknown;
  generation: number;
  dryRun: boolean;
  step: string;
  item: string;
  needs: Record<string, unknown>;
  timeoutMs: number | undefined;
}

/**
 * One attempt of a step: the context its handler gets, the artifacts it staged, and its timeout.
 * Once the attempt is over (`close`), a handler still running — one that ignored its signal —
 * can no longer write an artifact.
 */
export class StepAttempt {
  readonly staged: ArtifactInsert[] = [];
  private closed = false;
  private readonly timeout = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  readonly signal: AbortSignal;
  readonly context: StepContext<string, unknown, Record<string, unknown>>;

  constructor(
    private readonly place: AttemptPlace,
    private readonly job: JobContext,
    private readonly store: ArtifactStore,
  ) {
    this.signal = AbortSignal.any([job.signal, this.timeout.signal]);
    const p = place;
    const log = fieldsLogger(job.log, { pipeline: p.pipeline, runId: p.runId, step: p.step });
    this.context = Object.freeze({
      pipeline: p.pipeline,
      runId: p.runId,
      key: p.key,
      input: p.input,
      needs: p.needs,
      step: p.step,
      item: p.item === '' ? undefined : p.item,
      generation: p.generation,
      dryRun: p.dryRun,
      attempt: job.attempt,
      maxAttempts: job.maxAttempts,
      idempotencyKey: `${p.pipeline}:${p.key}:${p.step}${p.item ? `:${p.item}` : ''}${p.generation > 1 ? `:g${p.generation}` : ''}`,
      signal: this.signal,
      log,
      get db(): Executor {
        return job.db;
      },
      artifact: (name: string, content: ArtifactContent, options?: ArtifactOptions) => this.artifact(name, content, options),
      heartbeat: () => job.heartbeat(),
      progress: (value: unknown) => job.progress(value),
    });
  }

  /** Runs the handler under the step's timeout; rejects when the attempt's signal aborts. */
  async run<T>(fn: () => T | Promise<T>): Promise<T> {
    const ms = this.place.timeoutMs;
    if (ms !== undefined) this.timer = setTimeout(() => this.timeout.abort(new PipelineStepTimeoutError(this.place.step, ms)), ms);
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(this.signal.reason instanceof Error ? this.signal.reason : new Error(String(this.signal.reason)));
      if (this.signal.aborted) fail();
      else this.signal.addEventListener('abort', fail, { once: true });
    });
    aborted.catch(() => undefined);
    try {
      return await Promise.race([Promise.resolve().then(fn), aborted]);
    } finally {
      clearTimeout(this.timer);
    }
  }

  /** Whether the attempt ended because its own timeout fired. */
  get timedOut(): boolean {
    return this.timeout.signal.aborted;
  }

  /** Ends the attempt: later artifact writes are refused. */
  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
  }

  private async artifact(name: string, content: ArtifactContent, options: ArtifactOptions = {}): Promise<ArtifactInfo> {
    if (this.closed) throw new OptionsInvalidError('artifact', [{ path: 'name', message: `attempt ${this.job.attempt} of step "${this.place.step}" is over: its handler may no longer write artifacts` }]);
    const issues = [];
    if (typeof name !== 'string' || !ARTIFACT_NAME.test(name) || name === MANIFEST) {
      issues.push({ path: 'name', message: `${JSON.stringify(name)} is not an artifact name: 1 to 200 letters, digits and _ . = + -, not starting with "." (and not ${MANIFEST})` });
    }
    if (options.contentType !== undefined && (typeof options.contentType !== 'string' || options.contentType.length > 200))
      issues.push({ path: 'contentType', message: 'must be a string of at most 200 characters' });
    if (issues.length) throw new OptionsInvalidError('artifact', issues);
    let bytes: Uint8Array;
    let contentType: string;
    if (typeof content === 'string') {
      bytes = Buffer.from(content, 'utf8');
      contentType = 'text/plain; charset=utf-8';
    } else if (content instanceof Uint8Array) {
      bytes = content;
      contentType = 'application/octet-stream';
    } else {
      // The same rules as a payload (no NaN, no Map, no NUL), then written indented for people.
      const json = toJson(`artifact ${name}`, content, Number.MAX_SAFE_INTEGER);
      bytes = Buffer.from(`${JSON.stringify(JSON.parse(json), null, 2)}\n`, 'utf8');
      contentType = 'application/json';
    }
    if (options.contentType) contentType = options.contentType;
    if (this.staged.some((a) => a.name === name)) throw new PipelineArtifactExistsError(name, this.place.step);
    const p = this.place;
    const location = await this.store.stage(
      { pipeline: p.pipeline, key: p.key, runId: p.runId, dryRun: p.dryRun, generation: p.generation, name, jobId: this.job.jobId, attempt: this.job.attempt, leaseToken: this.job.leaseToken },
      bytes,
    );
    if (this.closed) throw new OptionsInvalidError('artifact', [{ path: 'name', message: `attempt ${this.job.attempt} of step "${p.step}" ended while "${name}" was written; it is not recorded` }]);
    const info = { name, sha256: sha256(bytes), size: bytes.byteLength, contentType, location };
    this.staged.push({ name, contentType, sha256: info.sha256, size: info.size, store: this.store.kind, location });
    return Object.freeze(info);
  }
}

/** A logger adding fixed fields to every line (the job's own logger keeps the lines with the job). */
function fieldsLogger(log: JobLogger, fields: Record<string, unknown>): JobLogger {
  const line = (obj: object | string, msg?: string): [object, string | undefined] => (typeof obj === 'string' ? [fields, obj] : [{ ...fields, ...obj }, msg]);
  return {
    debug: (obj, msg) => log.debug(...line(obj, msg)),
    info: (obj, msg) => log.info(...line(obj, msg)),
    warn: (obj, msg) => log.warn(...line(obj, msg)),
    error: (obj, msg) => log.error(...line(obj, msg)),
  };
}
