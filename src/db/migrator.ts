import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MigrationFailedError, NotMigratedError, SchemaTooNewError } from '../errors.js';
import { run, sql, type Executor } from './executor.js';
import { quoteIdent } from './identifiers.js';
import type { PoolHandle } from './pool.js';

const MIGRATIONS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'migrations');

/** A numbered migration file: `NNNN_name.sql`. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
  /**
   * Runs outside a transaction, step by step (a file whose first line is `-- nightshift:online`):
   * for work that must not lock a large table, such as `CREATE INDEX CONCURRENTLY`. Each step is
   * idempotent, so a migration interrupted half-way is finished by the next `migrate()`.
   */
  online: boolean;
  /**
   * Code of an earlier version keeps working on a schema with this migration applied (a file with a
   * line `-- nightshift:compatible`): it only adds what old code does not use. An older process may
   * then start on the newer schema, so a rolling deploy can restart or roll back old pods.
   */
  compatible: boolean;
}

/** The first line of an online migration; steps are separated by lines `-- nightshift:step` and name tables `__schema__.<table>`. */
const ONLINE = '-- nightshift:online';

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
    }))
    .map((m) => ({ ...m, online: m.sql.startsWith(ONLINE), compatible: /^-- nightshift:compatible\b/m.test(m.sql) }));
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
 * Brings the schema up to date. Migrations run in order; transactional ones in one transaction
 * under a transaction-level advisory lock keyed by the schema, so concurrent `migrate()` calls
 * from many replicas apply each migration once. An online migration (see {@link Migration}) runs
 * its steps outside any transaction: each step is idempotent and checks what is already there
 * (an index being built by another replica is waited for, an invalid one left by a broken build
 * is rebuilt), so no lock is held across them and a pooler in transaction mode is no obstacle.
 * Each file runs with `search_path` set to the schema alone, so the files need no schema names.
 */
export async function migrate(pool: PoolHandle, schema: string): Promise<MigrateResult> {
  const q = quoteIdent(schema);
  let from = 0;
  const applied: { version: number; name: string }[] = [];
  for (;;) {
    const next = await pool.transaction(async (tx) => {
      await run(tx, sql<unknown, [schema: string]>(`SELECT pg_advisory_xact_lock(hashtext('nightshift.migrate:' || $1))`), [schema]);
      await run(tx, sql(`CREATE SCHEMA IF NOT EXISTS ${q}`), []);
      await run(tx, sql(`CREATE TABLE IF NOT EXISTS ${q}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`), []);
      // Whether code older than the migration keeps working once it is applied (see Migration.compatible).
      await run(tx, sql(`ALTER TABLE ${q}.migrations ADD COLUMN IF NOT EXISTS compatible boolean NOT NULL DEFAULT false`), []);
      const version = await currentVersion(tx, schema);
      if (applied.length === 0) from = version;
      if (version > latestVersion()) throw new SchemaTooNewError(schema, version, latestVersion());
      // Apply every migration not recorded yet (not only those above the newest applied), so a
      // migration merged with a lower number than one already applied still runs. Transactional
      // ones run here, up to the first online one, which runs after this transaction.
      const done = new Set((await run(tx, sql<{ version: number }, []>(`SELECT version FROM ${q}.migrations`), [])).map((r) => r.version));
      await run(tx, sql<unknown, [path: string]>(`SELECT set_config('search_path', $1, true)`), [q]);
      for (const m of migrations()) {
        if (done.has(m.version)) continue;
        if (m.online) return m;
        try {
          await tx.query({ text: m.sql });
        } catch (err) {
          // The transaction rolls back whole: name the migration and say what to do, not a raw pg error.
          throw new MigrationFailedError(schema, m, err);
        }
        await run(tx, sql<unknown, [version: number, name: string, compatible: boolean]>(`INSERT INTO ${q}.migrations (version, name, compatible) VALUES ($1, $2, $3)`), [m.version, m.name, m.compatible]);
        applied.push({ version: m.version, name: m.name });
      }
      return undefined;
    });
    if (!next) return { schema, from, to: latestVersion(), applied };
    try {
      await runOnline(pool, schema, next);
    } catch (err) {
      throw new MigrationFailedError(schema, next, err);
    }
    const recorded = await run(
      pool.pool,
      sql<{ version: number }, [version: number, name: string, compatible: boolean]>(
        `INSERT INTO ${q}.migrations (version, name, compatible) VALUES ($1, $2, $3) ON CONFLICT (version) DO NOTHING RETURNING version`,
      ),
      [next.version, next.name, next.compatible],
    );
    if (recorded.length) applied.push({ version: next.version, name: next.name });
  }
}

/** A step of an online migration that builds an index: `CREATE [UNIQUE] INDEX CONCURRENTLY IF NOT EXISTS <name> ...`. */
const CONCURRENT_INDEX = /^\s*CREATE\s+(UNIQUE\s+)?INDEX\s+CONCURRENTLY\s+IF\s+NOT\s+EXISTS\s+([a-z_][a-z0-9_]*)\s/i;

/** Runs the steps of an online migration, each outside a transaction, each idempotent. */
async function runOnline(pool: PoolHandle, schema: string, m: Migration): Promise<void> {
  const steps = m.sql
    .slice(ONLINE.length)
    .split(/^-- nightshift:step$/m)
    .map((step) => step.trim())
    .filter((step) => step.replace(/^--.*$/gm, '').trim().length > 0);
  // No search_path here: a session setting would not follow the statement through a pooler in
  // transaction mode. Online steps name their tables as `__schema__.table`.
  for (const raw of steps) {
    const step = raw.replaceAll('__schema__', quoteIdent(schema));
    const index = CONCURRENT_INDEX.exec(step)?.[2];
    if (index) await ensureIndex(pool.pool, schema, index, step);
    else await run(pool.pool, sql(step), []);
  }
}

const INDEX_STATE = sql<{ valid: boolean | null; building: boolean }, [index: string]>(
  `SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)) AS valid,
          EXISTS (SELECT 1 FROM pg_stat_progress_create_index p WHERE p.index_relid = to_regclass($1)) AS building`,
);

/**
 * Builds an index concurrently unless a valid one exists. Another replica's build in progress is
 * waited for; an invalid index that nobody is building (a build that was interrupted) is dropped
 * and built again.
 */
async function ensureIndex(client: Executor, schema: string, name: string, ddl: string): Promise<void> {
  const qualified = `${quoteIdent(schema)}.${quoteIdent(name)}`;
  for (let wait = 100; ; wait = Math.min(wait * 2, 2_000)) {
    const [row] = await run(client, INDEX_STATE, [qualified]);
    if (row?.valid === true) return;
    if (row?.valid === null) {
      await run(client, sql(ddl), []);
      continue;
    }
    if (!row?.building) {
      await run(client, sql(`DROP INDEX CONCURRENTLY IF EXISTS ${qualified}`), []);
      continue;
    }
    await new Promise((r) => setTimeout(r, wait));
  }
}

/** The schema's applied migration version, 0 when nightshift was never installed there. */
export async function currentVersion(db: Executor, schema: string): Promise<number> {
  const [exists] = await run(db, sql<{ t: string | null }, [table: string]>(`SELECT to_regclass($1) AS t`), [`${quoteIdent(schema)}.migrations`]);
  if (!exists?.t) return 0;
  const [row] = await run(db, sql<{ v: number | null }, []>(`SELECT max(version) AS v FROM ${quoteIdent(schema)}.migrations`), []);
  return row?.v ?? 0;
}

/**
 * Throws unless every migration of this code is applied. A schema newer than this code is accepted
 * only when every migration this code does not know is marked compatible (it was written so that
 * older code keeps working): then the versions it does not know are returned, for a warning;
 * otherwise NS_SCHEMA_TOO_NEW names the first one that is not.
 */
export async function assertMigrated(db: Executor, schema: string): Promise<{ newer: number[] }> {
  const have = await currentVersion(db, schema);
  const want = latestVersion();
  if (have > want) {
    const rows = await run(
      db,
      sql<{ version: number; compatible: boolean | null }, [want: number]>(
        `SELECT version, (to_jsonb(m) ->> 'compatible')::boolean AS compatible FROM ${quoteIdent(schema)}.migrations m WHERE version > $1 ORDER BY version`,
      ),
      [want],
    );
    const blocking = rows.find((r) => r.compatible !== true);
    if (blocking) throw new SchemaTooNewError(schema, have, want, blocking.version);
    return { newer: rows.map((r) => r.version) };
  }
  const [row] =
    have === 0
      ? [{ n: 0 }]
      : await run(db, sql<{ n: number }, [versions: number[]]>(`SELECT count(*)::int AS n FROM ${quoteIdent(schema)}.migrations WHERE version = ANY($1::int[])`), [migrations().map((m) => m.version)]);
  if (have < want || (row?.n ?? 0) < migrations().length) throw new NotMigratedError(schema, have, want);
  return { newer: [] };
}
