/**
 * What the dashboard costs the database with a large history: N finished jobs (default 1,000,000)
 * plus a few hundred unfinished ones, 30 days of aggregates, and 5 pages open at a 1 s refresh
 * (SSE, as browsers hold them). Prints the time the dashboard's queries took per second of wall
 * time (their sum over the run, as the pool saw it), and EXPLAIN (ANALYZE, BUFFERS) of every
 * distinct statement the pages ran, with its execution time. The server side too: the bench's own
 * embedded server loads pg_stat_statements, so the database time of each phase is the sum of
 * `total_exec_time` of the statements run in it (reset before it), with each statement's mean and
 * max, and the backends' active time from pg_stat_database.
 *
 *   npx tsx bench/dashboard-load.ts [finished=1000000] [seconds=20]
 */
import pg from 'pg';
import { createDashboard, serveDashboard } from '../src/dashboard/index.js';
import { HISTORY_COLUMNS } from '../src/db/jobs-run.js';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { createNightshift } from '../src/index.js';
import { silentLogger } from '../src/telemetry/logger.js';
import { SERVER_FLAGS } from './server.js';

const finished = Number(process.argv[2] ?? 1_000_000);
const seconds = Number(process.argv[3] ?? 20);
const schema = 'nightshift';
const server = await startEmbeddedPostgres({
  flags: [...SERVER_FLAGS, '-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all', '-c', 'pg_stat_statements.max=5000'],
});
const admin = new pg.Client({ connectionString: server.url });
await admin.connect();
try {
  const setup = createNightshift({ databaseUrl: server.url, schema, logger: silentLogger() });
  await setup.migrate();
  await setup.stop();
  const s = `"${schema}"`;
  console.log(`filling: ${finished} finished jobs…`);
  for (let i = 0; i < finished; i += 200_000) {
    const n = Math.min(200_000, finished - i);
    await admin.query(
      `INSERT INTO ${s}.jobs (kind, queue, state, payload, attempt, run_at, created_at, started_at, finished_at, errors)
       SELECT 'order.ship', 'q' || (g % 5), CASE WHEN g % 50 = 0 THEN 'discarded' ELSE 'completed' END::${s}.job_state,
              jsonb_build_object('orderId', 'o-' || g, 'customer', jsonb_build_object('id', 'c-' || (g % 1000))), 1,
              now() - interval '30 days' + g * interval '2 seconds', now() - interval '30 days' + g * interval '2 seconds',
              now() - interval '30 days' + g * interval '2 seconds', now() - interval '30 days' + g * interval '2 seconds' + interval '20 ms',
              CASE WHEN g % 50 = 0 THEN '[{"attempt":1,"at":"2026-01-01T00:00:00Z","kind":"error","message":"provider down"}]'::jsonb END
       FROM generate_series($1::int, $2::int) g`,
      [i, i + n - 1],
    );
  }
  // Where nightshift keeps finished jobs (migration 0008): moved into the history, by day.
  if ((await admin.query(`SELECT to_regclass($1) IS NOT NULL AS h`, [`${schema}.jobs_history`])).rows[0].h) {
    await admin.query(`SELECT ${s}.history_partitions_ensure(31, 3)`);
    await admin.query(`WITH moved AS (DELETE FROM ${s}.jobs WHERE finished_at IS NOT NULL RETURNING *)
      INSERT INTO ${s}.jobs_history (${HISTORY_COLUMNS}) SELECT ${HISTORY_COLUMNS} FROM moved`);
    // What autovacuum does soon after, in production: the moved rows' space in `jobs` is reusable.
    await admin.query(`VACUUM ANALYZE ${s}.jobs`);
    await admin.query(`ANALYZE ${s}.jobs_history`);
  }
  await admin.query(
    `INSERT INTO ${s}.jobs (kind, queue, state, payload, run_at) SELECT 'order.ship', 'q' || (g % 5), CASE WHEN g % 10 = 0 THEN 'held' ELSE 'available' END::${s}.job_state,
       jsonb_build_object('orderId', 'new-' || g), now() + (g % 3) * interval '1 minute' FROM generate_series(1, 500) g`,
  );
  // 2 days of minute rows and 35 days of hour rows, 5 queues × 1 kind (what maintenance keeps).
  await admin.query(
    `INSERT INTO ${s}.job_stats (width_s, bucket, queue, kind, writer, completed, failed, started, wait_ms_sum, run_ms_sum)
     SELECT 60, date_trunc('minute', now()) - m * interval '1 minute', 'q' || q, 'order.ship', '', 30, 1, 31, 310, 600
     FROM generate_series(0, 2 * 1440) m, generate_series(0, 4) q`,
  );
  await admin.query(
    `INSERT INTO ${s}.job_stats (width_s, bucket, queue, kind, writer, completed, failed, started, wait_ms_sum, run_ms_sum)
     SELECT 3600, date_trunc('hour', now()) - h * interval '1 hour', 'q' || q, 'order.ship', '', 1800, 60, 1860, 18600, 36000
     FROM generate_series(1, 35 * 24) h, generate_series(0, 4) q`,
  );
  await admin.query('VACUUM ANALYZE');
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
  const serverSide = await serverTime(admin);

  // The dashboard's own pool, wrapped to record each statement and the time it took.
  const pool = new pg.Pool({ connectionString: server.url, max: 4, statement_timeout: 5_000 });
  const seen = new Map<string, { values: unknown[]; count: number; ms: number }>();
  let queryMs = 0;
  const query = pool.query.bind(pool) as (c: unknown) => Promise<unknown>;
  (pool as unknown as { query: (c: { text: string; values?: unknown[] }) => Promise<unknown> }).query = async (c) => {
    const t0 = performance.now();
    try {
      return await query(c);
    } finally {
      const ms = performance.now() - t0;
      queryMs += ms;
      const e = seen.get(c.text) ?? { values: c.values ?? [], count: 0, ms: 0 };
      e.count++;
      e.ms += ms;
      seen.set(c.text, e);
    }
  };
  const api = createNightshift({ schema, pool, logger: silentLogger(), preparedStatements: false });
  const dashboard = createDashboard(api);
  const srv = await serveDashboard(dashboard, { port: 0 });
  const base = srv.url.replace(/\/$/, '');
  // One GET of the jobs search pages (not live: a person runs a search).
  await serverSide.reset();
  for (const q of ['/jobs?q=payload.orderId%3Ao-777777', '/jobs?state=discarded', '/jobs?queue=q1&since=1d', '/jobs/1']) await (await fetch(`${base}${q}`)).text();
  const searchMs = queryMs;
  const searchServer = await serverSide.read();
  queryMs = 0;
  await serverSide.reset();
  const pages = ['/', '/queues', '/schedules', '/processes', '/audit'];
  const aborts = pages.map(() => new AbortController());
  const started = performance.now();
  let updates = 0;
  await Promise.all(
    pages.map(async (p, i) => {
      const res = await fetch(`${base}/live?u=${encodeURIComponent(p)}&every=1000`, { signal: aborts[i]!.signal });
      const reader = res.body!.getReader();
      setTimeout(() => aborts[i]!.abort(), seconds * 1_000);
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          updates += (
            Buffer.from(value)
              .toString()
              .match(/event: update/g) ?? []
          ).length;
        }
      } catch {
        // aborted at the end of the run
      }
    }),
  );
  const wall = (performance.now() - started) / 1_000;
  const liveServer = await serverSide.read();
  console.log(`\n${finished.toLocaleString('en')} finished jobs; 5 pages open at 1 s for ${wall.toFixed(1)} s: ${updates} updates sent`);
  console.log(`dashboard query time: ${(queryMs / wall).toFixed(1)} ms per second of wall time (${(queryMs / wall / 10).toFixed(2)} % of one core)`);
  console.log(`one GET each of 4 search/detail pages: ${searchMs.toFixed(0)} ms of queries in all`);
  console.log('\n=== server side (pg_stat_statements total_exec_time; pg_stat_database active_time)');
  console.log(
    `live pages: ${(liveServer.execMs / wall).toFixed(1)} ms of execution per second of wall time (${liveServer.calls} statements, ${(liveServer.calls / wall).toFixed(1)}/s; backends active ${(liveServer.activeMs / wall).toFixed(1)} ms/s; ${liveServer.blocksHit} blocks hit, ${liveServer.blocksRead} read)`,
  );
  console.log(`search/detail GETs: ${searchServer.execMs.toFixed(1)} ms of execution in all (${searchServer.calls} statements)`);
  for (const [phase, r] of [
    ['live pages', liveServer],
    ['search/detail GETs', searchServer],
  ] as const) {
    console.log(`\n${phase}: statements by total execution time (ms: total, mean, max; calls)`);
    for (const st of r.top) console.log(`${st.total.toFixed(1).padStart(9)} ${st.mean.toFixed(2).padStart(8)} ${st.max.toFixed(2).padStart(8)} ${String(st.calls).padStart(5)}  ${st.query}`);
  }
  await srv.close();
  await api.stop();
  await pool.end();

  console.log('\n=== EXPLAIN (ANALYZE, BUFFERS) of every statement the pages ran');
  for (const [text, e] of seen) {
    if (!/^\s*(WITH|SELECT)/i.test(text) || /pg_backend_pid|to_regclass|set_config/.test(text)) continue;
    const { rows } = await admin.query(`EXPLAIN (ANALYZE, BUFFERS) ${text}`, e.values);
    const plan = rows.map((r: Record<string, string>) => r['QUERY PLAN']);
    const exec = plan.find((l) => l?.startsWith('Execution Time')) ?? '';
    console.log(`\n--- ${exec} (ran ${e.count}×, mean ${(e.ms / e.count).toFixed(1)} ms)\n${text.replace(/\s+/g, ' ').slice(0, 240)}\n${plan.slice(0, 12).join('\n')}`);
  }
} finally {
  await admin.end();
  await server.stop();
}

/** The database's own account of a phase: reset before it, read after (the bench's statements on pg_stat_* left out). */
async function serverTime(db: pg.Client) {
  const own = `query !~* '(pg_stat_statements|pg_stat_database|pg_stat_force_next_flush)'`;
  let before = { active: 0, hit: 0, read: 0 };
  const database = async () => {
    await db.query('SELECT pg_stat_force_next_flush()');
    const { rows } = await db.query(`SELECT coalesce(sum(active_time), 0)::float8 AS active, coalesce(sum(blks_hit), 0)::float8 AS hit, coalesce(sum(blks_read), 0)::float8 AS read FROM pg_stat_database`);
    return rows[0] as { active: number; hit: number; read: number };
  };
  return {
    async reset() {
      await db.query('SELECT pg_stat_statements_reset()');
      before = await database();
    },
    async read() {
      // Other backends flush their counters at most every second (PGSTAT_MIN_INTERVAL) once idle.
      await new Promise((r) => setTimeout(r, 1_500));
      const after = await database();
      const { rows } = await db.query(`SELECT query, calls::int, total_exec_time AS total, mean_exec_time AS mean, max_exec_time AS max FROM pg_stat_statements WHERE ${own} ORDER BY total_exec_time DESC`);
      const all = rows as { query: string; calls: number; total: number; mean: number; max: number }[];
      return {
        execMs: all.reduce((n, r) => n + r.total, 0),
        calls: all.reduce((n, r) => n + r.calls, 0),
        activeMs: after.active - before.active,
        blocksHit: after.hit - before.hit,
        blocksRead: after.read - before.read,
        top: all.slice(0, 12).map((r) => ({ ...r, query: r.query.replace(/\s+/g, ' ').slice(0, 140) })),
      };
    },
  };
}
