import { drain, tick } from 'nightshift/testing';
import { describe, expect, it } from 'vitest';
import { defineCheck, isNightshiftError, type CheckResult, type CheckStatus, type NightshiftEvent } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase('wd');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

/** A check whose status a test sets. */
function flag(name: string, options: { failAfter?: number; renotify?: string } = {}) {
  const state: { status: CheckStatus; throws?: Error } = { status: 'ok' };
  const check = defineCheck({
    name,
    every: '1m',
    ...options,
    run: () => {
      if (state.throws) throw state.throws;
      return { status: state.status, message: `flag is ${state.status}`, details: { at: 'x' } };
    },
  });
  return { state, check };
}

async function alertRows(check: string) {
  return (await t.sql.query(`SELECT id::text, level, resolved_at, notifications FROM ${q()}.alerts WHERE check_name = $1 ORDER BY id`, [check])).rows as {
    id: string;
    level: string;
    resolved_at: Date | null;
    notifications: number;
  }[];
}

async function notifications() {
  return (await t.sql.query(`SELECT payload FROM ${q()}.jobs_all WHERE kind = 'nightshift.notify' ORDER BY id`)).rows.map(
    (r: { payload: { notifier: string; notification: { id: string; event: string; sequence: number } } }) => r.payload,
  );
}

describe('the alert state machine, in the database', () => {
  it('opens one alert when a check turns bad, stays quiet while it stays bad, notifies a level change, resolves with its duration', async () => {
    const { state, check } = flag('flag-basic');
    const events: NightshiftEvent[] = [];
    const ns = t.client({ checks: [check], watchdog: { builtins: false, notifiers: [] } });
    ns.on((e) => events.push(e));
    expect((await ns.runCheck('flag-basic')).alerts).toEqual([]);
    state.status = 'warning';
    const opened = await ns.runCheck('flag-basic');
    expect(opened.alerts).toMatchObject([{ event: 'opened', subject: '' }]);
    for (let i = 0; i < 5; i++) expect((await ns.runCheck('flag-basic')).alerts).toEqual([]);
    state.status = 'critical';
    expect((await ns.runCheck('flag-basic')).alerts).toMatchObject([{ event: 'changed' }]);
    state.status = 'ok';
    expect((await ns.runCheck('flag-basic')).alerts).toMatchObject([{ event: 'resolved' }]);
    const rows = await alertRows('flag-basic');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ level: 'critical', notifications: 3 });
    expect(rows[0]!.resolved_at).not.toBeNull();
    const alert = await ns.getAlert(rows[0]!.id);
    expect(alert.state).toBe('resolved');
    // The database's microsecond times, each truncated to a millisecond in the record: within 1 ms.
    expect(Math.abs(alert.durationMs! - (alert.resolvedAt!.getTime() - alert.openedAt.getTime()))).toBeLessThanOrEqual(1);
    expect(events.filter((e) => e.type.startsWith('alert.')).map((e) => e.type)).toEqual(['alert.opened', 'alert.changed', 'alert.resolved']);
    expect(events.filter((e) => e.type === 'check.ran')).toHaveLength(9);
    // The next bad result is a new alert.
    state.status = 'warning';
    await ns.runCheck('flag-basic');
    expect((await alertRows('flag-basic')).map((r) => r.resolved_at === null)).toEqual([false, true]);
  });

  it('enqueues one notification per notifier in the transaction of the change, each with a stable id', async () => {
    const { state, check } = flag('flag-notify');
    const { webhookNotifier, slackNotifier } = await import('../../src/index.js');
    const ns = t.client({
      checks: [check],
      watchdog: {
        builtins: false,
        notifiers: [webhookNotifier({ name: 'hook', url: 'http://127.0.0.1:9/hook', secret: 's3cret' }), slackNotifier({ url: 'http://127.0.0.1:9/slack' })],
      },
    });
    await t.sql.query(`DELETE FROM ${q()}.jobs WHERE kind = 'nightshift.notify'`);
    state.status = 'critical';
    await ns.runCheck('flag-notify');
    await ns.runCheck('flag-notify');
    state.status = 'ok';
    await ns.runCheck('flag-notify');
    const sent = await notifications();
    expect(sent.map((p) => `${p.notifier}:${p.notification.event}:${p.notification.sequence}`)).toEqual(['hook:opened:1', 'slack:opened:1', 'hook:resolved:2', 'slack:resolved:2']);
    const [alert] = await alertRows('flag-notify');
    expect(sent.map((p) => p.notification.id)).toEqual([`${alert!.id}.1`, `${alert!.id}.1`, `${alert!.id}.2`, `${alert!.id}.2`]);
  });

  it('damps flapping: an alert opens only after failAfter bad results in a row', async () => {
    const { state, check } = flag('flag-damped', { failAfter: 3 });
    const ns = t.client({ checks: [check], watchdog: { builtins: false } });
    for (const s of ['warning', 'critical', 'ok', 'warning', 'ok', 'critical', 'warning'] as CheckStatus[]) {
      state.status = s;
      expect((await ns.runCheck('flag-damped')).alerts, s).toEqual([]);
    }
    state.status = 'critical';
    expect((await ns.runCheck('flag-damped')).alerts).toMatchObject([{ event: 'opened' }]);
    expect(await alertRows('flag-damped')).toMatchObject([{ level: 'critical', resolved_at: null }]);
  });

  it('re-notifies an open alert after the interval, and not once it is acknowledged (audited)', async () => {
    const { state, check } = flag('flag-remind', { renotify: '1s' });
    const ns = t.client({ checks: [check], watchdog: { builtins: false } });
    state.status = 'warning';
    await ns.runCheck('flag-remind');
    const [alert] = await alertRows('flag-remind');
    const due = async () => (await t.sql.query(`SELECT last_notified_at < now() - interval '1 second' AS due FROM ${q()}.alerts WHERE id = $1`, [alert!.id])).rows[0].due as boolean;
    // The interval is waited out on the database clock.
    await waitFor('the re-notify interval to pass', due);
    expect((await ns.runCheck('flag-remind')).alerts).toMatchObject([{ event: 'reminder' }]);
    const acked = await ns.ackAlert(alert!.id, { reason: 'on it', actor: 'ada' });
    expect(acked).toMatchObject({ changed: true, alert: { state: 'acknowledged', acknowledgedBy: 'ada', ackReason: 'on it' } });
    expect((await ns.ackAlert(alert!.id, { reason: 'again' })).changed).toBe(false);
    await waitFor('the re-notify interval to pass again', due);
    expect((await ns.runCheck('flag-remind')).alerts).toEqual([]);
    // A level change and the resolve are still sent.
    state.status = 'critical';
    expect((await ns.runCheck('flag-remind')).alerts).toMatchObject([{ event: 'changed' }]);
    state.status = 'ok';
    expect((await ns.runCheck('flag-remind')).alerts).toMatchObject([{ event: 'resolved' }]);
    const audit = await t.sql.query(`SELECT actor, action, target, reason FROM ${q()}.audit_log WHERE target = $1`, [`alert:${alert!.id}`]);
    expect(audit.rows).toEqual([{ actor: 'ada', action: 'alert-ack', target: `alert:${alert!.id}`, reason: 'on it' }]);
    const err = await ns.ackAlert(alert!.id, { reason: 'late' }).catch((e: unknown) => e);
    expect(isNightshiftError(err) && err.code).toBe('NS_ALERT_RESOLVED');
  });

  it('keeps an alert per subject; a subject no longer reported is resolved', async () => {
    let results: CheckResult[] = [];
    const check = defineCheck({ name: 'per-queue', every: '1m', run: () => results });
    const ns = t.client({ checks: [check], watchdog: { builtins: false } });
    results = [
      { subject: 'mail', status: 'warning', message: 'mail lags' },
      { subject: 'psp', status: 'critical', message: 'psp lags' },
    ];
    expect((await ns.runCheck('per-queue')).alerts.map((a) => `${a.subject}:${a.event}`).sort()).toEqual(['mail:opened', 'psp:opened']);
    results = [{ subject: 'psp', status: 'critical', message: 'psp still lags' }];
    expect((await ns.runCheck('per-queue')).alerts.map((a) => `${a.subject}:${a.event}`)).toEqual(['mail:resolved']);
    const open = await ns.listAlerts({ open: true, check: 'per-queue' });
    expect(open).toMatchObject([{ subject: 'psp', level: 'critical', message: 'psp still lags', state: 'open' }]);
  });

  it('a check that throws, times out or returns nonsense is a critical result, and the other subjects keep their state', async () => {
    let mode: 'subjects' | 'throw' | 'hang' | 'nonsense' = 'subjects';
    const check = defineCheck({
      name: 'unreliable',
      every: '1m',
      timeoutMs: 200,
      run: async (ctx) => {
        if (mode === 'throw') throw new Error('provider down');
        if (mode === 'hang') return new Promise<CheckResult>((resolve) => ctx.signal.addEventListener('abort', () => resolve({ status: 'ok', message: 'too late' })));
        if (mode === 'nonsense') return { status: 'fine', message: 1 } as unknown as CheckResult;
        return [{ subject: 'a', status: 'warning', message: 'a is bad' }];
      },
    });
    const ns = t.client({ checks: [check], watchdog: { builtins: false } });
    await ns.runCheck('unreliable');
    mode = 'throw';
    const thrown = await ns.runCheck('unreliable');
    expect(thrown).toMatchObject({ status: 'critical', results: [{ subject: '', status: 'critical', message: 'check failed: provider down' }] });
    expect(thrown.alerts).toEqual([{ alertId: expect.any(String), subject: '', event: 'opened' }]);
    mode = 'hang';
    const hung = await ns.runCheck('unreliable');
    expect(hung.results[0]!.message).toMatch(/^check timed out after 200 ms \(timeoutMs 200\)/);
    mode = 'nonsense';
    expect((await ns.runCheck('unreliable')).results[0]!.message).toMatch(/^check returned an invalid result: status must be 'ok', 'warning' or 'critical', got "fine"/);
    // Subject a was not known during the failures: its alert is still open; the check's own resolves when it works again.
    expect((await ns.listAlerts({ open: true, check: 'unreliable' })).map((a) => a.subject).sort()).toEqual(['', 'a']);
    mode = 'subjects';
    expect((await ns.runCheck('unreliable')).alerts).toMatchObject([{ subject: '', event: 'resolved' }]);
  });

  it('a dry run records nothing', async () => {
    const { state, check } = flag('flag-dry');
    const ns = t.client({ checks: [check], watchdog: { builtins: false } });
    state.status = 'critical';
    const r = await ns.runCheck('flag-dry', { dryRun: true });
    expect(r).toMatchObject({ status: 'critical', applied: false, alerts: [] });
    expect(await alertRows('flag-dry')).toEqual([]);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.check_runs WHERE check_name = 'flag-dry'`)).rows[0].n).toBe(0);
  });

  it('runs as schedule ticks: each tick applied once, a re-run of its job changes nothing, a late tick does not move the state back', async () => {
    const { state, check } = flag('flag-ticks');
    const ns = t.client({ checks: [check], watchdog: { builtins: false } });
    const schedules = ['check:flag-ticks'];
    await tick(ns, '2026-03-01T10:00:00Z', { schedules });
    state.status = 'critical';
    const fired = await tick(ns, '2026-03-01T10:01:00Z', { schedules });
    expect(fired.fired).toMatchObject([{ schedule: 'check:flag-ticks' }]);
    await drain(ns, { kinds: ['check:flag-ticks'] });
    expect(await alertRows('flag-ticks')).toMatchObject([{ level: 'critical', resolved_at: null }]);
    // The same tick's job again (as after a crash between commit and completion): nothing changes.
    const jobId = fired.fired[0]!.jobId;
    // (A finished job is in the history: a retry moves it back and makes it due.)
    await ns.retryJob(jobId, { actor: 'test', reason: 'the same tick again' });
    state.status = 'ok';
    await drain(ns, { kinds: ['check:flag-ticks'] });
    expect(await alertRows('flag-ticks')).toMatchObject([{ resolved_at: null, notifications: 1 }]);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.check_runs WHERE check_name = 'flag-ticks'`)).rows[0].n).toBe(1);
    // The next tick resolves it; then a job for an older tick (run late) is recorded but not applied.
    await tick(ns, '2026-03-01T10:02:00Z', { schedules });
    await drain(ns, { kinds: ['check:flag-ticks'] });
    expect((await alertRows('flag-ticks'))[0]!.resolved_at).not.toBeNull();
    state.status = 'critical';
    await ns.enqueue('check:flag-ticks', { at: '2026-03-01T10:01:30.000Z' });
    await drain(ns, { kinds: ['check:flag-ticks'] });
    const late = await t.sql.query(`SELECT applied FROM ${q()}.check_runs WHERE check_name = 'flag-ticks' AND run_at = '2026-03-01T10:01:30Z'`);
    expect(late.rows).toEqual([{ applied: false }]);
    expect(await alertRows('flag-ticks')).toHaveLength(1);
  });

  it('lists checks with their last run, next run and open alerts', async () => {
    const { state, check } = flag('flag-list');
    const ns = t.client({ checks: [check], watchdog: { builtins: false } });
    state.status = 'warning';
    await ns.runCheck('flag-list');
    const [info] = (await ns.listChecks()).filter((c) => c.name === 'flag-list');
    expect(info).toMatchObject({ name: 'flag-list', builtin: false, spec: 'every 1m', lastRun: { status: 'warning', manual: true }, openAlerts: { warning: 1, critical: 0 }, hostedBy: 0 });
    const err = await ns.runCheck('flag-lsit').catch((e: unknown) => e);
    expect(isNightshiftError(err) && err.code).toBe('NS_CHECK_NOT_FOUND');
    expect(String((err as Error).message)).toContain('did you mean "flag-list"?');
  });
});
