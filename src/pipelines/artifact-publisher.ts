import type { Executor } from '../db/executor.js';
import type { RunRow } from '../db/pipelines-runs.js';
import { sha256 } from './directory-store.js';
import { artifactRun, type EngineContext } from './engine-context.js';

/** One artifact's verification. */
export interface ArtifactCheck {
  name: string;
  step: string;
  /** `ok`: the content matches its record; `missing`: nothing at its location; `changed`: other content. */
  status: 'ok' | 'missing' | 'changed';
  location: string;
  expectedSha256: string;
  expectedSize: number;
  actualSha256: string | null;
  actualSize: number | null;
}

/** What `verify` found. */
export interface VerifyResult {
  runId: string;
  /** True when every artifact matched its record. */
  ok: boolean;
  artifacts: ArtifactCheck[];
}

/**
 * Publishes the artifacts of ended runs (copies into their final place and the manifest) and
 * verifies them. Publishing holds the run's row lock while it copies, so a rerun that would stage
 * new files waits for it; it is idempotent, and the sweep repeats it for a run whose publication a
 * crash interrupted.
 */
export class ArtifactPublisher {
  constructor(private readonly c: EngineContext) {}

  /** Publishes an ended run's artifacts once; does nothing for a running or published run, or one of a pipeline this client does not define. */
  async publish(runId: string): Promise<boolean> {
    return this.c.database.pool.transaction(async (tx) => {
      const run = await this.c.pipelines.runs.lock({ tx, id: runId });
      if (!run || !run.finished_at || run.artifacts_published_at) return false;
      const spec = this.c.definition(run.pipeline);
      if (!spec) return false;
      const store = this.c.store(spec);
      const rows = await this.c.pipelines.artifacts.list({ runId: run.id, current: true, db: tx });
      const manifest = Object.fromEntries(rows.map((a) => [a.name, a.sha256]));
      const final = await store.publish(
        artifactRun(run),
        rows.map((a) => ({ name: a.name, location: a.location, sha256: a.sha256, size: Number(a.size_bytes) })),
        manifest,
      );
      const moves = rows.filter((a) => final.get(a.name) && final.get(a.name) !== a.location).map((a) => ({ id: a.id, location: final.get(a.name)! }));
      await this.c.pipelines.artifacts.relocate({ tx, runId: run.id, moves });
      await this.c.pipelines.runs.published({ tx, id: run.id });
      return true;
    });
  }

  /**
   * Re-reads every current artifact of the run and compares it with its record. It holds a share
   * lock on the run while it reads, so a publication in progress (which moves the files and then
   * their records) is waited for rather than seen half-done.
   */
  async verify(run: RunRow): Promise<VerifyResult> {
    return this.c.database.pool.transaction(async (tx) => {
      await this.c.pipelines.runs.share({ tx, id: run.id });
      return this.check(tx, run);
    });
  }

  private async check(tx: Executor, run: RunRow): Promise<VerifyResult> {
    const spec = this.c.definition(run.pipeline)!;
    const store = this.c.store(spec);
    const rows = await this.c.pipelines.artifacts.list({ runId: run.id, current: true, db: tx });
    const checks: ArtifactCheck[] = [];
    for (const a of rows) {
      const content = await store.read(a.location);
      const actualSha256 = content ? sha256(content) : null;
      const actualSize = content ? content.byteLength : null;
      const expectedSize = Number(a.size_bytes);
      const status = content === undefined ? 'missing' : actualSha256 === a.sha256 && actualSize === expectedSize ? 'ok' : 'changed';
      checks.push({ name: a.name, step: a.step, status, location: a.location, expectedSha256: a.sha256, expectedSize, actualSha256, actualSize });
    }
    await this.c.pipelines.artifacts.verified({ tx, runId: run.id, ids: rows.filter((_, i) => checks[i]!.status === 'ok').map((a) => a.id) });
    const missing = checks.filter((x) => x.status === 'missing').length;
    const changed = checks.filter((x) => x.status === 'changed').length;
    if (missing + changed > 0) {
      this.c.events.emit({ type: 'pipeline.artifacts-mismatch', pipeline: run.pipeline, runId: run.id, generation: run.generation, missing, changed });
    }
    return { runId: run.id, ok: missing + changed === 0, artifacts: checks };
  }
}
