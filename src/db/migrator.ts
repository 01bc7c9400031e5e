import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MigrationFailedError, NotMigratedError, SchemaTooNewError } from '../errors.js';
import { run, type Executor } from './executor.js';
import { quoteIdent } from './identifiers.js';
import type { PoolHandle } from './pool.js';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/** A numbered migration file: `NNNN_name.sql`. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

let cached: Migration[] | undefined;

/** The migrations shipped with this version, in order. */
export function migrations(): Migration[] {
  cached ??= readdirSync(MIGRATIONS_DIR)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((f) => ({
      version: Number(f.slice(0, 4)),
      name: f.slice(5, -4),
      sql: readFileSync(join(MIGRATIONS_DIR, f), 'utf8'),
    }));
  return cached;
}

/** The newest migration version this code knows. */
export function latestVersion(): number {
  return migrations().at(-1)?.version ?? 0;
}

/** What `migrate()` did. */
export interface MigrateResult {
  schema: string;
  from: number;
  to: number;
  applied: { version: number; name: string }[];
}

/**
 * Brings the schema up to date in one transaction, under a transaction-level advisory lock keyed
 * by the schema, so concurrent `migrate()` calls from many replicas apply each migration once.
 * Each file runs with `search_path` set to the schema alone, so the files need no schema names.
 */
export async function migrate(pool: PoolHandle, schema: string): Promise<MigrateResult> {
  const q = quoteIdent(schema);
  return pool.transaction(async (tx) => {
    await run(tx, { text: `SELECT pg_advisory_xact_lock(hashtext('nightshift.migrate:' || $1))` }, [schema]);
    await run(tx, { text: `CREATE SCHEMA IF NOT EXISTS ${q}` });
    await run(tx, {
      text: `CREATE TABLE IF NOT EXISTS ${q}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    });
    const from = await currentVersion(tx, schema);
    if (from > latestVersion()) throw new SchemaTooNewError(schema, from, latestVersion());
    // Apply every migration not recorded yet (not only those above the newest applied), so a
    // migration merged with a lower number than one already applied still runs.
    const done = new Set((await run<{ version: number }>(tx, { text: `SELECT version FROM ${q}.migrations` })).map((r) => r.version));
    const applied: { version: number; name: string }[] = [];
    await run(tx, { text: `SELECT set_config('search_path', $1, true)` }, [q]);
    for (const m of migrations()) {
      if (done.has(m.version)) continue;
      try {
        await tx.query({ text: m.sql });
      } catch (err) {
        // The transaction rolls back whole: name the migration and say what to do, not a raw pg error.
        throw new MigrationFailedError(schema, m, err);
      }
      await run(tx, { text: `INSERT INTO ${q}.migrations (version, name) VALUES ($1, $2)` }, [m.version, m.name]);
      applied.push({ version: m.version, name: m.name });
    }
    return { schema, from, to: latestVersion(), applied };
  });
}

/** The schema's applied migration version, 0 when nightshift was never installed there. */
export async function currentVersion(db: Executor, schema: string): Promise<number> {
  const [exists] = await run<{ t: string | null }>(db, { text: `SELECT to_regclass($1) AS t` }, [`${quoteIdent(schema)}.migrations`]);
  if (!exists?.t) return 0;
  const [row] = await run<{ v: number | null }>(db, { text: `SELECT max(version) AS v FROM ${quoteIdent(schema)}.migrations` });
  return row?.v ?? 0;
}

/** Throws unless every migration of this code is applied (and none newer). */
export async function assertMigrated(db: Executor, schema: string): Promise<void> {
  const have = await currentVersion(db, schema);
  const want = latestVersion();
  if (have > want) throw new SchemaTooNewError(schema, have, want);
  const [row] = have === 0 ? [{ n: 0 }] : await run<{ n: number }>(db, { text: `SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.migrations WHERE version = ANY($1::int[])` }, [migrations().map((m) => m.version)]);
  if (have < want || (row?.n ?? 0) < migrations().length) throw new NotMigratedError(schema, have, want);
}
