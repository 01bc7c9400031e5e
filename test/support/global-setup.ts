import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/dev/embedded-postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
  }
}

/**
 * Starts one embedded PostgreSQL for the whole run (or uses DATABASE_URL). Each test file then
 * works in a schema of its own (see db.ts).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let pg: EmbeddedPostgresHandle | undefined;
  let url = process.env.DATABASE_URL;
  if (!url) {
    // fsync off only makes the suite faster; every test still runs on a real server.
    pg = await startEmbeddedPostgres({ flags: ['-c', 'fsync=off', '-c', 'full_page_writes=off'] });
    url = pg.url;
  }
  project.provide('databaseUrl', url);
  return async () => {
    await pg?.destroy();
  };
}
