import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, rmdir, unlink, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, resolve, sep } from 'node:path';
import { ConfigError, type Issue } from '../errors.js';
import type { ArtifactAttempt, ArtifactRun, ArtifactStore, StoredArtifact } from './artifact-store.js';

/** Options of {@link directoryStore}. */
export interface DirectoryStoreOptions {
  /** The root directory. Default: `NIGHTSHIFT_ARTIFACTS_DIR`, else `artifacts` in the working directory (read when first used). */
  root?: string;
  /**
   * A run's directory under the root, as relative path segments. Default `<pipeline>/<key>`; seed
   * 001's layout is `({ key }) => \`dayId=${key}\``. Dry runs get `dry-run-<id>/` inside it.
   */
  path?: (run: { pipeline: string; key: string }) => string;
}

/** The manifest written beside a run's published artifacts. */
export const MANIFEST = 'checksums.json';
const STAGING = '.attempts';
const GENERATIONS = '.generations';

/**
 * The default artifact store: files under a root directory, `<root>/<pipeline>/<key>/<name>`, with
 * `checksums.json` beside them once the run ends. Attempts stage their files in
 * `.attempts/<job>-<attempt>-<lease token>/` (one per claim); publishing copies the recorded ones
 * into place (write to a temporary name, then rename, so a reader never sees half a file) and
 * removes the staging directory. Locations are stored relative to the root, so the root may move.
 */
export function directoryStore(options: DirectoryStoreOptions = {}): ArtifactStore {
  const issues: Issue[] = [];
  if (options.root !== undefined && (typeof options.root !== 'string' || options.root.trim() === '')) issues.push({ path: 'root', message: 'must be a directory path' });
  if (options.path !== undefined && typeof options.path !== 'function') issues.push({ path: 'path', message: 'must be a function ({ pipeline, key }) => relative path' });
  if (issues.length) throw new ConfigError('directory store', issues);
  return new DirectoryStore(options);
}

class DirectoryStore implements ArtifactStore {
  readonly kind = 'directory';
  private rootDir: string | undefined;

  constructor(private readonly options: DirectoryStoreOptions) {}

  private get root(): string {
    this.rootDir ??= resolve(this.options.root ?? (process.env.NIGHTSHIFT_ARTIFACTS_DIR || 'artifacts'));
    return this.rootDir;
  }

  /** The run's directory, relative to the root. */
  private runDir(run: ArtifactRun): string {
    const base = this.options.path ? this.options.path({ pipeline: run.pipeline, key: run.key }) : join(run.pipeline, run.key);
    const safe = normalize(String(base));
    if (isAbsolute(safe) || safe === '.' || safe.split(sep).some((part) => part === '..')) {
      throw new Error(`directory store: path(${JSON.stringify(run.key)}) gave ${JSON.stringify(base)}, which is not a relative path inside the root`);
    }
    return run.dryRun ? join(safe, `dry-run-${run.runId}`) : safe;
  }

  private abs(location: string): string {
    const p = resolve(this.root, location);
    if (p !== this.root && !p.startsWith(this.root + sep)) throw new Error(`directory store: location ${JSON.stringify(location)} is outside the root`);
    return p;
  }

  async stage(a: ArtifactAttempt, content: Uint8Array): Promise<string> {
    // Per claim, not per attempt number: a handler frozen past its lease before its start was
    // recorded may, once continued, still write here while the next claim runs the same attempt.
    const location = join(this.runDir(a), STAGING, `${a.jobId}-${a.attempt}-${a.leaseToken}`, a.name);
    await writeAtomically(this.abs(location), content);
    return toPosix(location);
  }

  async publish(run: ArtifactRun, artifacts: readonly StoredArtifact[], manifest: Readonly<Record<string, string>>): Promise<ReadonlyMap<string, string>> {
    const dir = this.runDir(run);
    const out = new Map<string, string>();
    for (const a of artifacts) {
      const final = toPosix(join(dir, a.name));
      if (a.location !== final) {
        const staged = await readFile(this.abs(a.location)).catch(() => undefined);
        if (staged && sha256(staged) === a.sha256) await writeAtomically(this.abs(final), staged);
        else {
          // Published before, but the record did not learn of it (a crash between): the final
          // file is the one, if it holds the recorded content.
          const there = await readFile(this.abs(final)).catch(() => undefined);
          if (!there || sha256(there) !== a.sha256) {
            out.set(a.name, a.location);
            continue;
          }
        }
      }
      out.set(a.name, final);
    }
    await writeAtomically(this.abs(join(dir, MANIFEST)), Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`));
    await rm(this.abs(join(dir, STAGING)), { recursive: true, force: true });
    return out;
  }

  async read(location: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(this.abs(location));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async archive(run: ArtifactRun, a: StoredArtifact, generation: number): Promise<string> {
    const to = toPosix(join(this.runDir(run), GENERATIONS, String(generation), a.name));
    if (to === a.location) return to;
    const content = await this.read(a.location);
    if (content === undefined) return a.location;
    await writeAtomically(this.abs(to), content);
    return to;
  }

  async remove(run: ArtifactRun, locations: readonly string[]): Promise<void> {
    const dir = this.runDir(run);
    if (run.dryRun) {
      await rm(this.abs(dir), { recursive: true, force: true });
      return;
    }
    for (const l of locations) await unlink(this.abs(l)).catch(() => undefined);
    for (const d of [STAGING, GENERATIONS]) await rm(this.abs(join(dir, d)), { recursive: true, force: true });
    await unlink(this.abs(join(dir, MANIFEST))).catch(() => undefined);
    // Empty directories up to the root go too; a directory with files of yours stays.
    for (let d = this.abs(dir); d !== this.root && d.startsWith(this.root + sep); d = dirname(d)) {
      if ((await readdir(d).catch(() => ['?'])).length > 0) break;
      await rmdir(d).catch(() => undefined);
    }
  }
}

/** Writes to a temporary name beside the target, then renames: a reader sees the old file or the new one. */
async function writeAtomically(path: string, content: Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, content);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

/** SHA-256 of bytes, hex. */
export function sha256(content: Uint8Array): string {
  return createHash('sha256').update(content).digest('hex');
}

function toPosix(p: string): string {
  return p.split(sep).join('/');
}
