import { randomBytes } from 'node:crypto';
import { toClientOptions, type NightshiftConfig } from '../config/define-config.js';
import { schemaNameProblem } from '../db/identifiers.js';
import { createPool } from '../db/pool.js';
import { schemaDrop } from '../db/test-jobs.js';
import { OptionsInvalidError } from '../errors.js';
import type { NightshiftOptions } from '../runtime/client-options.js';
import { createNightshift, type Nightshift } from '../runtime/nightshift.js';
import { createLogger, silentLogger } from '../telemetry/logger.js';

/** Options of {@link createTestSchema}. */
export interface TestSchemaOptions {
  /** PostgreSQL URL. Default: `DATABASE_URL`. */
  databaseUrl?: string;
  /** Your application as `nightshift.config.ts` exports it: its jobs, schedules, daemons, roles and worker settings. */
  config?: Readonly<NightshiftConfig>;
  /** Client options on top of the config's (or instead of a config). `schema` is always the test's own. */
  options?: Partial<NightshiftOptions>;
  /** The schema name's prefix (a random suffix follows). Default `test`. */
  prefix?: string;
}

/** A schema of a test's own, migrated, with a client on it. */
export interface TestSchema {
  /** The schema's name: `<prefix>_<random>`. */
  readonly schema: string;
  readonly databaseUrl: string;
  /** A client on the schema (not started; a quiet logger unless NIGHTSHIFT_LOG_LEVEL is set or one is given). */
  readonly ns: Nightshift;
  /** Another client on the same schema (a second replica, a producer), stopped by `drop()`. */
  client(options?: Partial<NightshiftOptions>): Nightshift;
  /** Stops every client made here, then drops the schema — unless `keep` (to inspect a failed test's data). */
  drop(options?: { keep?: boolean }): Promise<void>;
}

/**
 * Creates a fresh schema with a random name, migrates it, and returns a client on it: the
 * isolation of one test file (or one test) on a shared database. Call `drop()` when done — in
 * `afterAll`, with `{ keep: true }` after a failure if you want to look at the rows.
 */
export async function createTestSchema(options: TestSchemaOptions = {}): Promise<TestSchema> {
  const databaseUrl = options.databaseUrl ?? process.env.DATABASE_URL;
  if (!databaseUrl && !options.options?.pool) {
    throw new OptionsInvalidError('createTestSchema options', [{ path: 'databaseUrl', message: 'give databaseUrl (or set DATABASE_URL), or options.pool' }]);
  }
  const prefix = options.prefix ?? 'test';
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  const problem = schemaNameProblem(schema);
  if (problem) throw new OptionsInvalidError('createTestSchema options', [{ path: 'prefix', message: problem }]);
  const base: NightshiftOptions = options.config ? toClientOptions(options.config, { databaseUrl: databaseUrl ?? '' }) : {};
  const logger = options.options?.logger ?? options.config?.logger ?? (process.env.NIGHTSHIFT_LOG_LEVEL ? createLogger() : silentLogger());
  const clients: Nightshift[] = [];
  const client = (extra: Partial<NightshiftOptions> = {}): Nightshift => {
    const merged: NightshiftOptions = { ...base, ...options.options, ...extra, schema, logger: extra.logger ?? logger };
    // A pool given replaces the URL (the client takes one or the other).
    if (merged.pool) delete merged.databaseUrl;
    else merged.databaseUrl = databaseUrl;
    const c = createNightshift(merged);
    clients.push(c);
    return c;
  };
  const ns = client();
  try {
    await ns.migrate();
  } catch (err) {
    await ns.stop();
    throw err;
  }
  let dropped = false;
  return {
    schema,
    databaseUrl: databaseUrl ?? '',
    ns,
    client,
    async drop(o: { keep?: boolean } = {}) {
      if (dropped) return;
      dropped = true;
      await Promise.all(clients.splice(0).map((c) => c.stop()));
      if (o.keep) return;
      const pool = options.options?.pool;
      const handle = createPool({ ...(pool ? { pool } : { connectionString: databaseUrl! }), max: 1, applicationName: 'nightshift:test-schema' });
      try {
        await schemaDrop(handle.pool, schema);
      } finally {
        await handle.close();
      }
    },
  };
}
