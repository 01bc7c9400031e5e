// Seed 002's BalanceMonitor (`runBalanceTick(pspName)` on a setInterval inside the psp-worker role)
// as a check: per PSP, the ledger's nostro balance against the PSP's partner balance, raising
// balance_drift and low_partner_balance; balance_ok is the resolve.
import { defineCheck, type CheckDefinition, type CheckResult } from '../../src/index.js';

/** The seed's settings, from the same environment variables and with the same defaults. */
export interface BalanceMonitorSettings {
  /** PSP_NAMES (default IPPS). */
  psps: string[];
  /** BALANCE_TICK_MS (default 60 000). */
  tickMs: number;
  /** IPPS_DRIFT_THRESHOLD_SATANG (default 10 000 = 100 THB). */
  driftThresholdSatang: number;
  /** IPPS_LOW_BALANCE_THRESHOLD_SATANG (default 100 000 = 1 000 THB). */
  lowBalanceThresholdSatang: number;
}

/** Reads the seed's variables; a number that is not one is a start-up error rather than a silent default. */
export function balanceMonitorSettings(env: NodeJS.ProcessEnv): BalanceMonitorSettings {
  const int = (name: string, fallback: number) => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got "${raw}"`);
    return n;
  };
  return {
    psps: (env.PSP_NAMES ?? 'IPPS')
      .split(',')
      .map((p) => p.trim())
      .filter(Boolean),
    tickMs: int('BALANCE_TICK_MS', 60_000),
    driftThresholdSatang: int('IPPS_DRIFT_THRESHOLD_SATANG', 10_000),
    lowBalanceThresholdSatang: int('IPPS_LOW_BALANCE_THRESHOLD_SATANG', 100_000),
  };
}

const satang = (n: number) => `${n.toLocaleString('en-US')} satang (${(n / 100).toLocaleString('en-US')} THB)`;

/**
 * The balance monitor. `ledger(psp)` reads the ledger's nostro balance (the seed's TigerBeetle
 * lookup of `system.nostro.<psp>.THB`); `partner(psp)` asks the PSP. A PSP or ledger that cannot be
 * read makes the run fail, which is itself a critical alert (the seed's "TB failure", "PSP failure").
 */
export function balanceMonitor(
  s: BalanceMonitorSettings,
  io: { ledger: (psp: string, db: { query: (q: { text: string; values?: unknown[] }) => Promise<{ rows: unknown[] }> }) => Promise<number>; partner: (psp: string, signal: AbortSignal) => Promise<number> },
): CheckDefinition {
  return defineCheck({
    name: 'balance-monitor',
    every: s.tickMs,
    description: 'ledger nostro balance vs the PSP partner balance, per PSP (seed 002)',
    run: async (ctx) => {
      const results: CheckResult[] = [];
      for (const psp of s.psps) {
        const [ledger, partner] = await Promise.all([io.ledger(psp, ctx.db), io.partner(psp, ctx.signal)]);
        const drift = Math.abs(ledger - partner);
        const details = { psp, ledgerSatang: ledger, partnerSatang: partner, driftSatang: drift };
        results.push({
          subject: `${psp}:balance_drift`,
          status: drift > s.driftThresholdSatang ? 'critical' : 'ok',
          message:
            drift > s.driftThresholdSatang
              ? `${psp}: the ledger's nostro balance (${satang(ledger)}) and the PSP's (${satang(partner)}) differ by ${satang(drift)}, over ${satang(s.driftThresholdSatang)}: reconcile the PSP statement against the ledger before more payments settle`
              : `${psp}: balance_ok, drift ${satang(drift)}`,
          details,
        });
        results.push({
          subject: `${psp}:low_partner_balance`,
          status: partner < s.lowBalanceThresholdSatang ? 'warning' : 'ok',
          message:
            partner < s.lowBalanceThresholdSatang
              ? `${psp}: the partner balance is ${satang(partner)}, under ${satang(s.lowBalanceThresholdSatang)}: top up the ${psp} account before payouts fail`
              : `${psp}: balance_ok, partner balance ${satang(partner)}`,
          details,
        });
      }
      return results;
    },
  });
}
