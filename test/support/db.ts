import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { createNightshift, type Nightshift, type NightshiftOptions } from '../../src/index.js';
import { silentLogger } from '../../src/telemetry/logger.js';

/**
 * A schema of its own for the calling test file, on the suite's PostgreSQL. Clients made with
 * `client()` are stopped after each test; the schema is dropped after the file unless a test
 * failed, so a failure can be inspected.
 */
export function useTestDatabase(prefix = 't') {
  const url = inject('databaseUrl');
  const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
  const clients: Nightshift[] = [];
  let failed = false;
  const admin = new pg.Pool({ connectionString: url, max: 4 });

  afterEach(async (ctx) => {
    if (ctx.task.result?.state === 'fail') failed = true;
    await Promise.all(clients.splice(0).map((c) => c.stop()));
  });
  afterAll(async () => {
    if (!failed) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    else console.error(`test failed: schema ${schema} kept for inspection at ${url}`);
    await admin.end();
  });

  return {
    url,
    schema,
    /** A raw pg pool for assertions. */
    sql: admin,
    /** How many jobs this file's schema holds (of `kind`, when given): "nothing was written" checks. */
    async jobCount(kind?: string): Promise<number> {
      const { rows } = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".jobs_all WHERE $1::text IS NULL OR kind = $1`, [kind ?? null]);
      return rows[0]!.n;
    },
    /** A client on this file's schema; stopped after the test. */
    client(options: Partial<NightshiftOptions> = {}): Nightshift {
      const c = createNightshift({ databaseUrl: url, schema, logger: silentLogger(), ...options });
      clients.push(c);
      return c;
    },
    /** Migrates this file's schema once, before its tests. */
    migrateBeforeAll() {
      beforeAll(async () => {
        const c = createNightshift({ databaseUrl: url, schema, logger: silentLogger() });
        await c.migrate();
        await c.stop();
      });
    },
  };
}
