/**
 * The plan of the worker's idle poll (`queue_due`, src/db/queues.ts) on a big table: `jobs` rows
 * in 200 queues, a share of them due and the rest delayed, plus a big backlog in one more queue;
 * EXPLAIN (ANALYZE, BUFFERS) of the generic plan for all 200 queues (the ones with and without
 * due jobs), as a process serving them runs it once per poll interval.
 *
 *   npx tsx bench/explain-idle-poll.ts [rows=1000000]
 */
import pg from 'pg';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { createNightshift } from '../src/index.js';
import { silentLogger } from '../src/telemetry/logger.js';
import { SERVER_FLAGS } from './server.js';

const rows = Number(process.argv[2] ?? 1_000_000);
const schema = 'nightshift';
const server = await startEmbeddedPostgres({ flags: SERVER_FLAGS });
try {
  const ns = createNightshift({ databaseUrl: server.url, schema, logger: silentLogger() });
  await ns.migrate();
  await ns.stop();
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  // Queues q0..q199: q0..q99 hold only delayed jobs (an hour out), q100..q199 nothing; one deep
  // backlog queue 'big' that the process does not serve, due now.
  await c.query(
    `INSERT INTO ${schema}.jobs (kind, queue, payload, run_at)
     SELECT 'k', CASE WHEN g % 10 = 0 THEN 'q' || (g / 10 % 100) ELSE 'big' END, '{}'::jsonb,
            CASE WHEN g % 10 = 0 THEN now() + interval '1 hour' ELSE now() END
     FROM generate_series(1, $1) g`,
    [rows],
  );
  await c.query('VACUUM ANALYZE');
  await c.query('SET plan_cache_mode = force_generic_plan');
  const text = `SELECT q.name FROM unnest($1::text[]) AS q(name)
WHERE EXISTS (SELECT 1 FROM ${schema}.jobs j WHERE j.state = 'available' AND j.queue = q.name AND j.run_at <= now() AND j.kind = ANY($2::text[]))
  AND NOT EXISTS (SELECT 1 FROM ${schema}.queues p WHERE p.name = q.name AND p.paused)`;
  await c.query(`PREPARE due(text[], text[]) AS ${text}`);
  const queues = `ARRAY[${Array.from({ length: 200 }, (_, i) => `'q${i}'`).join(',')}]::text[]`;
  for (let i = 0; i < 6; i++) await c.query(`EXECUTE due(${queues}, ARRAY['k'])`);
  const { rows: plan } = await c.query(`EXPLAIN (ANALYZE, BUFFERS, TIMING ON) EXECUTE due(${queues}, ARRAY['k'])`);
  console.log(`=== queue_due over 200 queues, ${rows.toLocaleString('en-US')} rows in jobs (generic plan)\n${plan.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')}`);
  await c.end();
} finally {
  await server.stop();
}
