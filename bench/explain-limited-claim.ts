/**
 * Where the limited claim's time goes, statement by statement: on a queue of realistic size with
 * `--running` jobs already running (as a worker's running and held jobs are during a drain), one
 * `claim_limited` call runs under auto_explain with nested statements, so every statement of the
 * plpgsql function prints its plan with its actual time and buffers. In a transaction rolled back.
 *
 *   npx tsx bench/explain-limited-claim.ts [--jobs 20000] [--batch 50] [--running 200] [--limit-set concurrency|rate|all]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { z } from 'zod';
import { Database } from '../src/db/database.js';
import { createPool } from '../src/db/pool.js';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { createNightshift, defineJob } from '../src/index.js';
import { limitRow } from '../src/jobs/limits.js';
import { silentLogger } from '../src/telemetry/logger.js';
import { limitPlan } from '../src/worker/limit-plan.js';
import { SERVER_FLAGS } from './server.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '50' },
    running: { type: 'string', default: '200' },
    'limit-set': { type: 'string', default: 'concurrency' },
  },
});
const set = values['limit-set']!;
const NOT_HIT = {
  ...(set !== 'rate' ? { concurrency: [{ limit: 100_000 }, { limit: 10_000, key: (p: { i: number }) => String(p.i % 100) }] } : {}),
  ...(set !== 'concurrency' ? { rateLimit: { limit: 1_000_000, per: 1_000 } } : {}),
};
const schema = 'nightshift';
const server = await startEmbeddedPostgres({ flags: SERVER_FLAGS });
try {
  const noop = defineJob({ kind: 'bench.noop', payload: z.object({ i: z.number() }), run: () => undefined, ...NOT_HIT });
  const ns = createNightshift({ databaseUrl: server.url, schema, jobs: [noop], logger: silentLogger() });
  await ns.migrate();
  const jobs = Number(values.jobs);
  for (let i = 0; i < jobs; i += 10_000)
    await ns.enqueueMany(
      noop,
      Array.from({ length: Math.min(10_000, jobs - i) }, (_, k) => ({ i: i + k })),
    );
  await ns.stop();
  const handle = createPool({ connectionString: server.url, max: 1, applicationName: 'explain' });
  const db = new Database(handle, schema);
  await db.limits.register(noop.limits.map(limitRow));
  const plan = limitPlan([noop], [])!;
  const claim = (c: pg.Client, n: number) =>
    c.query({ text: db.limits.statements.claim.text, values: ['default', ['bench.noop'], n, 'me', 30000, 0, plan.names, JSON.stringify(plan.defaults), plan.queueKeys, !plan.rate] });
  await handle.close();
  const c = new pg.Client({ connectionString: server.url });
  await c.connect();
  if (Number(values.running) > 0) await claim(c, Number(values.running));
  await c.query('VACUUM ANALYZE');
  // Warm: a few claims rolled back, as a pooled connection would have run before.
  for (let i = 0; i < 3; i++) {
    await c.query('BEGIN');
    await claim(c, Number(values.batch));
    await c.query('ROLLBACK');
  }
  c.on('notice', (m) => console.log(`${m.message}\n`));
  await c.query("LOAD 'auto_explain'");
  await c.query(
    "SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; SET auto_explain.log_buffers = on; SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = 'notice'; SET auto_explain.log_timing = on",
  );
  await c.query('BEGIN');
  const t0 = performance.now();
  await claim(c, Number(values.batch));
  console.log(`claim of ${values.batch} with ${values.running} running: ${(performance.now() - t0).toFixed(2)} ms (under auto_explain)`);
  await c.query('ROLLBACK');
  await c.query('SET auto_explain.log_min_duration = -1');
  for (let i = 0; i < 5; i++) {
    await c.query('BEGIN');
    const t1 = performance.now();
    await claim(c, Number(values.batch));
    console.log(`claim of ${values.batch} with ${values.running} running: ${(performance.now() - t1).toFixed(2)} ms`);
    await c.query('ROLLBACK');
  }
  // The plain claim on the same table, for comparison (the worker's statement for an unlimited queue).
  const plain = (n: number) => c.query({ text: db.jobs.statements.claim.text, values: ['default', ['bench.noop'], n, 'me', 30000] });
  await c.query('BEGIN');
  const { rows } = await c.query({ text: `EXPLAIN (ANALYZE, BUFFERS) ${db.jobs.statements.claim.text}`, values: ['default', ['bench.noop'], Number(values.batch), 'me', 30000] });
  console.log(`\n=== plain claim\n${rows.map((r: Record<string, string>) => r['QUERY PLAN']).join('\n')}`);
  await c.query('ROLLBACK');
  for (let i = 0; i < 5; i++) {
    await c.query('BEGIN');
    const t1 = performance.now();
    await plain(Number(values.batch));
    console.log(`plain claim of ${values.batch}: ${(performance.now() - t1).toFixed(2)} ms`);
    await c.query('ROLLBACK');
  }
  await c.end();
} finally {
  await server.destroy();
}
