/**
 * Shows the plans of nightshift's hot statements as the worker runs them (prepared, generic plan)
 * on a queue of realistic size: EXPLAIN (ANALYZE, BUFFERS) of the claim, the batched completion
 * and the heartbeat, each in a transaction that is rolled back.
 *
 *   npx tsx bench/explain-hot-path.ts [jobs=50000] [batch=100]
 */
import pg from 'pg';
import { z } from 'zod';
import { Database } from '../src/db/database.js';
import { createPool } from '../src/db/pool.js';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { createNightshift, defineJob } from '../src/index.js';
import { silentLogger } from '../src/telemetry/logger.js';
import { SERVER_FLAGS } from './server.js';

const jobs = Number(process.argv[2] ?? 50_000);
const batch = Number(process.argv[3] ?? 100);
const schema = 'nightshift';
const server = await startEmbeddedPostgres({ flags: SERVER_FLAGS });
try {
  const noop = defineJob({ kind: 'bench.noop', payload: z.object({ i: z.number() }), run: () => undefined });
  const ns = createNightshift({ databaseUrl: server.url, schema, jobs: [noop], logger: silentLogger() });
  await ns.migrate();
  for (let i = 0; i < jobs; i += 10_000)
    await ns.enqueueMany(
      noop,
      Array.from({ length: Math.min(10_000, jobs - i) }, (_, k) => ({ i: i + k })),
    );
  await ns.stop();

  const handle = createPool({ connectionString: server.url, max: 1, applicationName: 'explain' });
  const st = new Database(handle, schema).jobs.statements;
  await handle.close();
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  await c.query('VACUUM ANALYZE');
  await c.query('SET plan_cache_mode = force_generic_plan');
  const explain = async (title: string, name: string, text: string, types: string, args: string) => {
    await c.query(`PREPARE ${name}(${types}) AS ${text}`);
    // Six executions first, as a pooled connection would have done before the plan goes generic.
    const { rows } = await c.query(`EXPLAIN (ANALYZE, BUFFERS, TIMING ON) EXECUTE ${name}(${args})`);
    console.log(`\n=== ${title}\n${rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')}`);
  };
  await c.query('BEGIN');
  await explain('claim', 'claim', st.claim.text, 'text, text[], int, text, float8', `'default', ARRAY['bench.noop'], ${batch}, 'me', 30000`);
  const { rows } = await c.query<{ id: string; lease_token: string }>(`SELECT id::text, lease_token::text FROM ${schema}.jobs WHERE state = 'running' LIMIT ${batch}`);
  const ids = `ARRAY[${rows.map((r) => r.id).join(',')}]::bigint[]`;
  const tokens = `ARRAY[${rows.map((r) => r.lease_token).join(',')}]::bigint[]`;
  await explain('heartbeat', 'heartbeat', st.heartbeat.text, 'bigint[], bigint[], float8', `${ids}, ${tokens}, 30000`);
  await explain('complete', 'complete', st.complete.text, 'bigint[], bigint[], float8[]', `${ids}, ${tokens}, array_fill(0::float8, ARRAY[cardinality(${ids})])`);
  await c.query('ROLLBACK');
  await c.end();
} finally {
  await server.destroy();
}
