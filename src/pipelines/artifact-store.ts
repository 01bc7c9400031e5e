/** The run an artifact belongs to, as a store sees it. */
export interface ArtifactRun {
  readonly pipeline: string;
  readonly key: string;
  readonly runId: string;
  readonly dryRun: boolean;
  readonly generation: number;
}

/** An artifact an attempt is writing. */
export interface ArtifactAttempt extends ArtifactRun {
  readonly name: string;
  readonly jobId: string;
  readonly attempt: number;
  /**
   * The lease token of the claim that runs the attempt: unique to it, unlike `attempt`, which
   * repeats when a lease is lost before the start was recorded (the rescuer gives the attempt
   * back, docs/jobs.md) — while the handler that held it may still be writing. Key a staging
   * place by it.
   */
  readonly leaseToken: string;
}

/** A recorded artifact, as a store is asked to publish, read or archive it. */
export interface StoredArtifact {
  readonly name: string;
  readonly location: string;
  readonly sha256: string;
  readonly size: number;
}

/**
 * Where a pipeline's artifacts live. nightshift calls it in this order: `stage` while an attempt
 * runs (before the attempt's output and the artifact's record commit, so a failed attempt's
 * staged content is simply never recorded); `publish` once the run ends, with the recorded
 * artifacts and the manifest; `read` to verify; `archive` on a restart; `remove` on cleanup and
 * retention. Every method may be called again after a crash and must be idempotent. An
 * S3-compatible store maps them to PUT under a staging prefix, CopyObject to the final keys plus
 * a PUT of `checksums.json`, GET (undefined on 404), CopyObject aside, and DELETE.
 */
export interface ArtifactStore {
  /** Stored with each record (`directory`, `database`, `s3`, …). */
  readonly kind: string;
  /** Writes an attempt's content to a staging place of that attempt (of its lease token: see ArtifactAttempt); returns its location. */
  stage(artifact: ArtifactAttempt, content: Uint8Array): Promise<string>;
  /**
   * Makes the recorded artifacts of an ended run final and writes the manifest (`{ name: sha256 }`)
   * beside them; returns each artifact's final location by name (the same location when it stays).
   * Content staged by attempts that were never recorded is removed.
   */
  publish(run: ArtifactRun, artifacts: readonly StoredArtifact[], manifest: Readonly<Record<string, string>>): Promise<ReadonlyMap<string, string>>;
  /** The content at a location, or undefined when nothing is there. */
  read(location: string): Promise<Uint8Array | undefined>;
  /** Keeps a superseded artifact of `generation` aside before a restart overwrites it; returns its new location. */
  archive(run: ArtifactRun, artifact: StoredArtifact, generation: number): Promise<string>;
  /** Removes everything of a run (cleanup of a dry run, retention): the locations given and what the store keeps beside them. */
  remove(run: ArtifactRun, locations: readonly string[]): Promise<void>;
}

/** Whether a value looks like an ArtifactStore. */
export function isArtifactStore(value: unknown): value is ArtifactStore {
  const s = value as Partial<ArtifactStore> | null;
  return typeof s === 'object' && s !== null && typeof s.kind === 'string' && ['stage', 'publish', 'read', 'archive', 'remove'].every((m) => typeof (s as Record<string, unknown>)[m] === 'function');
}
