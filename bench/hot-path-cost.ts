/**
 * The database's side of nightshift's hot path, without a worker: on one connection, claim a batch
 * with the worker's prepared claim statement, then complete it with the completion statement, until
 * the queue is empty; prints jobs/s and the time per job of each statement. Runs the same work
 * after each `--sql` variant (DDL applied to a fresh schema), so a schema change can be judged on
 * the database cost alone.
 *
 *   npx tsx bench/hot-path-cost.ts [--jobs 50000] [--batch 500] [--variant 'name=SQL; SQL' ...] [--limits]
 *     [--limit-set all|concurrency|rate] [--running 0]
 *
 * --limits runs each variant a second time with fleet-wide limits on the kind that the run never
 * hits (a global concurrency limit, one per key over 100 keys, a rate limit), claimed by the
 * limited claim: the database cost of flow control when it does not hold anything back.
 * --limit-set picks the limits as the drain bench's BENCH_LIMITS does (default: all three).
 * --running N claims N jobs first and keeps them running through the measure, as a worker's
 * running and held jobs are during a drain (the limited claim's counts see them).
 *
 * SQL in a variant may name the schema as {s}.
 */
import { readFileSync } from 'node:fs';
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
    jobs: { type: 'string', default: '50000' },
    batch: { type: 'string', default: '500' },
    variant: { type: 'string', multiple: true, default: [] },
    rounds: { type: 'string', default: '2' },
    limits: { type: 'boolean', default: false },
    'limit-set': { type: 'string', default: 'all' },
    running: { type: 'string', default: '0' },
  },
});
const jobs = Number(values.jobs);
const batch = Number(values.batch);
const base: [string, string][] = [['as migrated', ''], ...values.variant!.map((v) => v.split(/=(.*)/s).slice(0, 2) as [string, string])];
const variants: [string, string, boolean][] = base.flatMap(([n, q]) =>
  values.limits ? [[n, q, false] as [string, string, boolean], [`${n}, limited`, q, true] as [string, string, boolean]] : [[n, q, false] as [string, string, boolean]],
);
const set = values['limit-set']!;
if (!['all', 'concurrency', 'rate'].includes(set)) throw new Error(`--limit-set must be all, concurrency or rate, got ${set}`);
const running = Number(values.running);
const NOT_HIT = {
  ...(set !== 'rate' ? { concurrency: [{ limit: 100_000 }, { limit: 10_000, key: (p: { i: number }) => String(p.i % 100) }] } : {}),
  ...(set !== 'concurrency' ? { rateLimit: { limit: 1_000_000, per: 1_000 } } : {}),
};

const server = await startEmbeddedPostgres({ flags: SERVER_FLAGS });
try {
  for (let round = 1; round <= Number(values.rounds); round++) {
    for (const [name, sql, limited] of variants) {
      const schema = `hp_${round}_${name.replace(/\W+/g, '_').toLowerCase()}`;
      const noop = defineJob({ kind: 'bench.noop', payload: z.object({ i: z.number() }), run: () => undefined, ...(limited ? NOT_HIT : {}) });
      const ns = createNightshift({ databaseUrl: server.url, schema, jobs: [noop], logger: silentLogger() });
      await ns.migrate();
      const admin = new pg.Client({ connectionString: server.url });
      await admin.connect();
      if (sql) await admin.query(sql.replaceAll('{s}', `"${schema}"`));
      const insertLsn = (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l;
      const t0 = performance.now();
      for (let i = 0; i < jobs; i += 10_000)
        await ns.enqueueMany(
          noop,
          Array.from({ length: Math.min(10_000, jobs - i) }, (_, k) => ({ i: i + k })),
        );
      const insertMs = performance.now() - t0;
      const insertWal = Number((await admin.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS b', [insertLsn])).rows[0].b);
      await ns.stop();
      await admin.query(`VACUUM ANALYZE "${schema}".jobs`);
      await admin.query('CHECKPOINT');

      const pool = createPool({ connectionString: server.url, max: 1, applicationName: 'hot-path' });
      const db = new Database(pool, schema);
      const plan = limited ? limitPlan([noop], []) : undefined;
      if (limited) await db.limits.register(noop.limits.map(limitRow));
      let claimMs = 0;
      let completeMs = 0;
      let done = 0;
      const claimOnce = (n: number) =>
        limited
          ? pool.pool.query<{ id: string | null; lease_token: string }>({
              ...db.limits.statements.claim,
              values: ['default', ['bench.noop'], n, 'cost', 30_000, 0, plan!.names, JSON.stringify(plan!.defaults), plan!.queueKeys, !plan!.rate],
            })
          : pool.pool.query<{ id: string | null; lease_token: string }>({ ...db.jobs.statements.claim, values: ['default', ['bench.noop'], n, 'cost', 30_000] });
      // Jobs that stay running through the measure (claimed, never completed), not counted in it.
      if (running > 0) await claimOnce(running);
      const lsn0 = (await admin.query('SELECT pg_current_wal_lsn() AS l')).rows[0].l;
      // CPU time of the one backend doing the work: robust to other load on the machine.
      const backend = (await pool.pool.query('SELECT pg_backend_pid() AS p')).rows[0].p as number;
      const cpu0 = backendCpuMs(backend);
      const start = performance.now();
      for (;;) {
        const c0 = performance.now();
        const r = await claimOnce(batch);
        r.rows = r.rows.filter((x) => x.id !== null);
        claimMs += performance.now() - c0;
        if (r.rows.length === 0) break;
        const c1 = performance.now();
        await pool.pool.query({ ...db.jobs.statements.complete, values: [r.rows.map((x) => x.id!), r.rows.map((x) => x.lease_token), r.rows.map(() => 0)] });
        completeMs += performance.now() - c1;
        done += r.rows.length;
      }
      const total = performance.now() - start;
      const wal = Number((await admin.query('SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1) AS b', [lsn0])).rows[0].b);
      const cpu = backendCpuMs(backend) - cpu0;
      await pool.close();
      const size = (await admin.query(`SELECT pg_size_pretty(pg_total_relation_size('"${schema}".jobs')) AS s`)).rows[0].s;
      await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
      await admin.end();
      console.log(
        `${name.padEnd(28)} round ${round}: ${Math.round(done / (total / 1000))} jobs/s; per job: claim ${((claimMs * 1000) / done).toFixed(1)} µs, ` +
          `complete ${((completeMs * 1000) / done).toFixed(1)} µs, backend CPU ${((cpu * 1000) / done).toFixed(1)} µs, WAL ${Math.round(wal / done)} B; enqueue ${Math.round(jobs / (insertMs / 1000))} jobs/s, WAL ${Math.round(insertWal / jobs)} B; table+indexes after ${size}`,
      );
    }
  }
} finally {
  await server.destroy();
}

/** User + system CPU of a process in ms (Linux /proc; NaN elsewhere). */
function backendCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
}
