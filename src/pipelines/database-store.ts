import type { PipelineArtifactQueries } from '../db/pipelines-artifacts.js';
import type { ArtifactAttempt, ArtifactRun, ArtifactStore, StoredArtifact } from './artifact-store.js';

const PREFIX = 'blob:';

/**
 * The database artifact store (`store: 'database'`): each artifact's bytes in a row of
 * `pipeline_artifact_blobs`, deleted with the run. Nothing moves when a run is published; the
 * blobs that failed attempts staged (no record points at them) are deleted then. The manifest is
 * the records themselves.
 */
export class DatabaseArtifactStore implements ArtifactStore {
  readonly kind = 'database';

  constructor(private readonly artifacts: PipelineArtifactQueries) {}

  async stage(a: ArtifactAttempt, content: Uint8Array): Promise<string> {
    return `${PREFIX}${await this.artifacts.blobInsert({ runId: a.runId, content })}`;
  }

  async publish(run: ArtifactRun, artifacts: readonly StoredArtifact[]): Promise<ReadonlyMap<string, string>> {
    await this.artifacts.blobDeleteOrphans({ runId: run.runId });
    return new Map(artifacts.map((a) => [a.name, a.location]));
  }

  async read(location: string): Promise<Uint8Array | undefined> {
    if (!location.startsWith(PREFIX) || !/^[1-9][0-9]{0,18}$/.test(location.slice(PREFIX.length))) return undefined;
    return this.artifacts.blobRead({ id: location.slice(PREFIX.length) });
  }

  /** Blobs never change: a superseded artifact keeps its blob. */
  async archive(_run: ArtifactRun, a: StoredArtifact): Promise<string> {
    return a.location;
  }

  async remove(run: ArtifactRun): Promise<void> {
    await this.artifacts.blobRemoveRun({ runId: run.runId });
  }
}
