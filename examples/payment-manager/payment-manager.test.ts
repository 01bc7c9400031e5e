import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../../test/support/cli.js';
import { useTestDatabase } from '../../test/support/db.js';
import { startScript, type Proc } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait.js';
import { webhookReceiver } from '../../test/watchdog/receivers.js';
import { FakePsp } from './fake-psp.js';

// Seed 002's balance monitor: a check inside the psp-worker role only, and only with
// BALANCE_MONITOR_ENABLED, with the seed's two thresholds (10,000 and 100,000 satang), raising
// balance_drift and low_partner_balance to a fake alert receiver; the PSP is a fake on loopback.
const t = useTestDatabase('pm');
const CONFIG = 'examples/payment-manager/nightshift.config.ts';
const ROOT = new URL('../..', import.meta.url).pathname;
const secret = 'pm-alert-secret';
const psp = new FakePsp();
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
let env: Record<string, string>;
const q = () => `"${t.schema}"`;

beforeAll(async () => {
  receiver = await webhookReceiver(secret);
  env = {
    DATABASE_URL: t.url,
    NS_SCHEMA: t.schema,
    BALANCE_MONITOR_ENABLED: 'true',
    BALANCE_TICK_MS: '1000',
    PSP_NAMES: 'IPPS',
    PSP_IPPS_URL: await psp.start(),
    ALERT_WEBHOOK_URL: `${receiver.url}/pm-alerts`,
    ALERT_WEBHOOK_SECRET: secret,
  };
  const r = await cli(['--config', CONFIG, 'migrate'], { env, cwd: ROOT });
  expect(r.code, r.stderr).toBe(0);
  await t.sql.query(`CREATE TABLE ${q()}.pm_ledger_balances (account text PRIMARY KEY, balance_satang bigint NOT NULL)`);
  await t.sql.query(`INSERT INTO ${q()}.pm_ledger_balances VALUES ('system.nostro.ipps.THB', 500000)`);
});
afterAll(async () => {
  await receiver.close();
  await psp.stop();
});

const ledger = (satang: number) => t.sql.query(`UPDATE ${q()}.pm_ledger_balances SET balance_satang = $1`, [satang]);
const seen = () => receiver.verified().map((r) => `${(r.json.alert as { subject: string }).subject} ${r.json.event as string}`);

describe('seed 002: the balance monitor as a check', () => {
  it('is not there without BALANCE_MONITOR_ENABLED, and with it only the psp-worker role hosts it', async () => {
    const off = await cli(['--config', CONFIG, 'checks', 'list', '--json'], { env: { ...env, BALANCE_MONITOR_ENABLED: undefined }, cwd: ROOT });
    expect(off.code, off.stderr).toBe(0);
    expect(JSON.parse(off.stdout)).toEqual([]);
    const on = await cli(['--config', CONFIG, 'checks', 'list', '--json'], { env, cwd: ROOT });
    expect(JSON.parse(on.stdout)).toMatchObject([{ name: 'balance-monitor', spec: 'every 1s', builtin: false }]);
  });

  it('raises balance_drift over 10,000 satang and low_partner_balance under 100,000 to the receiver, and resolves both (balance_ok)', async () => {
    psp.balanceSatang = 500_000;
    const start = (role: string) => startScript('src/cli/main.ts', { ...env, NIGHTSHIFT_LOG_LEVEL: 'warn' }, ['--config', CONFIG, 'worker', '--roles', role]);
    const procs: Proc[] = [start('psp-worker'), start('outbox-worker')];
    const runs = async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.check_runs WHERE check_name = 'balance-monitor' AND applied`)).rows[0].n as number;
    const twoMoreRuns = async () => {
      const from = await runs();
      await waitFor('two more runs', async () => (await runs()) >= from + 2, { timeoutMs: 60_000 });
    };
    try {
      await Promise.all(procs.map((p) => p.waitForLine('started')));
      // Only the psp-worker process hosts the check.
      const hosts = (await t.sql.query(`SELECT roles, info FROM ${q()}.processes`)).rows as { roles: string[]; info: { kinds: string[]; schedules: string[] } }[];
      expect(hosts.find((h) => h.roles.includes('psp-worker'))!.info.kinds).toContain('check:balance-monitor');
      expect(hosts.find((h) => h.roles.includes('outbox-worker'))!.info.kinds).not.toContain('check:balance-monitor');
      expect(hosts.find((h) => h.roles.includes('outbox-worker'))!.info.schedules).not.toContain('check:balance-monitor');
      await twoMoreRuns();
      expect(receiver.received).toEqual([]);

      // 15,000 satang apart: over the drift threshold (10,000), the partner balance still above 100,000.
      psp.balanceSatang = 485_000;
      await waitFor('the drift alert', () => seen().includes('IPPS:balance_drift opened'), { timeoutMs: 60_000 });
      const drift = receiver.verified().find((r) => r.json.event === 'opened')!.json.alert as { level: string; message: string; details: Record<string, number> };
      expect(drift).toMatchObject({ level: 'critical', details: { ledgerSatang: 500_000, partnerSatang: 485_000, driftSatang: 15_000 } });
      expect(drift.message).toContain('differ by 15,000 satang (150 THB), over 10,000 satang (100 THB)');

      // Reconciled, and the partner balance runs low: the drift resolves, the low balance opens.
      await ledger(85_000);
      psp.balanceSatang = 85_000;
      await waitFor('the drift resolved and the low balance opened', () => seen().includes('IPPS:balance_drift resolved') && seen().includes('IPPS:low_partner_balance opened'), { timeoutMs: 60_000 });
      // Topped up: balance_ok.
      await ledger(250_000);
      psp.balanceSatang = 250_000;
      await waitFor('the low balance resolved', () => seen().includes('IPPS:low_partner_balance resolved'), { timeoutMs: 60_000 });
      await twoMoreRuns();
      expect(seen().sort()).toEqual(['IPPS:balance_drift opened', 'IPPS:balance_drift resolved', 'IPPS:low_partner_balance opened', 'IPPS:low_partner_balance resolved']);
      const low = receiver.verified().find((r) => r.json.event === 'opened' && (r.json.alert as { subject: string }).subject === 'IPPS:low_partner_balance')!.json.alert as { level: string };
      expect(low.level).toBe('warning');

      // The PSP down is itself an alert: the run fails, critically.
      psp.down = true;
      await waitFor(
        'the failed run alert',
        () => receiver.verified().some((r) => (r.json.alert as { subject: string; message: string }).subject === '' && (r.json.alert as { message: string }).message.includes('IPPS answered 503')),
        { timeoutMs: 60_000 },
      );
      psp.down = false;
      await waitFor('it resolved', () => receiver.verified().some((r) => (r.json.alert as { subject: string }).subject === '' && r.json.event === 'resolved'), { timeoutMs: 60_000 });
    } finally {
      for (const p of procs) p.kill('SIGTERM');
      await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000))])));
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    }
  });
});
