// Seed 000/001 (the lottery back office's bo-engine) rebuilt on nightshift: every row of its worker
// table in one config — a 30 s daemon, jobs every 2, 5 and 15 minutes, the 00:00 settlement with
// its day id, 00:30 + 12:00 and 10:00 UTC, and the monthly bonus — correct on any number of
// replicas. The settlement is a pipeline (settlement.ts). `BO_FAST=1` turns the minute cadences
// into seconds and the leases into a few seconds (for the multi-process test).
import { z } from 'zod';
import { defineConfig, defineDaemon, defineJob, defineSchedule, type JobContext } from '../../src/index.js';
import { alertJob, endedDay, settlementPipeline } from './settlement.js';

const schema = process.env.NS_SCHEMA ?? 'nightshift';
const fast = process.env.BO_FAST === '1';
const q = `"${schema}"`;

/** Every run leaves one row: which job, which process, under which lease token. */
async function record(ctx: JobContext, payload: unknown): Promise<void> {
  await ctx.db.query({
    text: `INSERT INTO ${q}.bo_runs (job_id, kind, payload, pid, token) VALUES ($1, $2, $3, $4, $5)`,
    values: [ctx.jobId, ctx.kind, JSON.stringify(payload), process.pid, ctx.leaseToken],
  });
}

const none = z.object({});
const worker = (kind: string, queue = 'default') => defineJob({ kind, payload: none, queue, run: (p, ctx) => record(ctx, p) });

// Seed 001's log retention: recovery 14 days (settlement: 30, the pipeline's own retention).
const FOURTEEN_DAYS = 14 * 86_400_000;
const recovery = (kind: string) =>
  defineJob({ kind, payload: none, queue: 'recovery', retention: { completed: FOURTEEN_DAYS, discarded: FOURTEEN_DAYS }, run: (p, ctx) => record(ctx, p) });

const jobs = {
  recoverBuyIntents: recovery('recover-buy-intents'),
  resolvePendingClaims: recovery('resolve-pending-claims'),
  updatePotSizes: worker('update-pot-sizes'),
  watchdog: worker('watchdog'),
  awardAffiliateBonus: worker('award-affiliate-bonus', 'bonus'),
  reEngagementEmail: worker('re-engagement-email', 'bonus'),
  awardLeaderboardBonus: worker('award-leaderboard-bonus', 'bonus'),
  settlementAlert: alertJob(schema),
};

const settlement = settlementPipeline({
  schema,
  artifactsRoot: process.env.BO_ARTIFACTS ?? 'artifacts',
  settleMs: Number(process.env.BO_SETTLE_MS ?? (fast ? 3_000 : 5)),
  updatePotSizes: jobs.updatePotSizes,
  alert: jobs.settlementAlert,
});

const every = (minutes: number) => (fast ? `*/${minutes} * * * * *` : `*/${minutes} * * * *`);

const schedules = [
  // 0 0 * * *: settle the day that just ended; its id is days since 1970-01-01. After downtime,
  // every missed night within three days is settled once, oldest first.
  settlement.schedule({ name: 'settle', cron: '0 0 * * *', key: ({ at }) => endedDay(at), catchUp: { all: true, window: '3d' } }),
  defineSchedule({ name: 'recover-buy-intents', cron: every(2), job: jobs.recoverBuyIntents }),
  defineSchedule({ name: 'resolve-pending-claims', cron: every(2), job: jobs.resolvePendingClaims }),
  defineSchedule({ name: 'update-pot-sizes', cron: every(15), job: jobs.updatePotSizes }),
  defineSchedule({ name: 'watchdog', cron: every(5), job: jobs.watchdog, catchUp: 'none' }),
  defineSchedule({ name: 'affiliate-bonus-night', cron: '30 0 * * *', job: jobs.awardAffiliateBonus }),
  defineSchedule({ name: 'affiliate-bonus-noon', cron: '0 12 * * *', job: jobs.awardAffiliateBonus }),
  defineSchedule({ name: 're-engagement-email', cron: '0 10 * * *', job: jobs.reEngagementEmail, enqueue: { maxAgeMs: 2 * 3_600_000 } }),
  defineSchedule({ name: 'leaderboard-bonus', cron: '0 1 1 * *', job: jobs.awardLeaderboardBonus, catchUp: { all: true, window: '35d' } }),
];

// refreshSeeds: the 30 s loop that ran under a PID file, restarted by cron every minute. Now an
// elected daemon: one live holder in the fleet, failover when it dies, and every write fenced by
// its token so a holder that was frozen and wakes up late cannot rotate seeds twice.
const refreshSeeds = defineDaemon({
  name: 'refresh-seeds',
  everyMs: fast ? 200 : 30_000,
  ttlMs: fast ? 1_500 : 15_000,
  run: async (ctx) => {
    try {
      await ctx.transaction((tx) =>
        tx.query({ text: `INSERT INTO ${q}.bo_seed_rotations (token, pid) VALUES ($1, $2)`, values: [ctx.fencingToken, process.pid] }),
      );
    } catch (err) {
      if ((err as { code?: string }).code === 'NS_FENCED') {
        await ctx.db.query({ text: `INSERT INTO ${q}.bo_refusals (token, pid) VALUES ($1, $2)`, values: [ctx.fencingToken, process.pid] });
      }
      throw err;
    }
  },
});

export default defineConfig({
  database: { schema },
  jobs: Object.values(jobs),
  pipelines: [settlement],
  schedules,
  daemons: [refreshSeeds],
  roles: {
    // Everything on every replica is the simple deployment; roles split it when wanted.
    scheduler: { schedules: schedules.map((s) => s.name) },
    workers: { queues: ['default', 'recovery', 'settlement', 'bonus'] },
    seeds: { daemons: ['refresh-seeds'] },
  },
  worker: { concurrency: 5, pollIntervalMs: 200, shutdownGraceMs: 5_000, ...(fast ? { leaseMs: 3_000, heartbeatMs: 500, maintenanceIntervalMs: 250 } : {}) },
});
