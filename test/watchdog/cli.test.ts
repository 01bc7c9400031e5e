import { beforeAll, describe, expect, it } from 'vitest';
import { cliInProcess as cli } from '../cli/in-process.js';
import { useTestDatabase } from '../support/db.js';

// `nightshift alerts`, `alerts ack`, `checks list`, `checks run`: tables and --json, exit codes
// (runCli in this process; what the binary adds is in test/cli/binary.test.ts).
const t = useTestDatabase('wdcli');
t.migrateBeforeAll();
// The config reads NS_SCHEMA from process.env (the CLI runs in this process).
process.env.NS_SCHEMA = t.schema;
const q = () => `"${t.schema}"`;
const run = (args: string[]) => cli(['--config', 'test/watchdog/fixtures/cli.config.ts', ...args], { env: { DATABASE_URL: t.url }, cwd: process.cwd() });
const gate = (subject: string, status: string) => t.sql.query(`INSERT INTO ${q()}.wd_gate VALUES ($1, $2) ON CONFLICT (subject) DO UPDATE SET status = $2`, [subject, status]);

beforeAll(async () => {
  await t.sql.query(`CREATE TABLE ${q()}.wd_gate (subject text PRIMARY KEY, status text NOT NULL)`);
});

describe('the watchdog from the CLI', () => {
  it('checks run prints each subject and what changed; --dry-run records nothing; an unknown check has a did-you-mean', async () => {
    await gate('north', 'critical');
    await gate('south', 'ok');
    const dry = await run(['checks', 'run', 'gate', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('gate north is critical');
    expect(dry.stdout).toContain('check gate: critical in');
    expect(dry.stdout).toContain('(dry run: nothing recorded)');
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.alerts`)).rows[0].n).toBe(0);
    const real = await run(['checks', 'run', 'gate', '--json']);
    expect(real.code, real.stderr).toBe(0);
    const report = JSON.parse(real.stdout) as { status: string; applied: boolean; alerts: { subject: string; event: string }[] };
    expect(report).toMatchObject({ status: 'critical', applied: true, alerts: [{ subject: 'north', event: 'opened' }] });
    const typo = await run(['checks', 'run', 'gaet']);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toContain('error NS_CHECK_NOT_FOUND: no check named "gaet"');
    expect(typo.stderr).toContain('did you mean "gate"?');
  });

  it('alerts lists them (--open, --check, --json); alerts ack needs a reason, is audited, and refuses a resolved alert', async () => {
    const list = await run(['alerts', '--open']);
    expect(list.code, list.stderr).toBe(0);
    const [header, , row] = list.stdout.trim().split('\n');
    expect(header).toMatch(/^id\s+check\s+subject\s+level\s+state\s+opened\s+for\s+message$/);
    expect(row).toMatch(/^\d+\s+gate\s+north\s+critical\s+open\s+/);
    const alerts = JSON.parse((await run(['alerts', '--check', 'gate', '--json'])).stdout) as { id: string; state: string; message: string }[];
    expect(alerts).toMatchObject([{ state: 'open', message: 'gate north is critical' }]);
    const id = alerts[0]!.id;
    const noReason = await run(['alerts', 'ack', id]);
    expect(noReason.code).toBe(2);
    expect(noReason.stderr).toContain('error NS_USAGE: --reason is required');
    const ack = await run(['--actor', 'ada', 'alerts', 'ack', id, '--reason', 'gate crew on site']);
    expect(ack.code, ack.stderr).toBe(0);
    expect(ack.stdout.trim()).toBe(`alert ${id} acknowledged`);
    expect((await run(['alerts', 'ack', id, '--reason', 'again'])).stdout.trim()).toBe(`alert ${id} was already acknowledged by ada`);
    const audit = (await t.sql.query(`SELECT actor, action, reason FROM ${q()}.audit_log WHERE target = $1`, [`alert:${id}`])).rows;
    expect(audit).toEqual([{ actor: 'ada', action: 'alert-ack', reason: 'gate crew on site' }]);
    expect((await run(['alerts', '--open'])).stdout).toMatch(/acknowledged by ada/);
    await gate('north', 'ok');
    expect((await run(['checks', 'run', 'gate'])).stdout).toMatch(/alert \d+ \(north\) resolved/);
    const late = await run(['alerts', 'ack', id, '--reason', 'late']);
    expect(late.code).toBe(1);
    expect(late.stderr).toContain(`error NS_ALERT_RESOLVED: alert ${id} is resolved`);
    const missing = await run(['alerts', 'ack', '999999', '--reason', 'x']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('error NS_ALERT_NOT_FOUND: no alert with id 999999');
    expect((await run(['alerts', 'ack', 'abc', '--reason', 'x'])).code).toBe(2);
    expect((await run(['alerts', '--open', '--json'])).stdout.trim()).toBe('[]');
  });

  it('checks list shows the last run, its status and message, the next run and open alerts', async () => {
    await gate('south', 'warning');
    await run(['checks', 'run', 'gate']);
    const table = await run(['checks', 'list']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/gate\s+every 5m\s+\d+s ago\s+warning\s+south: gate south is warning/);
    expect(table.stdout).toContain('0 critical, 1 warning');
    const [info] = JSON.parse((await run(['checks', 'list', '--json'])).stdout) as { name: string; description: string; lastRun: { status: string }; openAlerts: { warning: number }; hostedBy: number }[];
    expect(info).toMatchObject({ name: 'gate', description: 'the gates the test opens and closes', lastRun: { status: 'warning' }, openAlerts: { warning: 1 }, hostedBy: 0 });
  });
});
