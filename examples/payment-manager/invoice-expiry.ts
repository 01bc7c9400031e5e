// Seed 002's InvoiceExpirySweep: every INVOICE_EXPIRY_SWEEP_INTERVAL_MS (30 s), one batch of
// INVOICE_EXPIRY_BATCH_SIZE (100) overdue INVOICE_PAYMENT intents from CREATED to EXPIRED, with one
// atomic statement (channel.expire()). It was a setInterval on every pod with the role, each
// sweeping; now it is a schedule, whose tick is run once across the fleet however many pods host it.
import { z } from 'zod';
import { defineJob, defineSchedule } from '../../src/index.js';
import type { PmSettings } from './settings.js';
import type { PmStore } from './store.js';

/** The sweep's kind and its schedule. */
export function invoiceExpiry(s: PmSettings, store: PmStore) {
  const job = defineJob({
    kind: 'invoice-expiry',
    payload: z.object({ slot: z.string() }),
    run: async ({ slot }, ctx) => {
      const expired = await ctx.transaction(async (tx) => {
        const ids = await store.expireInvoices(tx, s.invoiceBatchSize);
        await store.recordSweep(tx, slot, ids.length);
        return ids.length;
      });
      return { expired };
    },
  });
  const schedule = defineSchedule({ name: 'invoice-expiry', every: s.invoiceSweepIntervalMs, job, payload: (tick) => ({ slot: tick.at.toISOString() }) });
  return { job, schedule };
}
