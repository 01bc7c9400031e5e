/**
 * The bets backend of seed 004: any number of replicas. It records a bet as `queued` and publishes
 * the intent; its consumer group `bets-backend` applies the operator's updates at least once,
 * through the monotonic status rule, so a late or repeated update never moves a bet backwards.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { z } from 'zod';
import { ConsumerRunner } from '../../src/streams/consumer-runner.js';
import { defineConsumer } from '../../src/streams/define-consumer.js';
import type { StreamClient } from '../../src/streams/stream-client.js';
import type { EventBus } from '../../src/telemetry/events.js';
import { betStatus, orderIntents, orderUpdates, type BetStatus } from './contract.js';

/** Creates the bet_orders table in `schema`. */
export async function createBetTables(pool: pg.Pool, schema: string): Promise<void> {
  await pool.query(`CREATE TABLE IF NOT EXISTS "${schema}".bet_orders (
    id uuid PRIMARY KEY,
    user_id text NOT NULL,
    market_id text NOT NULL,
    side text NOT NULL,
    price numeric NOT NULL,
    size numeric NOT NULL,
    status text NOT NULL DEFAULT 'queued',
    reason text,
    updated_at timestamptz NOT NULL DEFAULT now())`);
}

/** A bet as the API takes it. */
export type BetInput = Omit<z.input<typeof orderIntents.schema>, 'orderId'>;

/** POST /bets/orders: records the bet as queued, then publishes the intent. Returns the order id. */
export async function placeBet(pool: pg.Pool, schema: string, streams: StreamClient, bet: BetInput): Promise<string> {
  const orderId = randomUUID();
  await pool.query(`INSERT INTO "${schema}".bet_orders (id, user_id, market_id, side, price, size) VALUES ($1, $2, $3, $4, $5, $6)`, [orderId, bet.userId, bet.marketId, bet.side, bet.price, bet.size]);
  // If this process died right here, the bet would stay queued with nothing charged — the seed's
  // accepted loss. Publishing from a nightshift job enqueued in the INSERT's transaction closes it.
  await streams.publish(orderIntents, { orderId, ...bet });
  return orderId;
}

/**
 * Applies an update if the rule allows it; the guard is in the UPDATE itself, so two replicas
 * applying updates for the same bet at once cannot move it backwards either. True when applied.
 */
export async function applyUpdate(pool: pg.Pool, schema: string, update: z.output<typeof orderUpdates.schema>): Promise<boolean> {
  const { rowCount } = await pool.query(`UPDATE "${schema}".bet_orders SET status = $2, reason = $3, updated_at = now() WHERE id = $1 AND status = ANY($4::text[])`, [
    update.orderId,
    update.status,
    update.reason ?? null,
    betStatus.allowedFrom(update.status),
  ]);
  return rowCount === 1;
}

/** The backend's consumer of order updates. */
export function backendConsumer(pool: pg.Pool, schema: string) {
  return defineConsumer({
    stream: orderUpdates,
    group: 'bets-backend',
    delivery: 'at-least-once',
    // A duplicate changes nothing (the rule refuses it), so at-least-once is safe; a reclaimed
    // update whose replica died mid-write is applied by another within claimIdleMs.
    handler: async (update) => {
      await applyUpdate(pool, schema, update);
    },
  });
}

/** One backend replica's consumer runner. */
export function createBackendRunner(options: { pool: pg.Pool; schema: string; redisUrl: string; events?: EventBus }): ConsumerRunner {
  return new ConsumerRunner({
    redisUrl: options.redisUrl,
    consumers: [backendConsumer(options.pool, options.schema)],
    blockMs: 1_000,
    shutdownGraceMs: 5_000,
    ...(options.events ? { events: options.events } : {}),
  });
}

/** A bet's status and reason. */
export async function betOf(pool: pg.Pool, schema: string, orderId: string): Promise<{ status: BetStatus; reason: string | null }> {
  const { rows } = await pool.query<{ status: BetStatus; reason: string | null }>(`SELECT status, reason FROM "${schema}".bet_orders WHERE id = $1`, [orderId]);
  return rows[0]!;
}
