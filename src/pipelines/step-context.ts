import type { Executor } from '../db/executor.js';
import type { JobLogger } from '../jobs/define-job.js';

/** Why an optional step (or an item) failed, as its dependents see it. */
export interface StepFailure {
  readonly message: string;
  readonly code?: string;
}

/** What a dependent receives from an optional step: its output, or its failure. */
export type StepResult<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: StepFailure };

/** One item's result of a fatal fan-out, as its fan-in sees it (every item succeeded). */
export interface ItemOk<T> {
  readonly key: string;
  readonly ok: true;
  readonly value: T;
}

/** One item's result of an optional fan-out: its output, or its failure. */
export type ItemResult<T> = ItemOk<T> | { readonly key: string; readonly ok: false; readonly error: StepFailure };

/** An artifact as written: what its record holds. */
export interface ArtifactInfo {
  readonly name: string;
  /** SHA-256 of the content, hex. */
  readonly sha256: string;
  readonly size: number;
  readonly contentType: string | null;
  /** Where the store put it (a path relative to a directory store's root, `blob:<id>`, …). */
  readonly location: string;
}

/** Options of `ctx.artifact`. */
export interface ArtifactOptions {
  /** Default `application/json` for a JSON value, `text/plain` for a string, `application/octet-stream` for bytes. */
  contentType?: string;
}

/** What an artifact's content may be: text, bytes, or a JSON value (written as indented JSON). */
export type ArtifactContent = string | Uint8Array | Record<string, unknown> | unknown[];

/** What a step's handler receives. `K` is the key, `I` the input, `N` the outputs of the steps it needs. */
export interface StepContext<K = string, I = unknown, N = Record<string, never>> {
  readonly pipeline: string;
  readonly runId: string;
  readonly key: K;
  readonly input: I;
  /** The outputs of the steps named in `needs`, typed as they returned them. */
  readonly needs: N;
  readonly step: string;
  /** The item's key, in a fan-out step. */
  readonly item: string | undefined;
  /** 1, then n + 1 for each restart. */
  readonly generation: number;
  readonly dryRun: boolean;
  /** 1 for the step job's first attempt. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /**
   * `<pipeline>:<key>:<step>[:<item>]` (and `:g<n>` from the second generation on): stable across
   * attempts and reruns of the step, for a provider's dedupe id.
   */
  readonly idempotencyKey: string;
  /** Aborts on the step's timeout, a cancel, a lost lease and shutdown; `signal.reason` says which. */
  readonly signal: AbortSignal;
  /** A logger whose lines are kept with the step's job, carrying the pipeline, run id and step. */
  readonly log: JobLogger;
  /** The shared pool, for your own queries. */
  readonly db: Executor;
  /**
   * Stores a file of the run with its SHA-256 and size. It is recorded with this attempt's output:
   * a file written by an attempt that fails is never what the run shows.
   */
  artifact(name: string, content: ArtifactContent, options?: ArtifactOptions): Promise<ArtifactInfo>;
  /** Renews the step job's lease now (also done every heartbeat). */
  heartbeat(): Promise<void>;
  /** Reports how far the step got (shown by `jobs show` for its job). */
  progress(value: unknown): void;
}
