// The payment manager's environment, with the seed's names and defaults (seed 002 §6).
import { parseRoles } from './roles.js';

/** Everything the payment manager reads from its environment. */
export interface PmSettings {
  /** WORKER_ROLES (default `api,outbox-worker`): the roles this pod runs. */
  roles: string[];
  /** NS_SCHEMA: nightshift's schema, where the example keeps its own tables too (default `nightshift`). */
  schema: string;
  /** PORT of the API (role `api`); 0 picks a free one. Default 3000. */
  port: number;
  /** OUTBOX_INTERVAL_MS (default 1 000): the longest idle poll of the outbox worker (wake-ups make it sooner). */
  outboxIntervalMs: number;
  /** PSP_POLL_INTERVAL_MS (default 500): how soon an inquiry the PSP answered PENDING is asked again. */
  pspPollIntervalMs: number;
  /** PSP_LEASE_SEC (default 10): the first attempt's lease on a PSP row — its calls are bounded by it. */
  pspLeaseSec: number;
  /** PSP_RETRY_LEASE_SEC (default 30): the lease of every retry. */
  pspRetryLeaseSec: number;
  /** INVOICE_EXPIRY_SWEEP_INTERVAL_MS (default 30 000, whole seconds). */
  invoiceSweepIntervalMs: number;
  /** INVOICE_EXPIRY_BATCH_SIZE (default 100). */
  invoiceBatchSize: number;
  /** LEDGER_URL: the ledger (TigerBeetle's stand-in). */
  ledgerUrl: string | undefined;
  /** NOTIFY_URL: where statuses and payment notifications go. */
  notifyUrl: string | undefined;
  /** PSP_<NAME>_URL per PSP. */
  pspUrl: (psp: string) => string | undefined;
  /** PM_LEASE_MS: nightshift's job lease (how soon a dead pod's jobs are taken back). Default 30 000. */
  jobLeaseMs: number;
}

/** Reads the settings; a malformed number is a start-up error naming the variable, never a silent default. */
export function pmSettings(env: NodeJS.ProcessEnv): PmSettings {
  const int = (name: string, fallback: number) => {
    const raw = env[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got "${raw}"`);
    return n;
  };
  return {
    roles: parseRoles(env.WORKER_ROLES),
    schema: env.NS_SCHEMA ?? 'nightshift',
    port: int('PORT', 3000),
    outboxIntervalMs: int('OUTBOX_INTERVAL_MS', 1_000),
    pspPollIntervalMs: int('PSP_POLL_INTERVAL_MS', 500),
    pspLeaseSec: int('PSP_LEASE_SEC', 10),
    pspRetryLeaseSec: int('PSP_RETRY_LEASE_SEC', 30),
    invoiceSweepIntervalMs: int('INVOICE_EXPIRY_SWEEP_INTERVAL_MS', 30_000),
    invoiceBatchSize: int('INVOICE_EXPIRY_BATCH_SIZE', 100),
    ledgerUrl: env.LEDGER_URL,
    notifyUrl: env.NOTIFY_URL,
    pspUrl: (psp) => env[`PSP_${psp}_URL`],
    jobLeaseMs: int('PM_LEASE_MS', 30_000),
  };
}
