// The payment manager's nightshift definitions, from its environment: used by server.ts (the pods)
// and nightshift.config.ts (the CLI an operator runs: jobs resolve, schedules, checks).
import { webhookNotifier, type NightshiftOptions } from '../../src/index.js';
import { balanceMonitor, balanceMonitorSettings } from './balance-monitor.js';
import { invoiceExpiry } from './invoice-expiry.js';
import { outboxJobs } from './outbox.js';
import { pspJob, sqlOutboxEnqueuer } from './psp-worker.js';
import { pmRoles } from './roles.js';
import { pmSettings } from './settings.js';
import { pmStore } from './store.js';

/** Everything the payment manager defines, for one environment. */
export function pmApp(env: NodeJS.ProcessEnv) {
  const settings = pmSettings(env);
  const store = pmStore(settings.schema);
  const monitorEnabled = env.BALANCE_MONITOR_ENABLED === 'true';
  const outbox = outboxJobs(settings, store);
  const psp = pspJob(settings, store, sqlOutboxEnqueuer(settings.schema));
  const sweep = invoiceExpiry(settings, store);

  // The balance monitor: not a role, a check inside psp-worker, only with BALANCE_MONITOR_ENABLED=true.
  const monitor = balanceMonitor(balanceMonitorSettings(env), {
    ledger: async (name, db) => {
      const { rows } = await db.query({ text: `SELECT balance_satang::bigint AS b FROM "${settings.schema}".pm_ledger_balances WHERE account = $1`, values: [`system.nostro.${name.toLowerCase()}.THB`] });
      const row = rows[0] as { b: string } | undefined;
      if (!row) throw new Error(`no ledger account system.nostro.${name.toLowerCase()}.THB`);
      return Number(row.b);
    },
    partner: async (name, signal) => {
      const base = settings.pspUrl(name);
      if (!base) throw new Error(`PSP_${name}_URL is not set`);
      const res = await fetch(new URL('/partner-balance', base), { signal: AbortSignal.any([signal, AbortSignal.timeout(5_000)]) });
      if (!res.ok) throw new Error(`${name} answered ${res.status} to getPartnerBalance`);
      return ((await res.json()) as { balanceSatang: number }).balanceSatang;
    },
  });

  const definitions = {
    jobs: [outbox.outboxEvent, outbox.publishStatus, outbox.publishPaymentNotification, psp, sweep.job],
    schedules: [sweep.schedule],
    roles: pmRoles({ balanceMonitor: monitorEnabled }),
    ...(monitorEnabled
      ? {
          checks: [monitor],
          watchdog: {
            notifiers: [webhookNotifier({ name: 'alerts', url: env.ALERT_WEBHOOK_URL, secret: env.ALERT_WEBHOOK_SECRET })],
            // The fleet's own health (stuck jobs, leaderless daemons) is left to nightshift's defaults elsewhere.
            builtins: false as const,
          },
        }
      : {}),
  } satisfies Partial<NightshiftOptions>;
  const worker = {
    pollIntervalMs: settings.outboxIntervalMs,
    shutdownGraceMs: 10_000,
    leaseMs: settings.jobLeaseMs,
    heartbeatMs: Math.max(100, Math.floor(settings.jobLeaseMs / 3)),
    maintenanceIntervalMs: Math.min(5_000, Math.max(100, Math.floor(settings.jobLeaseMs / 4))),
  } satisfies Partial<NightshiftOptions>;
  return { settings, store, definitions, worker, outbox, psp, sweep };
}
