// Seed 002's OutboxWorker, multi-instance. An outbox event is a job, enqueued in the transaction
// that changes the intent's state, so it exists exactly when the change does. Any number of
// outbox-worker pods claim events with SKIP LOCKED, so no two run the same event at once (the
// seed's reason for one pod). An event whose pod died is taken back after its lease and run
// again: the ledger then refuses the second post (pending_transfer_already_posted, not fatal, as
// in the seed) and the intent's guarded state change finds the work done, so writeSettlement and
// the two publishing jobs happen once per event. The publishing jobs are enqueued in that same
// transaction and each delivery carries the event's key, so a redelivery after a crash is applied once.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { defineJob, discard, hold, type JobContext } from '../../src/index.js';
import { hubClient, ledgerClient } from './providers.js';
import type { PmSettings } from './settings.js';
import type { PmStore } from './store.js';
import { intentTrace } from './trace.js';

/** The outbox actions (seed 002's OutboxAction). */
export type OutboxAction = 'post_pending' | 'void_pending';

const traceparentOf = (ctx: JobContext) => (ctx.traceId ? `00-${ctx.traceId}-${randomUUID().replace(/-/g, '').slice(0, 16)}-01` : undefined);

/** The outbox's kinds: the event itself and its two side effects. */
export function outboxJobs(s: PmSettings, store: PmStore) {
  const ledger = ledgerClient(s.ledgerUrl);
  const hub = hubClient(s.notifyUrl);

  const published = z.object({ eventId: z.string(), intentId: z.string().uuid(), status: z.enum(['SETTLED', 'FAILED']) });
  const publishStatus = defineJob({
    kind: 'publish-status',
    payload: published,
    run: async (p, ctx) => hub.publish('status', `${p.eventId}:status`, p, traceparentOf(ctx), ctx.signal),
  });
  const publishPaymentNotification = defineJob({
    kind: 'publish-payment-notification',
    payload: published,
    run: async (p, ctx) => hub.publish('notifications', `${p.eventId}:notification`, p, traceparentOf(ctx), ctx.signal),
  });

  const outboxEvent = defineJob({
    kind: 'outbox-event',
    payload: z.object({ intentId: z.string().uuid(), action: z.enum(['post_pending', 'void_pending']) }),
    run: async ({ intentId, action }, ctx) => {
      const intent = await store.intent(ctx.db, intentId);
      if (!intent?.pending_transfer_id) return discard(`intent ${intentId} has no pending transfer to ${action === 'post_pending' ? 'post' : 'void'}`);
      // A new transfer id per attempt, as the seed does: TigerBeetle itself refuses a second post of the same pending transfer.
      const result = await ledger.transfer({ id: randomUUID(), flags: action, pendingId: intent.pending_transfer_id }, ctx.signal);
      const done = action === 'post_pending' ? 'pending_transfer_already_posted' : 'pending_transfer_already_voided';
      if (result === done) ctx.log.info({ intentId, result }, 'the ledger already applied this event (an earlier attempt): not fatal');
      else if (result === 'pending_transfer_already_posted' || result === 'pending_transfer_already_voided') {
        // The other decision already reached the ledger: a person must reconcile, not a retry.
        return hold(`the ledger says ${result} for intent ${intentId}, but this event is ${action}: reconcile the intent with the ledger`);
      } else if (result !== 'ok') return discard(`the ledger refused ${action} of intent ${intentId}: ${result}`);
      const status = action === 'post_pending' ? 'SETTLED' : 'FAILED';
      await ctx.transaction(async (tx) => {
        const moved = await store.finish(tx, intentId, status);
        if (!moved) return; // an earlier attempt committed this before its pod died
        if (action === 'post_pending') await store.writeSettlement(tx, ctx.jobId, moved);
        const p = { eventId: ctx.jobId, intentId, status } as const;
        await ctx.enqueue(publishStatus, p, { db: tx, traceContext: intentTrace(intentId) });
        await ctx.enqueue(publishPaymentNotification, p, { db: tx, traceContext: intentTrace(intentId) });
      });
    },
  });
  return { outboxEvent, publishStatus, publishPaymentNotification };
}
