import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/db.js';
import { startScript, type Proc } from '../support/processes.js';
import { waitFor } from '../support/wait.js';
import { webhookReceiver } from './receivers.js';

// Three real worker processes host one check (every second) with the `watchdog` role; the test
// flips the flag the check reads and watches a webhook receiver on loopback. One of the three is
// killed (SIGKILL) while the alert is open.
const t = useTestDatabase('wdfleet');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const secret = 'fleet-secret';
let receiver: Awaited<ReturnType<typeof webhookReceiver>>;

beforeAll(async () => {
  receiver = await webhookReceiver(secret);
  await t.sql.query(`CREATE TABLE ${q()}.wd_flag (status text NOT NULL)`);
  await t.sql.query(`INSERT INTO ${q()}.wd_flag VALUES ('ok')`);
  await t.sql.query(`CREATE TABLE ${q()}.wd_runs (pid int, tick_at timestamptz)`);
});
afterAll(() => receiver.close());

const applied = async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.check_runs WHERE check_name = 'flag' AND applied`)).rows[0].n as number;
const setFlag = (s: string) => t.sql.query(`UPDATE ${q()}.wd_flag SET status = $1`, [s]);
const events = () => receiver.verified().map((r) => r.json.event as string);

describe('a check on three worker processes', () => {
  it('opens exactly one alert and delivers exactly one notification across many ticks, one on a level change, one on resolve', async () => {
    const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema, WD_WEBHOOK_URL: `${receiver.url}/hook`, WD_WEBHOOK_SECRET: secret, NIGHTSHIFT_LOG_LEVEL: 'warn' };
    const start = () => startScript('src/cli/main.ts', env, ['--config', 'test/watchdog/fixtures/fleet.config.ts', 'worker', '--roles', 'watchdog']);
    const procs: Proc[] = [start(), start(), start()];
    const after = async (what: string, n: number) => {
      const from = await applied();
      await waitFor(`${n} more applied runs ${what}`, async () => (await applied()) >= from + n, { timeoutMs: 90_000 });
    };
    try {
      await Promise.all(procs.map((p) => p.waitForLine('started')));
      await after('while ok', 3);
      expect(receiver.received).toEqual([]);

      await setFlag('warning');
      await waitFor('the opened notification', () => events().length === 1, { timeoutMs: 60_000 });
      // One of the three dies while the alert is open; the other two carry on. It is killed once
      // the delivery is recorded: killed between the receiver's answer and the job's completion,
      // it would be delivered again with the same id (at least once, docs/watchdog.md).
      await waitFor('the delivery recorded', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'nightshift.notify' AND state <> 'completed'`)).rows[0].n === 0);
      procs[0]!.kill('SIGKILL');
      await procs[0]!.exited;
      await after('while warning', 8);
      expect(events()).toEqual(['opened']);

      await setFlag('critical');
      await waitFor('the changed notification', () => events().length === 2, { timeoutMs: 60_000 });
      await after('while critical', 5);
      expect(events()).toEqual(['opened', 'changed']);

      await setFlag('ok');
      await waitFor('the resolved notification', () => events().length === 3, { timeoutMs: 60_000 });
      await after('after the resolve', 5);
      expect(events()).toEqual(['opened', 'changed', 'resolved']);
    } finally {
      for (const p of procs) p.kill('SIGTERM');
      await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000))])));
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    }

    // Every delivery was a distinct notification of the one alert, in sequence.
    const alerts = (await t.sql.query(`SELECT id::text, level, resolved_at, notifications FROM ${q()}.alerts WHERE check_name = 'flag'`)).rows;
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ level: 'critical', notifications: 3 });
    expect(alerts[0].resolved_at).not.toBeNull();
    const id = alerts[0].id as string;
    expect(receiver.verified().map((r) => r.json.id)).toEqual([`${id}.1`, `${id}.2`, `${id}.3`]);
    expect(receiver.received).toHaveLength(3);
    // Each tick was decided once and applied once: one job per tick, one run per tick.
    const ticks = (await t.sql.query(`SELECT tick_at, job_id::text FROM ${q()}.schedule_ticks WHERE schedule = 'check:flag' AND outcome = 'enqueued' ORDER BY tick_at`)).rows as {
      tick_at: Date;
      job_id: string;
    }[];
    expect(new Set(ticks.map((k) => k.job_id)).size).toBe(ticks.length);
    const runs = (await t.sql.query(`SELECT run_at FROM ${q()}.check_runs WHERE check_name = 'flag' ORDER BY run_at`)).rows as { run_at: Date }[];
    const tickTimes = new Set(ticks.map((k) => k.tick_at.getTime()));
    expect(runs.every((r) => tickTimes.has(r.run_at.getTime()))).toBe(true);
    expect(new Set(runs.map((r) => r.run_at.getTime())).size).toBe(runs.length);
    // Every run of the check's function belongs to a decided tick (a re-run after the kill may repeat one; its result was applied once).
    const ran = (await t.sql.query(`SELECT DISTINCT tick_at FROM ${q()}.wd_runs`)).rows as { tick_at: Date }[];
    expect(ran.every((r) => tickTimes.has(r.tick_at.getTime()))).toBe(true);
  });
});
