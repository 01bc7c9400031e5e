import { run, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** An artifact record as stored. */
export interface ArtifactRow {
  id: string;
  generation: number;
  step: string;
  item: string;
  name: string;
  content_type: string | null;
  sha256: string;
  size_bytes: string;
  store: string;
  location: string;
  job_id: string;
  attempt: number;
  lease_token: string;
  current: boolean;
  created_at: Date;
  verified_at: Date | null;
}

/** An artifact an attempt staged, to record with its step's output. */
export interface ArtifactInsert {
  name: string;
  contentType: string | null;
  sha256: string;
  size: number;
  store: string;
  location: string;
}

/** Statements of `pipeline_artifacts` and `pipeline_artifact_blobs`. */
export function pipelineArtifactStatements(set: StatementSet) {
  const COLUMNS = `id::text, generation, step, item, name, content_type, sha256, size_bytes::text, store, location, job_id::text, attempt,
    lease_token::text, current, created_at, verified_at`;
  return {
    // The unique index (run, name) WHERE current refuses a name another step of the run wrote.
    insert: set.plain<
      never,
      [
        runId: string,
        generation: number,
        step: string,
        item: string,
        jobId: string,
        attempt: number,
        leaseToken: string,
        names: readonly string[],
        contentTypes: readonly (string | null)[],
        sha256: readonly string[],
        sizes: readonly number[],
        stores: readonly string[],
        locations: readonly string[],
      ]
    >(
      (s) => `INSERT INTO ${s}.pipeline_artifacts (run_id, generation, step, item, name, content_type, sha256, size_bytes, store, location, job_id, attempt, lease_token)
        SELECT $1, $2, $3, $4, u.name, u.ct, u.sha, u.size, u.store, u.loc, $5, $6, $7
        FROM unnest($8::text[], $9::text[], $10::text[], $11::bigint[], $12::text[], $13::text[]) AS u(name, ct, sha, size, store, loc)`,
    ),
    list: set.plain<ArtifactRow, [runId: string, current: boolean | null]>(
      (s) => `SELECT ${COLUMNS} FROM ${s}.pipeline_artifacts WHERE run_id = $1 AND ($2::boolean IS NULL OR current = $2) ORDER BY current DESC, generation, id`,
    ),
    relocate: set.plain<never, [runId: string, ids: readonly string[], locations: readonly string[]]>(
      (s) => `UPDATE ${s}.pipeline_artifacts a SET location = u.loc FROM unnest($2::bigint[], $3::text[]) AS u(id, loc) WHERE a.run_id = $1 AND a.id = u.id`,
    ),
    supersede: set.plain<{ id: string }, [runId: string, steps: readonly string[]]>(
      (s) => `UPDATE ${s}.pipeline_artifacts SET current = false WHERE run_id = $1 AND step = ANY($2::text[]) AND current RETURNING id::text`,
    ),
    verified: set.plain<never, [runId: string, ids: readonly string[]]>((s) => `UPDATE ${s}.pipeline_artifacts SET verified_at = now() WHERE run_id = $1 AND id = ANY($2::bigint[])`),
    blobInsert: set.plain<{ id: string }, [runId: string, content: Buffer]>((s) => `INSERT INTO ${s}.pipeline_artifact_blobs (run_id, content) VALUES ($1, $2) RETURNING id::text`),
    blobRead: set.plain<{ content: Buffer }, [id: string]>((s) => `SELECT content FROM ${s}.pipeline_artifact_blobs WHERE id = $1`),
    // Blobs of the run no record points at: what failed attempts staged.
    blobOrphans: set.plain<never, [runId: string]>(
      (s) => `DELETE FROM ${s}.pipeline_artifact_blobs b WHERE b.run_id = $1
        AND NOT EXISTS (SELECT 1 FROM ${s}.pipeline_artifacts a WHERE a.run_id = $1 AND a.location = 'blob:' || b.id)`,
    ),
    blobRemove: set.plain<never, [runId: string]>((s) => `DELETE FROM ${s}.pipeline_artifact_blobs WHERE run_id = $1`),
  };
}
export type PipelineArtifactStatements = ReturnType<typeof pipelineArtifactStatements>;

/** The attempt whose artifacts are recorded. */
export interface ArtifactAttemptRef {
  runId: string;
  generation: number;
  step: string;
  item: string;
  jobId: string;
  attempt: number;
  leaseToken: string;
}

/**
 * The statements of `pipeline_artifacts` and `pipeline_artifact_blobs` bound to the schema's
 * pool. The writes of a step's fenced transaction, a restart or a publication take it as `tx`; a
 * listing that may run in one takes it as an optional `db`.
 */
export class PipelineArtifactQueries {
  private readonly st: PipelineArtifactStatements;

  constructor(
    private readonly pool: Executor,
    set: StatementSet,
  ) {
    this.st = pipelineArtifactStatements(set);
  }

  /** Records the artifacts of one attempt (inside the step's fenced transaction `tx`). */
  async insert(p: { tx: Executor; at: ArtifactAttemptRef; rows: readonly ArtifactInsert[] }): Promise<void> {
    const { at, rows } = p;
    if (rows.length === 0) return;
    await run(p.tx, this.st.insert, [
      at.runId,
      at.generation,
      at.step,
      at.item,
      at.jobId,
      at.attempt,
      at.leaseToken,
      rows.map((r) => r.name),
      rows.map((r) => r.contentType),
      rows.map((r) => r.sha256),
      rows.map((r) => r.size),
      rows.map((r) => r.store),
      rows.map((r) => r.location),
    ]);
  }

  /** A run's artifact records (`current`: only the current ones, or only the superseded ones; null: all). */
  list(p: { runId: string; current: boolean | null; db?: Executor }): Promise<ArtifactRow[]> {
    return run(p.db ?? this.pool, this.st.list, [p.runId, p.current]);
  }

  /** Points records at new locations (published, archived), in `tx`. */
  async relocate(p: { tx: Executor; runId: string; moves: readonly { id: string; location: string }[] }): Promise<void> {
    if (p.moves.length === 0) return;
    await run(p.tx, this.st.relocate, [p.runId, p.moves.map((m) => m.id), p.moves.map((m) => m.location)]);
  }

  /** Marks the current artifacts of `steps` superseded (restart), in `tx`; returns their ids. */
  async supersede(p: { tx: Executor; runId: string; steps: readonly string[] }): Promise<string[]> {
    return (await run(p.tx, this.st.supersede, [p.runId, p.steps])).map((r) => r.id);
  }

  /** Records in `tx` that these artifacts matched their checksums now. */
  async verified(p: { tx: Executor; runId: string; ids: readonly string[] }): Promise<void> {
    if (p.ids.length) await run(p.tx, this.st.verified, [p.runId, p.ids]);
  }

  /** Stores bytes of the database store; returns the blob id. */
  async blobInsert(p: { runId: string; content: Uint8Array }): Promise<string> {
    const c = p.content;
    return (await run(this.pool, this.st.blobInsert, [p.runId, Buffer.from(c.buffer, c.byteOffset, c.byteLength)]))[0]!.id;
  }

  /** A blob's bytes, or undefined when it is gone. */
  async blobRead(p: { id: string }): Promise<Uint8Array | undefined> {
    return (await run(this.pool, this.st.blobRead, [p.id]))[0]?.content;
  }

  /** Deletes the run's blobs no record points at. */
  async blobDeleteOrphans(p: { runId: string }): Promise<void> {
    await run(this.pool, this.st.blobOrphans, [p.runId]);
  }

  /** Deletes every blob of a run. */
  async blobRemoveRun(p: { runId: string }): Promise<void> {
    await run(this.pool, this.st.blobRemove, [p.runId]);
  }
}
