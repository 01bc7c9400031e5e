/**
 * The worker's own cost per job: CPU time (user + system) of this one process while its worker
 * drains pre-enqueued no-op jobs, and the database's (every `postgres` process on the machine:
 * run it alone, under the bench lock). Unlike jobs/s it hardly moves with the load of other
 * processes on the machine, so a change to the JavaScript of the hot path (the claim loop, the
 * runner, the batched completion) or to the claim's SQL can be judged on a shared machine.
 *
 * With --limits, each round drains twice, interleaved: the kind without limits, then with the
 * limited-drain bench's limits (a global concurrency limit and one per key, never hit).
 *
 *   npx tsx bench/worker-cpu.ts [--jobs 20000] [--rounds 3] [--concurrency 10] [--limits | --limited-only]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { z } from 'zod';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { createNightshift, defineJob } from '../src/index.js';
import { silentLogger } from '../src/telemetry/logger.js';
import { databaseCpuUs } from './cpu.js';
import { SERVER_FLAGS } from './server.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '10' },
    limits: { type: 'boolean', default: false },
    'limited-only': { type: 'boolean', default: false },
  },
});
const jobs = Number(values.jobs);
const concurrency = Number(values.concurrency);
const LIMITS = { concurrency: [{ limit: 100_000 }, { limit: 10_000, key: (p: { i: number }) => String(p.i % 100) }] };

async function drain(url: string, schema: string, limited: boolean): Promise<string> {
  const noop = defineJob({ kind: 'bench.noop', payload: z.object({ i: z.number() }), run: () => undefined, ...(limited ? LIMITS : {}) });
  const producer = createNightshift({ databaseUrl: url, schema, jobs: [noop], logger: silentLogger() });
  await producer.migrate();
  for (let i = 0; i < jobs; i += 10_000)
    await producer.enqueueMany(
      noop,
      Array.from({ length: Math.min(10_000, jobs - i) }, (_, k) => ({ i: i + k })),
    );
  await producer.stop();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`VACUUM ANALYZE "${schema}".jobs`);
  await admin.query('CHECKPOINT');
  const worker = createNightshift({ databaseUrl: url, schema, jobs: [noop], logger: silentLogger(), concurrency, maintenance: false, registerProcess: false });
  let claims = 0;
  let claimed = 0;
  worker.on((e) => {
    if (e.type !== 'worker.claimed') return;
    claims++;
    claimed += e.count;
  });
  const db0 = databaseCpuUs();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await worker.start();
  for (;;) {
    const { rows } = await admin.query(`SELECT EXISTS (SELECT 1 FROM "${schema}".jobs WHERE state IN ('available', 'running')) AS busy`);
    if (!rows[0].busy) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const db = databaseCpuUs() - db0;
  await worker.stop();
  await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
  await admin.end();
  const perJob = (cpu.user + cpu.system) / jobs;
  return `${limited ? 'limited  ' : 'unlimited'}: worker CPU ${perJob.toFixed(1)} µs/job (user ${(cpu.user / jobs).toFixed(1)}, system ${(cpu.system / jobs).toFixed(1)}), database CPU ${(db / jobs).toFixed(1)} µs/job, ${claims} claims of ${(claimed / claims).toFixed(1)} jobs on average, ${Math.round(jobs / (wallMs / 1000))} jobs/s`;
}

const server = await startEmbeddedPostgres({ flags: SERVER_FLAGS });
try {
  for (let round = 1; round <= Number(values.rounds); round++) {
    if (!values['limited-only']) console.log(`round ${round}: ${jobs} jobs, concurrency ${concurrency}: ${await drain(server.url, `wc_${round}`, false)}`);
    if (values.limits || values['limited-only']) console.log(`round ${round}: ${jobs} jobs, concurrency ${concurrency}: ${await drain(server.url, `wcl_${round}`, true)}`);
  }
} finally {
  await server.destroy();
}
