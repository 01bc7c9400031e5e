/**
 * Is a worker's memory growth a leak? Drains 6 rounds of 50,000 no-op jobs at concurrency 50 and
 * prints the live heap after a full collection following each round. Run:
 * `node --expose-gc --import tsx bench/live-heap.ts`.
 */
import { z } from 'zod';
import { startEmbeddedPostgres } from '../src/dev/embedded-postgres.js';
import { createNightshift, defineJob } from '../src/index.js';
import { silentLogger } from '../src/telemetry/logger.js';

const pg = await startEmbeddedPostgres();
let done = 0;
const noop = defineJob({
  kind: 'noop',
  payload: z.object({ i: z.number() }),
  run: async () => {
    done++;
  },
});
const ns = createNightshift({ databaseUrl: pg.url, jobs: [noop], concurrency: 50, logger: silentLogger() });
await ns.migrate();
await ns.start();
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
for (let round = 1; round <= 6; round++) {
  const target = done + 50_000;
  for (let k = 0; k < 5; k++)
    await ns.enqueueMany(
      noop,
      Array.from({ length: 10_000 }, (_, i) => ({ i })),
    );
  while (done < target) await new Promise((r) => setTimeout(r, 50));
  gc();
  gc();
  const m = process.memoryUsage();
  console.log(`round ${round}: done ${done}, heapUsed after gc ${(m.heapUsed / 1e6).toFixed(1)} MB, rss ${(m.rss / 1e6).toFixed(1)} MB`);
}
await ns.stop();
await pg.destroy();
