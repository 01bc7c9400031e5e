/**
 * Seed 004, the betting execution service, on nightshift streams: the contract the backend and the
 * operator share. Two streams, each `XADD key * payload <json>`, read by field name:
 *
 *   POST /bets/orders → bet_orders.status = 'queued' → polymarket:order ──► polymarket-operator (singleton, at-most-once)
 *   polymarket:order-update ◄── operator publishes open/filled/killed/rejected ──► bets-backend (every replica, at-least-once)
 */
import { z } from 'zod';
import { defineStream } from '../../src/streams/define-stream.js';
import { defineStatusOrder } from '../../src/streams/status-order.js';

/** An intent to bet: the price the user chose at that moment. Written by the backend, read by the operator. */
export const orderIntents = defineStream({
  name: 'polymarket:order',
  payload: z.object({
    orderId: z.uuid(),
    userId: z.string().min(1),
    marketId: z.string().min(1),
    side: z.enum(['buy', 'sell']),
    /** Price per share, 0 to 1. */
    price: z.number().gt(0).lte(1),
    size: z.number().positive(),
  }),
});

/** A status change of an order. Written by the operator, read by every backend replica's group. */
export const orderUpdates = defineStream({
  name: 'polymarket:order-update',
  payload: z.object({
    orderId: z.uuid(),
    status: z.enum(['open', 'filled', 'killed', 'rejected']),
    /** For `rejected`: a stable code (insufficient_balance, order_already_open, intent_expired, escrow_failed: …). */
    reason: z.string().optional(),
  }),
});

/**
 * The seed's rule for applying updates that arrive at least once and out of order: `open` applies
 * only to a queued row, any other status only to a row that is not terminal.
 */
export const betStatus = defineStatusOrder({
  order: ['queued', 'open', 'filled', 'killed', 'rejected'],
  terminal: ['filled', 'killed', 'rejected'],
  initial: 'queued',
});

/** A bet's status. */
export type BetStatus = (typeof betStatus.statuses)[number];
