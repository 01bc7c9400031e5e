/**
 * The polymarket-operator of seed 004: strictly one instance (a singleton consumer, elected through
 * the runtime's lease), reading intents at most once — a second delivery would open a second escrow,
 * while a lost intent only leaves the bet queued with nothing charged.
 */
import type { z } from 'zod';
import type { LeaderLease } from '../../src/leadership/leader-lease.js';
import { ConsumerRunner } from '../../src/streams/consumer-runner.js';
import { defineConsumer, type ConsumerContext } from '../../src/streams/define-consumer.js';
import type { EventBus } from '../../src/telemetry/events.js';
import { orderIntents, orderUpdates } from './contract.js';

type Intent = z.output<typeof orderIntents.schema>;

/** A revert of the Vault contract, before anything was escrowed. */
class EscrowReverted extends Error {}

/** Stable codes for contract reverts: the UI branches on these, never on raw revert text. */
const REVERT_CODES: Record<string, string> = {
  'InsufficientBalance()': 'insufficient_balance',
  'OrderAlreadyOpen()': 'order_already_open',
};

function revertCode(message: string): string {
  for (const [revert, code] of Object.entries(REVERT_CODES)) if (message.includes(revert)) return code;
  return `escrow_failed: ${message}`;
}

async function call(exchangeUrl: string, path: string, body: object, signal: AbortSignal): Promise<Record<string, unknown>> {
  const res = await fetch(`${exchangeUrl}${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, signal });
  const reply = (await res.json()) as Record<string, unknown>;
  if (res.status === 409) throw new EscrowReverted(String(reply.error));
  if (!res.ok) throw new Error(`exchange ${path}: HTTP ${res.status}`);
  return reply;
}

/** Executes one intent: escrow, fill-or-kill order, settlement — publishing each status change. */
async function execute(exchangeUrl: string, intent: Intent, ctx: ConsumerContext): Promise<void> {
  const { orderId } = intent;
  try {
    // Nothing is escrowed before this call succeeds, so a revert here is safe to report as rejected.
    await call(exchangeUrl, '/vault/open', { orderId, userId: intent.userId, amount: intent.price * intent.size, side: intent.side }, ctx.signal);
  } catch (err) {
    if (!(err instanceof EscrowReverted)) throw err;
    await ctx.publish(orderUpdates, { orderId, status: 'rejected', reason: revertCode(err.message) });
    return;
  }
  await ctx.publish(orderUpdates, { orderId, status: 'open' });
  const { filled } = await call(exchangeUrl, '/clob/order', { orderId, marketId: intent.marketId, price: intent.price, size: intent.size }, ctx.signal);
  await call(exchangeUrl, '/vault/settle', { orderId, filled }, ctx.signal);
  await ctx.publish(orderUpdates, { orderId, status: filled ? 'filled' : 'killed' });
}

/** The operator's consumer. An intent older than `maxIntentAgeMs` (default 300 s) is rejected as `intent_expired`: the book has moved. */
export function operatorConsumer(options: { exchangeUrl: string; maxIntentAgeMs?: number; claimIdleMs?: number }) {
  return defineConsumer({
    stream: orderIntents,
    group: 'polymarket-operator',
    delivery: 'at-most-once',
    singleton: true,
    maxAgeMs: options.maxIntentAgeMs ?? 300_000,
    handler: (intent, ctx) => execute(options.exchangeUrl, intent, ctx),
    onExpired: (intent, ctx) => ctx.publish(orderUpdates, { orderId: intent.orderId, status: 'rejected', reason: 'intent_expired' }),
    // The operator died inside execute(): funds may be escrowed with no order settled. The seed's
    // answer is settleEmpty (release the escrow), and the bet is reported with what the Vault
    // settled — killed, or filled if the operator had settled the fill before dying. Idempotent:
    // a second settlement changes nothing, and the status rule refuses a repeated update.
    onAbandoned: async (intent, ctx) => {
      const { settled } = await call(options.exchangeUrl, '/vault/settle', { orderId: intent.orderId, filled: false }, ctx.signal);
      const status = settled === 'filled' ? 'filled' : 'killed';
      await ctx.publish(orderUpdates, { orderId: intent.orderId, status, ...(status === 'killed' ? { reason: 'operator_abandoned: escrow released (settleEmpty)' } : {}) });
    },
    claimIdleMs: options.claimIdleMs ?? 60_000,
  });
}

/** One operator process: the runner hosting the singleton consumer. */
export function createOperator(options: {
  redisUrl: string;
  exchangeUrl: string;
  leaderLease: (name: string) => LeaderLease;
  maxIntentAgeMs?: number;
  /** How long after the operator's last sign of life an unfinished intent is recovered (default 60 s). */
  claimIdleMs?: number;
  events?: EventBus;
}): ConsumerRunner {
  return new ConsumerRunner({
    redisUrl: options.redisUrl,
    consumers: [operatorConsumer(options)],
    leaderLease: options.leaderLease,
    blockMs: 1_000,
    shutdownGraceMs: 5_000,
    ...(options.events ? { events: options.events } : {}),
  });
}
