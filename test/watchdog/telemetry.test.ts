import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createLogger, defineCheck, webhookNotifier, type CheckStatus } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

// Metrics of the watchdog, and what its logs and metrics must never carry: a check's message, the
// error it threw, a notifier's secret.
const t = useTestDatabase('wdtel');
t.migrateBeforeAll();

describe('watchdog telemetry', () => {
  it('counts runs and alert changes, gauges open alerts per check and level, and leaves messages, errors and secrets out', async () => {
    const tag = randomBytes(4).toString('hex');
    const canary = { message: `CANARY-MESSAGE-${tag}`, error: `CANARY-ERROR-${tag}`, secret: `CANARY-SECRET-${tag}` };
    const state = { status: 'ok' as CheckStatus, throws: false };
    const check = defineCheck({
      name: 'canary',
      every: '1m',
      run: () => {
        if (state.throws) throw new Error(`the provider said ${canary.error}`);
        return { status: state.status, message: `account ${canary.message} is ${state.status}`, details: { account: canary.message } };
      },
    });
    const lines: string[] = [];
    const logger = createLogger({ level: 'trace', destination: { write: (l: string) => lines.push(l) } });
    const ns = t.client({ checks: [check], logger, watchdog: { builtins: false, notifiers: [webhookNotifier({ url: `https://alerts.example/${canary.secret}`, secret: canary.secret })] } });
    const metrics = ns.metrics();
    state.status = 'critical';
    await ns.runCheck('canary');
    await ns.runCheck('canary');
    state.throws = true;
    await ns.runCheck('canary');
    const text = await metrics.text();
    expect(text).toMatch(/nightshift_alerts_open\{check="canary",level="critical"\} 1/);
    expect(text).toMatch(/nightshift_check_runs_total\{check="canary",status="critical"\} 3/);
    expect(text).toMatch(/nightshift_alert_changes_total\{check="canary",event="opened"\} 1/);
    const logs = lines.join('\n');
    expect(logs).toContain('"event":"alert.opened"');
    expect(logs).toContain('"event":"check.failed"');
    for (const [what, c] of Object.entries(canary)) {
      expect(logs.includes(c), `${what} in logs`).toBe(false);
      expect(text.includes(c), `${what} in metrics`).toBe(false);
    }
    // The alert keeps its message where access is controlled: the database, and the notifications.
    expect((await ns.listAlerts({ open: true })).map((a) => a.message).join()).toContain(canary.error);
  });
});
