// Seed 000/001's daily settlement (`cli/settle.ts` under `cron-settle.sh`, the
// `settlement_pipeline_runs` table, seven audit artifacts per day under `artifacts/dayId=…/` and a
// cleanup tool for dry runs) as a nightshift pipeline. The chain and the push provider are faked
// by rows in the example's own tables; every write is idempotent on (day, pool), as a step's
// effects are at-least-once.
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { defineJob, definePipeline, directoryStore, type Executor, type JobDefinition } from '../../src/index.js';

/** The five jackpot pools of seed 000. */
export const POOLS = [0, 1, 2, 3, 4] as const;
const DAY_MS = 86_400_000;

/** The day id of the day that ended at `at` (00:00 UTC): days since 1970-01-01, minus one. */
export function endedDay(at: Date): string {
  return String(Math.floor(at.getTime() / DAY_MS) - 1);
}

function sha(value: unknown): string {
  return createHash('sha256').update(JSON.stringify(value)).digest('hex');
}

/** A merkle root over leaves (pairs hashed upwards; an odd leaf goes up alone). */
function merkleRoot(leaves: readonly string[]): string {
  let level = leaves.map((l) => sha(l));
  if (level.length === 0) return sha('empty');
  while (level.length > 1) level = level.reduce<string[]>((up, h, i) => (i % 2 === 0 ? [...up, i + 1 < level.length ? sha(h + level[i + 1]) : h] : up), []);
  return level[0]!;
}

/** Options of the settlement: where its tables and files are, how slow a pool's settlement is. */
export interface SettlementOptions {
  schema: string;
  artifactsRoot: string;
  /** How long settling one pool takes (the chain's round trips). */
  settleMs: number;
  /** The follow-up jobs: the pot sync after a settled day, and the alert after a failed one. */
  updatePotSizes: JobDefinition;
  alert: JobDefinition;
}

/** The settlement pipeline of the bo-engine. */
export function settlementPipeline(o: SettlementOptions) {
  const q = `"${o.schema}"`;
  const exec = (db: Executor, text: string, values: unknown[]) => db.query({ text, values });
  // #region pipeline
  return (
    definePipeline({
      name: 'settlement',
      key: z.string().regex(/^\d+$/, 'a day id: days since 1970-01-01'),
      queue: 'settlement',
      maxAttempts: 3,
      deadline: '6h',
      retention: '30d', // seed 001: settlement records 30 days
      store: directoryStore({ root: o.artifactsRoot, path: ({ key }) => `dayId=${key}` }),
    })
      // Freeze the day's inputs: the pools and affiliates as they stood at midnight (fatal).
      .step('freeze', async (ctx) => {
        const pools = POOLS.map((id) => ({ id, tickets: 100 + ((Number(ctx.key) + id) % 7), potUsdt: 1_000 * (id + 1) }));
        const affiliates = [
          { code: 'A1', referrals: 3 },
          { code: 'B2', referrals: 1 },
        ];
        await ctx.artifact('inputs.json', { dayId: Number(ctx.key), pools });
        await ctx.artifact('affiliates.json', affiliates);
        return { pools, affiliates };
      })
      // Settle each pool: one job per pool, retried on its own; the payout row is idempotent.
      .map('settle', { needs: ['freeze'], items: ({ freeze }) => freeze.pools, itemKey: (p) => `pool-${p.id}` }, async (ctx, pool) => {
        await exec(ctx.db, `INSERT INTO ${q}.bo_settle_attempts (day_id, pool, attempt, pid, dry_run) VALUES ($1, $2, $3, $4, $5)`, [ctx.key, pool.id, ctx.attempt, process.pid, ctx.dryRun]);
        await sleep(o.settleMs, undefined, { signal: ctx.signal });
        const fault = await ctx.db.query({ text: `SELECT 1 FROM ${q}.bo_faults WHERE day_id = $1 AND pool = $2`, values: [ctx.key, pool.id] });
        if (fault.rows.length > 0) throw new Error(`pool ${pool.id}: settlement transaction reverted`);
        const winners = pool.tickets % 5;
        await exec(ctx.db, `INSERT INTO ${q}.bo_payouts (day_id, pool, winners, dry_run) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [ctx.key, pool.id, winners, ctx.dryRun]);
        return { pool: pool.id, winners, payoutUsdt: winners * 10, settledBy: process.pid };
      })
      // The merkle trees of winners and affiliates, over every pool's result (fan-in).
      .step('merkle', { needs: ['freeze', 'settle'] }, async (ctx) => {
        const results = ctx.needs.settle.map((r) => r.value);
        await ctx.artifact('settlement_result.json', { dayId: Number(ctx.key), results: results.map(({ settledBy: _, ...r }) => r) });
        const winnersRoot = merkleRoot(results.map((r) => `${r.pool}:${r.winners}:${r.payoutUsdt}`));
        const affiliateRoot = merkleRoot(ctx.needs.freeze.affiliates.map((a) => `${a.code}:${a.referrals}`));
        await ctx.artifact('winners_merkle.json', { root: winnersRoot, leaves: results.length });
        await ctx.artifact('affiliate_merkle.json', { root: affiliateRoot, leaves: ctx.needs.freeze.affiliates.length });
        return { winnersRoot, affiliateRoot };
      })
      // Commit the bundle on chain (an effect: a dry run does not commit).
      .step('commit', { needs: ['merkle'], effect: true }, async (ctx) => {
        const bundle = { dayId: Number(ctx.key), ...ctx.needs.merkle, idempotencyKey: ctx.idempotencyKey };
        const file = await ctx.artifact('commit_bundle.json', bundle);
        await exec(ctx.db, `INSERT INTO ${q}.bo_commits (day_id, bundle_sha256) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [ctx.key, file.sha256]);
        return { bundleSha256: file.sha256 };
      })
      // Seed 000's non-fatal workers: try, warn, go on — the run carries the warning.
      .step('potSync', { needs: ['commit'], optional: true, effect: true }, async (ctx) => {
        await exec(ctx.db, `INSERT INTO ${q}.bo_chain_stats (day_id, key, value) VALUES ($1, 'jackpot_synced', 'true') ON CONFLICT DO NOTHING`, [ctx.key]);
      })
      .step('notifyWinners', { needs: ['settle', 'commit'], optional: true, effect: true }, async (ctx) => {
        for (const r of ctx.needs.settle) if (r.value.winners > 0) await exec(ctx.db, `INSERT INTO ${q}.bo_notifications (day_id, pool) VALUES ($1, $2) ON CONFLICT DO NOTHING`, [ctx.key, r.value.pool]);
      })
      .step('globalStats', { needs: ['settle', 'commit'], optional: true }, async (ctx) => {
        const winners = ctx.needs.settle.reduce((n, r) => n + r.value.winners, 0);
        await exec(ctx.db, `INSERT INTO ${q}.bo_global_stats (day_id, winners) VALUES ($1, $2) ON CONFLICT (day_id) DO UPDATE SET winners = EXCLUDED.winners`, [ctx.key, winners]);
        return { winners };
      })
      // updatePotSizes runs every 15 minutes and after each settled day; a failed day alerts.
      .onSuccess(o.updatePotSizes)
      .onFailure(o.alert, (run) => ({ dayId: run.key, reason: run.reason ?? 'failed' }))
      // Seed 001's cleanup tool: a dry run's payouts go with it (a committed day can never be cleaned).
      .cleanup(async (run, tx) => {
        await exec(tx, `DELETE FROM ${q}.bo_payouts WHERE day_id = $1 AND dry_run`, [run.key]);
        await exec(tx, `DELETE FROM ${q}.bo_settle_attempts WHERE day_id = $1 AND dry_run`, [run.key]);
      })
  );
  // #endregion
}

/** The alert a failed settlement enqueues. */
export function alertJob(schema: string) {
  return defineJob({
    kind: 'settlement-alert',
    payload: z.object({ dayId: z.string(), reason: z.string() }),
    run: async (p, ctx) => {
      await ctx.db.query({ text: `INSERT INTO "${schema}".bo_alerts (day_id, reason) VALUES ($1, $2)`, values: [p.dayId, p.reason] });
    },
  });
}
