// Seed 002 (the payment manager), only its worker roles and the balance monitor — the full example
// comes later. Roles per pod (WORKER_ROLES → --roles / NIGHTSHIFT_ROLES); the balance monitor is not
// a role but a check inside `psp-worker`, defined only with BALANCE_MONITOR_ENABLED=true, raising
// balance_drift and low_partner_balance to the alert webhook (ALERT_WEBHOOK_URL, signed with
// ALERT_WEBHOOK_SECRET). The ledger is a table here (a stand-in for TigerBeetle's nostro account);
// the PSP's balance comes over HTTP from PSP_<NAME>_URL.
import { z } from 'zod';
import { defineConfig, defineJob, webhookNotifier } from '../../src/index.js';
import { balanceMonitor, balanceMonitorSettings } from './balance-monitor.js';

const env = process.env;
const schema = env.NS_SCHEMA ?? 'nightshift';
const monitorEnabled = env.BALANCE_MONITOR_ENABLED === 'true';

const outboxEvent = defineJob({ kind: 'outbox-event', payload: z.object({ eventId: z.string() }), run: async () => { /* post_pending / void_pending */ } });
const pspProcess = defineJob({ kind: 'psp-process', queue: 'psp', payload: z.object({ rowId: z.string() }), run: async () => { /* query → confirm */ } });
const invoiceExpiry = defineJob({ kind: 'invoice-expiry', payload: z.object({}), run: async () => { /* CREATED → EXPIRED */ } });

const monitor = balanceMonitor(balanceMonitorSettings(env), {
  ledger: async (psp, db) => {
    const { rows } = await db.query({ text: `SELECT balance_satang::bigint AS b FROM "${schema}".pm_ledger_balances WHERE account = $1`, values: [`system.nostro.${psp.toLowerCase()}.THB`] });
    const row = rows[0] as { b: string } | undefined;
    if (!row) throw new Error(`no ledger account system.nostro.${psp.toLowerCase()}.THB`);
    return Number(row.b);
  },
  partner: async (psp, signal) => {
    const base = env[`PSP_${psp}_URL`];
    if (!base) throw new Error(`PSP_${psp}_URL is not set`);
    const res = await fetch(new URL('/partner-balance', base), { signal: AbortSignal.any([signal, AbortSignal.timeout(5_000)]) });
    if (!res.ok) throw new Error(`${psp} answered ${res.status} to getPartnerBalance`);
    return ((await res.json()) as { balanceSatang: number }).balanceSatang;
  },
});

export default defineConfig({
  database: { schema },
  jobs: [outboxEvent, pspProcess, invoiceExpiry],
  ...(monitorEnabled
    ? {
        checks: [monitor],
        watchdog: {
          notifiers: [webhookNotifier({ name: 'alerts', url: env.ALERT_WEBHOOK_URL, secret: env.ALERT_WEBHOOK_SECRET })],
          // The rest of the fleet's health is the full example's business.
          builtins: false,
        },
      }
    : {}),
  roles: {
    api: {},
    'outbox-worker': { jobs: ['outbox-event'] },
    'psp-worker': { queues: ['psp'], ...(monitorEnabled ? { checks: ['balance-monitor'] } : {}) },
    'invoice-expiry': { jobs: ['invoice-expiry'] },
  },
  worker: { pollIntervalMs: 200, shutdownGraceMs: 5_000 },
});
