/**
 * The worker's own cost per job: CPU time (user + system) of this one process while its worker
 * drains pre-enqueued no-op jobs, the database's CPU excluded. Unlike jobs/s it hardly moves with
 * the load of other processes on the machine, so a change to the JavaScript of the hot path (the
 * claim loop, the runner, the batched completion) can be judged on a shared machine.
 *
 *   npx tsx bench/worker-cpu.ts [--jobs 20000] [--rounds 3] [--concurrency 10]
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { z } from 'zod';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { createNightshift, defineJob } from '../src/index.js';
import { silentLogger } from '../src/telemetry/logger.js';
import { SERVER_FLAGS } from './server.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '20000' },
    rounds: { type: 'string', default: '3' },
    concurrency: { type: 'string', default: '10' },
  },
});
const jobs = Number(values.jobs);
const concurrency = Number(values.concurrency);

const server = await startEmbeddedPostgres({ flags: SERVER_FLAGS });
try {
  for (let round = 1; round <= Number(values.rounds); round++) {
    const schema = `wc_${round}`;
    const noop = defineJob({ kind: 'bench.noop', payload: z.object({ i: z.number() }), run: () => undefined });
    const producer = createNightshift({ databaseUrl: server.url, schema, jobs: [noop], logger: silentLogger() });
    await producer.migrate();
    for (let i = 0; i < jobs; i += 10_000)
      await producer.enqueueMany(
        noop,
        Array.from({ length: Math.min(10_000, jobs - i) }, (_, k) => ({ i: i + k })),
      );
    await producer.stop();
    const admin = new pg.Client({ connectionString: server.url });
    await admin.connect();
    await admin.query(`VACUUM ANALYZE "${schema}".jobs`);
    const worker = createNightshift({ databaseUrl: server.url, schema, jobs: [noop], logger: silentLogger(), concurrency, maintenance: false, registerProcess: false });
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
    await worker.stop();
    await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
    await admin.end();
    const perJob = (cpu.user + cpu.system) / jobs;
    console.log(
      `round ${round}: ${jobs} jobs, concurrency ${concurrency}: worker CPU ${perJob.toFixed(1)} µs/job (user ${(cpu.user / jobs).toFixed(1)}, system ${(cpu.system / jobs).toFixed(1)}), ${Math.round(jobs / (wallMs / 1000))} jobs/s`,
    );
  }
} finally {
  await server.destroy();
}
