// Seed 000/001 (the lottery back office's bo-engine) rebuilt on nightshift: every row of its worker
// table in one config — a 30 s daemon, jobs every 2 and 15 minutes, the 00:00 settlement with
// its day id, 00:30 + 12:00 and 10:00 UTC, and the monthly bonus — correct on any number of
// replicas. The settlement is a pipeline (settlement.ts). The cron watchdog (`watchdog/run.ts`
// every 5 minutes, alerts in `watchdog_alerts`, Telegram) is now checks: stuck buy intents, the
// settlement not done by 01:00, a stale pot sync, and nightshift's built-ins, alerting through the
// Telegram Bot API. `BO_FAST=1` turns the minute cadences into seconds and the leases into a few
// seconds (for the multi-process test).
import { z } from 'zod';
import { defineCheck, defineConfig, defineDaemon, defineJob, defineSchedule, telegramNotifier, type JobContext } from '../../src/index.js';
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
const recovery = (kind: string) => defineJob({ kind, payload: none, queue: 'recovery', retention: { completed: FOURTEEN_DAYS, discarded: FOURTEEN_DAYS }, run: (p, ctx) => record(ctx, p) });

const jobs = {
  recoverBuyIntents: recovery('recover-buy-intents'),
  resolvePendingClaims: recovery('resolve-pending-claims'),
  updatePotSizes: worker('update-pot-sizes'),
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
      await ctx.transaction((tx) => tx.query({ text: `INSERT INTO ${q}.bo_seed_rotations (token, pid) VALUES ($1, $2)`, values: [ctx.fencingToken, process.pid] }));
    } catch (err) {
      if ((err as { code?: string }).code === 'NS_FENCED') {
        await ctx.db.query({ text: `INSERT INTO ${q}.bo_refusals (token, pid) VALUES ($1, $2)`, values: [ctx.fencingToken, process.pid] });
      }
      throw err;
    }
  },
});

const DAY_MS = 86_400_000;

// The checks of the old watchdog/run.ts. Ages are judged against the tick (ctx.at), so a late run
// judges the instant it stands for.
const minutes = (n: number) => (fast ? n * 1_000 : n * 60_000);
const count = async (ctx: { db: JobContext['db'] }, text: string, values: unknown[]) => (await ctx.db.query({ text, values })).rows[0] as { n: number; newest: Date | null };

const checks = [
  // Buy intents left pending mean recover-buy-intents (every 2 min) is not keeping up or failing.
  defineCheck({
    name: 'stuck-buy-intents',
    every: fast ? '5s' : '5m',
    description: 'no buy intent stays pending for more than 10 minutes',
    run: async (ctx) => {
      const { n } = await count(ctx, `SELECT count(*)::int AS n FROM ${q}.bo_buy_intents WHERE status = 'pending' AND created_at < $1::timestamptz - $2::float8 * interval '1 millisecond'`, [
        ctx.at,
        minutes(10),
      ]);
      if (n === 0) return { status: 'ok', message: 'no buy intent pending for more than 10 minutes' };
      return {
        status: n >= 20 ? 'critical' : 'warning',
        message: `${n} buy intents pending for more than 10 minutes: run the recovery now (nightshift schedules trigger recover-buy-intents) and read its last runs (nightshift jobs list --kind recover-buy-intents)`,
        details: { pending: n },
      };
    },
  }),
  // The day that ended at midnight must be settled by 01:00; checked every 5 minutes from then on,
  // so the alert resolves soon after a rerun.
  defineCheck({
    name: 'settlement-done',
    cron: '*/5 1-23 * * *',
    description: 'the day that ended at midnight is settled by 01:00 UTC',
    run: async (ctx) => {
      const dayId = Math.floor(ctx.at.getTime() / DAY_MS) - 1;
      const day = new Date(dayId * DAY_MS).toISOString().slice(0, 10);
      const { n } = await count(ctx, `SELECT count(*)::int AS n FROM ${q}.pipeline_runs WHERE pipeline = 'settlement' AND key = $1 AND state = 'succeeded' AND NOT dry_run`, [String(dayId)]);
      if (n > 0) return { status: 'ok', message: `day ${dayId} (${day}) is settled` };
      return {
        status: 'critical',
        message: `the settlement of day ${dayId} (${day}) was not done by 01:00 UTC: see nightshift pipelines show settlement ${dayId}, then rerun it: nightshift pipelines rerun settlement ${dayId}`,
        details: { dayId },
      };
    },
  }),
  // update-pot-sizes runs every 15 minutes: its newest run older than that (plus slack) is stale.
  defineCheck({
    name: 'pot-sync-stale',
    every: fast ? '5s' : '5m',
    description: 'the pot sizes were synced within the last 20 minutes',
    run: async (ctx) => {
      const { newest } = await count(ctx, `SELECT count(*)::int AS n, max(at) AS newest FROM ${q}.bo_runs WHERE kind = 'update-pot-sizes' AND at <= $1`, [ctx.at]);
      const ageMs = newest ? ctx.at.getTime() - newest.getTime() : Infinity;
      if (ageMs <= minutes(20)) return { status: 'ok', message: `pot sizes synced ${Math.round(ageMs / 1_000)} s before the check` };
      return {
        status: ageMs > minutes(45) ? 'critical' : 'warning',
        message: `${newest ? `the pot sizes were last synced at ${newest.toISOString()}` : 'the pot sizes were never synced'}: chain_stats is stale; trigger a sync (nightshift schedules trigger update-pot-sizes) and read its errors (nightshift jobs list --kind update-pot-sizes --state discarded)`,
        details: { lastSyncAt: newest?.toISOString() ?? null },
      };
    },
  }),
];

export default defineConfig({
  database: { schema },
  jobs: Object.values(jobs),
  pipelines: [settlement],
  schedules,
  daemons: [refreshSeeds],
  checks,
  watchdog: {
    // Seed 000 alerts through the Telegram Bot API; TELEGRAM_API_URL points a test at a fake.
    notifiers: [telegramNotifier({ token: process.env.TELEGRAM_BOT_TOKEN, chatId: process.env.TELEGRAM_CHAT_ID, ...(process.env.TELEGRAM_API_URL ? { baseUrl: process.env.TELEGRAM_API_URL } : {}) })],
  },
  roles: {
    // Everything on every replica is the simple deployment; roles split it when wanted.
    scheduler: { schedules: schedules.map((s) => s.name) },
    workers: { queues: ['default', 'recovery', 'settlement', 'bonus'] },
    seeds: { daemons: ['refresh-seeds'] },
    watchdog: { checks: [...checks.map((c) => c.name), 'nightshift.*'] },
  },
  worker: { concurrency: 5, pollIntervalMs: 200, shutdownGraceMs: 5_000, ...(fast ? { leaseMs: 3_000, heartbeatMs: 500, maintenanceIntervalMs: 250 } : {}) },
});
