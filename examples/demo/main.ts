// `npm start`: a short tour of nightshift on an embedded PostgreSQL (no set-up; DATABASE_URL overrides).
// It migrates, enqueues jobs of several kinds, runs a worker until they settle, and shows what happened.
import { z } from 'zod';
import { createNightshift, defineJob, hold, type JobRecord } from '../../src/index.js';
import { startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';
import { silentLogger } from '../../src/telemetry/logger.js';

const log = (line = '') => process.stdout.write(`${line}\n`);

const sendWelcome = defineJob({
  kind: 'send-welcome-email',
  payload: z.object({ userId: z.number(), email: z.string().email() }),
  queue: 'mail',
  run: async ({ email }, ctx) => {
    ctx.log.info({ to: email.replace(/^.*@/, '*@') }, 'welcome mail sent');
  },
});

let providerCalls = 0;
const syncPot = defineJob({
  kind: 'sync-pot-sizes',
  payload: z.object({ pools: z.number().int() }),
  backoff: { initialMs: 100, jitter: 0 },
  run: async () => {
    providerCalls++;
    if (providerCalls < 3) throw new Error(`RPC timeout (call ${providerCalls})`);
  },
});

const charge = defineJob({
  kind: 'open-escrow',
  payload: z.object({ betId: z.string(), amount: z.number().positive() }),
  delivery: 'at-most-once',
  run: async ({ amount }) => {
    if (amount > 1_000) return hold('amount over the manual-review threshold');
    return undefined;
  },
});

const settle = defineJob({
  kind: 'settle-day',
  payload: z.object({ dayId: z.number().int() }),
  run: async ({ dayId }, ctx) => {
    await ctx.enqueue(sendWelcome, { userId: dayId, email: `winner-${dayId}@example.com` });
  },
});

async function main(): Promise<void> {
  let pg: Awaited<ReturnType<typeof startEmbeddedPostgres>> | undefined;
  let url = process.env.DATABASE_URL;
  if (!url) {
    log('starting an embedded PostgreSQL (first run unpacks it, a few seconds)…');
    pg = await startEmbeddedPostgres();
    url = pg.url;
  }
  const ns = createNightshift({ databaseUrl: url, schema: 'nightshift_demo', jobs: [sendWelcome, syncPot, charge, settle], pollIntervalMs: 200, logger: silentLogger() });
  try {
    const m = await ns.migrate();
    log(`migrated schema "${m.schema}" from ${m.from} to ${m.to}`);
    const enqueued: string[] = [];
    const welcome = await ns.enqueueMany(sendWelcome, [1, 2, 3].map((userId) => ({ userId, email: `user${userId}@example.com` })));
    enqueued.push(...welcome.map((r) => r.id));
    enqueued.push((await ns.enqueue(syncPot, { pools: 5 }, { dedupeKey: 'pot-sync' })).id);
    const again = await ns.enqueue(syncPot, { pools: 5 }, { dedupeKey: 'pot-sync' });
    log(`a second pot sync with the same dedupe key was absorbed: deduped=${again.deduped}`);
    enqueued.push((await ns.enqueue(charge, { betId: 'b-1', amount: 20 })).id);
    enqueued.push((await ns.enqueue(charge, { betId: 'b-2', amount: 5_000 })).id);
    enqueued.push((await ns.enqueue(settle, { dayId: 20500 })).id);
    try {
      await ns.enqueue(sendWelcome, { userId: 9, email: 'not-an-email' });
    } catch (err) {
      log(`an invalid payload is refused before anything is written: ${(err as { code: string }).code}`);
    }
    log(`enqueued ${enqueued.length} jobs; starting a worker…`);
    await ns.start();
    const settled = (j: JobRecord) => ['completed', 'held', 'discarded'].includes(j.state);
    for (;;) {
      const jobs = await Promise.all(enqueued.map((id) => ns.getJob(id)));
      if (jobs.every(settled)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const jobs = await ns.listJobs({ limit: 20 });
    log();
    log('id  kind                 queue    state      attempts  note');
    for (const j of jobs.reverse()) {
      const note = j.reason ?? (j.errors.length ? `${j.errors.length} failed attempt(s) before success` : '');
      log(`${j.id.padEnd(3)} ${j.kind.padEnd(20)} ${j.queue.padEnd(8)} ${j.state.padEnd(10)} ${String(j.attempt).padEnd(9)} ${note}`);
    }
    log();
    log('the held escrow waits for an operator: `nightshift jobs resolve <id> --as completed|failed|retry --reason …`');
  } finally {
    await ns.stop();
    await pg?.destroy();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
