// Migrates nightshift's tables (registering the kinds, so SQL may enqueue them) and the operations
// worker's own (queue_pack_change included). Run once per deploy: `npx tsx examples/operations-worker/migrate.ts`.
import { createNightshift } from '../../src/index.js';
import config from './nightshift.config.js';
import { migrateOps } from './schema.js';

const ns = createNightshift({ databaseUrl: process.env.DATABASE_URL, schema: config.database?.schema, jobs: [...(config.jobs ?? [])] });
await ns.migrate();
await migrateOps(ns, ns.schema);
await ns.stop();
process.stdout.write(`operations-worker: migrated schema ${ns.schema}\n`);
