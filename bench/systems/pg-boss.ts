import PgBoss from 'pg-boss';
import type { BenchPayload, Producer, RunningWorker, SystemAdapter } from './system.js';

const QUEUE = 'noop';
const BATCH = 100;

/**
 * pg-boss 10 tuned as its maintainer recommends for v10, which removed teamSize/teamConcurrency:
 * concurrency comes from calling work() several times (one polling loop each) and from running a
 * fetched batch concurrently (Promise.allSettled). Each of `concurrency` loops fetches up to 100
 * jobs per poll at the shortest polling interval allowed (0.5 s). pg-boss 10 has no LISTEN/NOTIFY,
 * so polling is its only wake-up. Up to 100 × concurrency jobs may be in flight, which favours it.
 */
function options(url: string, concurrency: number, worker: boolean): PgBoss.ConstructorOptions {
  return {
    connectionString: url,
    max: Math.max(10, concurrency + 2),
    migrate: false,
    // A producer-only instance runs no maintenance; a worker keeps pg-boss's defaults.
    ...(worker ? {} : { supervise: false, schedule: false }),
  };
}

/** pg-boss 10 with batch fetching at the minimum polling interval. */
export const pgBossAdapter: SystemAdapter = {
  id: 'pg-boss',
  label: 'pg-boss 10.4.2',
  settings: (concurrency) => ({
    'work() loops': String(concurrency),
    batchSize: String(BATCH),
    pollingIntervalSeconds: '0.5 (the minimum)',
    'pool max': String(Math.max(10, concurrency + 2)),
    other: 'no LISTEN/NOTIFY in v10 (polling only); batch run with Promise.allSettled; defaults otherwise (supervise on)',
  }),
  async migrate(url) {
    const boss = new PgBoss({ connectionString: url, supervise: false, schedule: false });
    boss.on('error', () => undefined);
    await boss.start();
    await boss.createQueue(QUEUE);
    await boss.stop({ graceful: false, wait: true });
  },
  pendingSql: `SELECT EXISTS (SELECT 1 FROM pgboss.job WHERE name = '${QUEUE}' AND state < 'completed') AS pending`,
  async producer(url): Promise<Producer> {
    const boss = new PgBoss({ ...options(url, 18, false) });
    boss.on('error', () => undefined);
    await boss.start();
    return {
      async enqueueBulk(payloads: BenchPayload[]) {
        await boss.insert(payloads.map((data) => ({ name: QUEUE, data })));
      },
      async enqueueOne(data: BenchPayload) {
        await boss.send(QUEUE, data);
      },
      close: () => boss.stop({ graceful: false, wait: true }),
    };
  },
  async startWorker(url, concurrency, hook): Promise<RunningWorker> {
    const boss = new PgBoss(options(url, concurrency, true));
    boss.on('error', () => undefined);
    await boss.start();
    for (let k = 0; k < concurrency; k++) {
      await boss.work<BenchPayload>(QUEUE, { batchSize: BATCH, pollingIntervalSeconds: 0.5 }, (jobs) => Promise.allSettled(jobs.map(async (job) => hook(job.data))));
    }
    return {
      async stop() {
        await boss.stop({ graceful: true, wait: true, timeout: 10_000 });
      },
    };
  },
};
