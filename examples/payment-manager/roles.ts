// Seed 002's four roles, exactly: what each pod runs is WORKER_ROLES, and nightshift's roles
// mechanism decides what that hosts. `outbox`, `psp-ipps` and `balance-monitor` are not roles (the
// seed's "typical mistake"): nightshift refuses them at start-up with NS_UNKNOWN_ROLE, listing these.
import type { RoleDefinition } from '../../src/index.js';

/** The seed's default when WORKER_ROLES is unset or blank. */
export const DEFAULT_ROLES = ['api', 'outbox-worker'];

/** WORKER_ROLES as the seed reads it: comma-separated, blanks ignored, the default when empty. */
export function parseRoles(value: string | undefined): string[] {
  const roles = (value ?? '')
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  return roles.length ? roles : DEFAULT_ROLES;
}

/** The roles of the payment manager. The balance monitor is a check inside `psp-worker`, only with BALANCE_MONITOR_ENABLED. */
export function pmRoles(o: { balanceMonitor: boolean }): Record<string, RoleDefinition> {
  return {
    // The HTTP API: enqueues (in its transactions), claims nothing. server.ts serves it when the role is on.
    api: {},
    // The outbox: post_pending / void_pending against the ledger and the side effects that follow them.
    'outbox-worker': { jobs: ['outbox-event', 'publish-status', 'publish-payment-notification'] },
    // The PSP state machine, one job per psp_tx_map row.
    'psp-worker': { jobs: ['psp-process'], ...(o.balanceMonitor ? { checks: ['balance-monitor'] } : {}) },
    // The sweep: its schedule ticks once per interval across the fleet, however many pods have the role.
    'invoice-expiry': { jobs: ['invoice-expiry'], schedules: ['invoice-expiry'] },
  };
}
