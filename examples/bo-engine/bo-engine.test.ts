import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NightshiftConfig } from 'nightshift';
import { drain, tick } from 'nightshift/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../../test/support/cli.js';
import { useTestDatabase } from '../../test/support/db.js';
import { startScript, type Proc } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait.js';
import { telegramReceiver, type Receiver } from '../../test/watchdog/receivers.js';
import { boTables as TABLES } from './tables.js';

const t = useTestDatabase('bo');
// The settlement's calendar, on a test clock (nightshift/testing's tick), in a schema of its own.
const cal = useTestDatabase('bocal');
cal.migrateBeforeAll();
const CONFIG = 'examples/bo-engine/nightshift.config.ts';
const ROOT = new URL('../..', import.meta.url).pathname;
const ARTIFACTS = mkdtempSync(join(tmpdir(), 'bo-artifacts-'));
// Seed 000's alerts go to Telegram: here to a fake of the Bot API on loopback.
const TOKEN = '4242:bo-engine-test';
let telegram: Receiver;
const telegramEnv = () => ({ TELEGRAM_BOT_TOKEN: TOKEN, TELEGRAM_CHAT_ID: '-1001', TELEGRAM_API_URL: telegram.url });
const env = (fast: boolean) => ({ DATABASE_URL: t.url, NS_SCHEMA: t.schema, BO_ARTIFACTS: ARTIFACTS, ...telegramEnv(), ...(fast ? { BO_FAST: '1' } : {}) });
const q = () => `"${t.schema}"`;

beforeAll(async () => {
  telegram = await telegramReceiver(TOKEN);
  // The config reads its notifier's settings when it is first imported (in the tests below).
  Object.assign(process.env, telegramEnv());
  const r = await cli(['--config', CONFIG, 'migrate'], { env: env(false), cwd: ROOT });
  expect(r.code, r.stderr).toBe(0);
  await t.sql.query(TABLES(q()));
  await cal.sql.query(TABLES(`"${cal.schema}"`));
});
afterAll(() => telegram.close());

describe('seed 000: the bo-engine worker table as one config', () => {
  it('settles every day once, in order, with the id of the day that ended: at midnight, and after three days down', async () => {
    // The config's jobs and pipeline write to the schema NS_SCHEMA names when it is loaded.
    process.env.NS_SCHEMA = cal.schema;
    process.env.BO_ARTIFACTS = mkdtempSync(join(tmpdir(), 'bo-cal-'));
    const config = (await import('./nightshift.config.js')).default as NightshiftConfig;
    const ns = cal.client({ jobs: [...config.jobs!], pipelines: [...config.pipelines!], schedules: config.schedules!.filter((s) => s.name === 'settle') });
    await tick(ns, '2026-02-16T23:00:00Z');
    expect((await tick(ns, '2026-02-17T00:00:00Z')).fired).toMatchObject([{ schedule: 'settle', late: false }]);
    await drain(ns);
    // Down from just after midnight on the 17th until 00:30 on the 20th: the 18th, 19th and 20th
    // are within the 3-day window; each starts its run, oldest first.
    const back = await tick(ns, '2026-02-20T00:30:00Z');
    expect(back.fired.map((x) => x.at.toISOString().slice(0, 10))).toEqual(['2026-02-18', '2026-02-19', '2026-02-20']);
    await drain(ns);
    const runs = (await ns.pipelines.listRuns({ pipeline: 'settlement' })).reverse();
    expect(runs.map((r) => [r.key, r.state, r.warnings])).toEqual([
      ['20500', 'succeeded', 0],
      ['20501', 'succeeded', 0],
      ['20502', 'succeeded', 0],
      ['20503', 'succeeded', 0],
    ]);
    // Each settled day enqueued its pot sync once (the follow-up), on top of the 15-minute schedule.
    const syncs = await cal.sql.query(`SELECT count(*)::int AS n FROM "${cal.schema}".jobs_all WHERE kind = 'update-pot-sizes'`);
    expect(syncs.rows[0].n).toBe(4);
  });

  it('expresses every row of the table, with its next runs', async () => {
    const r = await cli(['--config', CONFIG, 'schedules', 'list', '--json', '--next', '2'], { env: env(false), cwd: ROOT });
    expect(r.code, r.stderr).toBe(0);
    const list = JSON.parse(r.stdout) as { name: string; cron: string; nextRuns: string[] }[];
    const byName = new Map(list.map((s) => [s.name, s]));
    const expectations: [string, string, (d: Date) => boolean][] = [
      ['settle', '0 0 * * *', (d) => d.getUTCHours() === 0 && d.getUTCMinutes() === 0],
      ['recover-buy-intents', '*/2 * * * *', (d) => d.getUTCMinutes() % 2 === 0 && d.getUTCSeconds() === 0],
      ['resolve-pending-claims', '*/2 * * * *', (d) => d.getUTCMinutes() % 2 === 0],
      ['update-pot-sizes', '*/15 * * * *', (d) => d.getUTCMinutes() % 15 === 0],
      ['affiliate-bonus-night', '30 0 * * *', (d) => d.getUTCHours() === 0 && d.getUTCMinutes() === 30],
      ['affiliate-bonus-noon', '0 12 * * *', (d) => d.getUTCHours() === 12 && d.getUTCMinutes() === 0],
      ['re-engagement-email', '0 10 * * *', (d) => d.getUTCHours() === 10],
      ['leaderboard-bonus', '0 1 1 * *', (d) => d.getUTCDate() === 1 && d.getUTCHours() === 1],
    ];
    for (const [name, cron, fits] of expectations) {
      const s = byName.get(name);
      expect(s, name).toBeDefined();
      expect(s!.cron).toBe(cron);
      expect(s!.nextRuns).toHaveLength(2);
      for (const at of s!.nextRuns) expect(fits(new Date(at)), `${name} at ${at}`).toBe(true);
    }
  });

  it('replaces the cron watchdog with checks: every 5 minutes, and the settlement check from 01:00 on', async () => {
    const r = await cli(['--config', CONFIG, 'checks', 'list', '--json'], { env: env(false), cwd: ROOT });
    expect(r.code, r.stderr).toBe(0);
    const list = JSON.parse(r.stdout) as { name: string; spec: string; builtin: boolean }[];
    expect(list.filter((c) => !c.builtin).map((c) => [c.name, c.spec])).toEqual([
      ['stuck-buy-intents', 'every 5m'],
      ['settlement-done', 'cron */5 1-23 * * * UTC'],
      ['pot-sync-stale', 'every 5m'],
    ]);
    expect(list.filter((c) => c.builtin).map((c) => c.name)).toContain('nightshift.leaderless-daemons');
  });

  it('the settlement not done by 01:00 alerts through Telegram and resolves once the day is settled; stuck intents and a stale pot sync alert too', async () => {
    process.env.NS_SCHEMA = cal.schema;
    const config = (await import('./nightshift.config.js')).default as NightshiftConfig;
    const ns = cal.client({ jobs: [...config.jobs!], pipelines: [...config.pipelines!], checks: [...config.checks!], watchdog: config.watchdog! });
    const schedules = ['check:settlement-done', 'check:stuck-buy-intents', 'check:pot-sync-stale'];
    const c = `"${cal.schema}"`;
    // Before 01:00 on 2026-03-02: two intents pending since 00:45, the pots last synced at 00:30.
    await cal.sql.query(`INSERT INTO ${c}.bo_buy_intents (status, created_at) VALUES ('pending', '2026-03-02T00:45:00Z'), ('pending', '2026-03-02T00:45:00Z'), ('done', '2026-03-02T00:10:00Z')`);
    await cal.sql.query(`INSERT INTO ${c}.bo_runs (kind, payload, at) VALUES ('update-pot-sizes', '{}', '2026-03-02T00:30:00Z')`);
    await tick(ns, '2026-03-02T00:55:00Z', { schedules });
    await tick(ns, '2026-03-02T01:00:00Z', { schedules });
    await drain(ns, { kinds: schedules });
    const open = await ns.listAlerts({ open: true });
    const by = (check: string) => open.find((a) => a.check === check);
    expect(by('settlement-done')).toMatchObject({ level: 'critical', details: { dayId: 20513 } });
    expect(by('settlement-done')!.message).toContain('the settlement of day 20513 (2026-03-01) was not done by 01:00 UTC');
    expect(by('stuck-buy-intents')).toMatchObject({ level: 'warning', details: { pending: 2 } });
    expect(by('pot-sync-stale')).toMatchObject({ level: 'warning', details: { lastSyncAt: '2026-03-02T00:30:00.000Z' } });
    await drain(ns, { kinds: ['nightshift.notify'] });
    const texts = () => telegram.received.map((m) => String(m.json.text).split('\n')[0]);
    expect(texts()).toEqual(expect.arrayContaining(['[CRITICAL] settlement-done: opened', '[WARNING] stuck-buy-intents: opened', '[WARNING] pot-sync-stale: opened']));
    expect(telegram.received.every((m) => m.json.chat_id === '-1001')).toBe(true);
    // The operator reruns the settlement of that day; the next check resolves the alert and says so.
    await ns.pipelines.start('settlement', '20513');
    await drain(ns);
    await tick(ns, '2026-03-02T01:05:00Z', { schedules: ['check:settlement-done'] });
    await drain(ns, { kinds: ['check:settlement-done', 'nightshift.notify'] });
    expect(await ns.listAlerts({ open: true, check: 'settlement-done' })).toEqual([]);
    // (How long it was open is measured on the database clock, not the test clock.)
    expect(texts().at(-1)).toMatch(/^\[RESOLVED\] settlement-done: resolved after \d+ (ms|s)$/);
  });

  it('runs on three replicas: each tick once, a killed replica changes nothing, the seed daemon fails over and its deposed holder is refused', async () => {
    const start = () => startScript('src/cli/main.ts', { ...env(true), NIGHTSHIFT_LOG_LEVEL: 'warn' }, ['--config', 'examples/bo-engine/nightshift.config.ts', 'worker']);
    const procs: Proc[] = [start(), start(), start()];
    let frozenPid = 0;
    const tokens = async () => (await t.sql.query(`SELECT DISTINCT token::text, pid FROM ${q()}.bo_seed_rotations ORDER BY 1`)).rows as { token: string; pid: number }[];
    const holder = async () => (await t.sql.query(`SELECT holder FROM ${q()}.leases WHERE name = 'daemon:refresh-seeds' AND expires_at > now()`)).rows[0]?.holder as string | undefined;
    const pidOf = (h: string) => Number(h.split(':')[1]);
    try {
      await Promise.all(procs.map((p) => p.waitForLine('started')));
      // Enough ticks of the 2-second schedules before the first kill.
      await waitFor('four ticks of recover-buy-intents', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.schedule_ticks WHERE schedule = 'recover-buy-intents'`)).rows[0].n >= 4, {
        timeoutMs: 60_000,
      });
      // Kill the seed daemon's holder: another replica takes over with a larger token.
      const first = await waitFor('a seed daemon holder', holder);
      const victim = procs.find((p) => p.pid === pidOf(first))!;
      const before = (await tokens()).length;
      victim.kill('SIGKILL');
      await victim.exited;
      const second = await waitFor(
        'a new holder after the kill',
        async () => {
          const h = await holder();
          return h && pidOf(h) !== victim.pid ? h : undefined;
        },
        { timeoutMs: 60_000 },
      );
      await waitFor('the new holder to rotate seeds', async () => (await tokens()).length > before);
      // Freeze the new holder past its lease: the third replica takes over; on waking, the frozen
      // holder's next write is refused by its stale token.
      const frozen = procs.find((p) => p.pid === pidOf(second))!;
      frozen.kill('SIGSTOP');
      await waitFor(
        'a third holder',
        async () => {
          const h = await holder();
          return h && pidOf(h) !== frozen.pid && pidOf(h) !== victim.pid ? h : undefined;
        },
        { timeoutMs: 60_000 },
      );
      frozenPid = frozen.pid;
      frozen.kill('SIGCONT');
      // On waking it either writes first and is refused by its stale token, or its elector notices
      // the lost lease first and stops the daemon; either way it must not write under its old term.
      await waitFor('the woken holder to be refused or deposed', async () => {
        const refused = (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.bo_refusals WHERE pid = $1`, [frozen.pid])).rows[0].n > 0;
        return refused || frozen.output().includes('"event":"leader.deposed"');
      });
      // More ticks after the kill, with two replicas left.
      const ticksNow = (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.schedule_ticks WHERE schedule = 'recover-buy-intents'`)).rows[0].n;
      await waitFor('three more ticks after the kill', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.schedule_ticks WHERE schedule = 'recover-buy-intents'`)).rows[0].n >= ticksNow + 3, {
        timeoutMs: 60_000,
      });
    } finally {
      for (const p of procs) p.kill('SIGTERM');
      await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000))])));
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    }

    // Exactly once: every tick of the fast schedules has one row (the primary key) and one job,
    // no job belongs to two ticks, and the ticks of each 2-second schedule are contiguous.
    for (const schedule of ['recover-buy-intents', 'resolve-pending-claims']) {
      const ticks = (await t.sql.query(`SELECT tick_at, job_id::text, outcome FROM ${q()}.schedule_ticks WHERE schedule = $1 AND outcome <> 'manual' ORDER BY tick_at`, [schedule])).rows as {
        tick_at: Date;
        job_id: string | null;
        outcome: string;
      }[];
      const enqueued = ticks.filter((k) => k.outcome === 'enqueued');
      expect(new Set(enqueued.map((k) => k.job_id)).size).toBe(enqueued.length);
      for (let i = 1; i < ticks.length; i++) expect(ticks[i]!.tick_at.getTime() - ticks[i - 1]!.tick_at.getTime(), `${schedule} gap`).toBe(2_000);
      const jobs = (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = $1`, [schedule])).rows[0].n;
      expect(jobs).toBe(enqueued.length);
    }
    // The seed daemon: tokens strictly increase with time, and no token was used by two processes.
    const rotations = (await t.sql.query(`SELECT token::text, pid FROM ${q()}.bo_seed_rotations ORDER BY at`)).rows as { token: string; pid: number }[];
    for (let i = 1; i < rotations.length; i++) expect(BigInt(rotations[i]!.token) >= BigInt(rotations[i - 1]!.token)).toBe(true);
    const pidsPerToken = new Map<string, Set<number>>();
    for (const r of rotations) pidsPerToken.set(r.token, (pidsPerToken.get(r.token) ?? new Set()).add(r.pid));
    expect([...pidsPerToken.values()].every((s) => s.size === 1)).toBe(true);
    expect(new Set(rotations.map((r) => r.pid)).size).toBeGreaterThanOrEqual(3);
    // Nothing the frozen holder wrote committed after the next holder's term began.
    const late = await t.sql.query(
      `SELECT count(*)::int AS n FROM ${q()}.bo_seed_rotations r
       WHERE r.pid = $1 AND r.at > (SELECT min(at) FROM ${q()}.bo_seed_rotations WHERE token > (SELECT max(token) FROM ${q()}.bo_seed_rotations WHERE pid = $1))`,
      [frozenPid],
    );
    expect(late.rows[0].n).toBe(0);
  });
});

describe('seed 000/001: the daily settlement as a pipeline on three workers', () => {
  it('survives a worker killed mid-step with every step recorded once, and a rerun after a failed pool repeats only that pool', async () => {
    // Every transition of a step to succeeded, counted: an output written twice would show here.
    await t.sql.query(`
      CREATE TABLE ${q()}.bo_step_writes (run_id bigint, step text, item text, at timestamptz DEFAULT clock_timestamp());
      CREATE FUNCTION ${q()}.bo_count_writes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO ${q()}.bo_step_writes (run_id, step, item) VALUES (NEW.run_id, NEW.step, NEW.item); RETURN NEW; END $$;
      CREATE TRIGGER bo_count_writes AFTER UPDATE ON ${q()}.pipeline_steps
        FOR EACH ROW WHEN (NEW.state = 'succeeded' AND OLD.state IS DISTINCT FROM 'succeeded') EXECUTE FUNCTION ${q()}.bo_count_writes();`);
    const run = (day: string) =>
      t.sql
        .query(`SELECT id::text, state, reason, warnings FROM ${q()}.pipeline_runs WHERE key = $1 AND NOT dry_run`, [day])
        .then((r) => r.rows[0] as { id: string; state: string; reason: string | null; warnings: number } | undefined);
    const start = () => startScript('src/cli/main.ts', { ...env(true), NIGHTSHIFT_LOG_LEVEL: 'warn' }, ['--config', CONFIG, 'worker', '--roles', 'workers']);
    const procs: Proc[] = [start(), start(), start()];
    try {
      await Promise.all(procs.map((p) => p.waitForLine('started')));
      const started = await cli(['--config', CONFIG, '--actor', 'ops@bo', 'pipelines', 'start', 'settlement', '20444', '--reason', 'nightly run', '--json'], { env: env(true), cwd: ROOT });
      expect(started.code, started.stderr).toBe(0);
      expect(JSON.parse(started.stdout)).toMatchObject({ created: true, run: { key: '20444', state: 'running' } });
      // A pool is being settled: kill the worker that settles it, mid-step.
      const first = await waitFor(
        'a pool settlement in flight',
        async () => (await t.sql.query(`SELECT pool, pid FROM ${q()}.bo_settle_attempts WHERE day_id = '20444' ORDER BY at LIMIT 1`)).rows[0] as { pool: number; pid: number } | undefined,
        { timeoutMs: 60_000 },
      );
      const victim = procs.find((p) => p.pid === first.pid)!;
      victim.kill('SIGKILL');
      await victim.exited;
      await waitFor('the settlement of 20444 to end', async () => (await run('20444'))?.state === 'succeeded', { timeoutMs: 120_000, everyMs: 200 });

      // Every step and item ran to exactly one recorded output.
      const rows = (
        await t.sql.query(
          `SELECT s.step, s.item, s.state, s.output, s.attempts FROM ${q()}.pipeline_steps s JOIN ${q()}.pipeline_runs r ON r.id = s.run_id WHERE r.key = '20444' AND NOT r.dry_run ORDER BY s.step, s.item`,
        )
      ).rows as { step: string; item: string; state: string; output: { settledBy?: number } | null; attempts: number }[];
      expect(rows.map((r) => [r.step, r.item, r.state])).toEqual([
        ['commit', '', 'succeeded'],
        ['freeze', '', 'succeeded'],
        ['globalStats', '', 'succeeded'],
        ['merkle', '', 'succeeded'],
        ['notifyWinners', '', 'succeeded'],
        ['potSync', '', 'succeeded'],
        ['settle', '', 'succeeded'],
        ['settle', 'pool-0', 'succeeded'],
        ['settle', 'pool-1', 'succeeded'],
        ['settle', 'pool-2', 'succeeded'],
        ['settle', 'pool-3', 'succeeded'],
        ['settle', 'pool-4', 'succeeded'],
      ]);
      const writes = (await t.sql.query(`SELECT step, item, count(*)::int AS n FROM ${q()}.bo_step_writes GROUP BY step, item`)).rows as { n: number }[];
      expect(writes).toHaveLength(rows.length);
      expect(writes.every((w) => w.n === 1)).toBe(true);
      // The killed worker's pool: attempted by it, recorded by another worker's later attempt.
      const rescued = rows.find((r) => r.item === `pool-${first.pool}`)!;
      expect(rescued.attempts).toBeGreaterThanOrEqual(2);
      expect(rescued.output!.settledBy).not.toBe(victim.pid);
      expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.bo_payouts WHERE day_id = '20444'`)).rows[0].n).toBe(5);
      // The seed's seven artifacts, with their checksums, verified — once the worker that ended the
      // run has published them (just after the run's end commits).
      await waitFor('the artifacts of 20444 to be published', async () => (await t.sql.query(`SELECT artifacts_published_at FROM ${q()}.pipeline_runs WHERE key = '20444'`)).rows[0].artifacts_published_at, {
        timeoutMs: 60_000,
      });
      expect(readdirSync(join(ARTIFACTS, 'dayId=20444')).sort()).toEqual([
        'affiliate_merkle.json',
        'affiliates.json',
        'checksums.json',
        'commit_bundle.json',
        'inputs.json',
        'settlement_result.json',
        'winners_merkle.json',
      ]);
      const verified = await cli(['--config', CONFIG, 'pipelines', 'verify', 'settlement', '20444'], { env: env(true), cwd: ROOT });
      expect(verified.code, verified.stderr).toBe(0);
      expect(verified.stdout).toContain('all 6 artifact(s)');
      // The pot sync follow-up, once.
      expect(
        (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'update-pot-sizes' AND created_at >= (SELECT created_at FROM ${q()}.pipeline_runs WHERE key = '20444')`)).rows[0].n,
      ).toBeGreaterThanOrEqual(1);
      expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pipeline_followups f JOIN ${q()}.pipeline_runs r ON r.id = f.run_id WHERE r.key = '20444'`)).rows[0].n).toBe(1);

      // Pool 3 of the next day fails until its cause is fixed: the run fails, the alert goes out once.
      await t.sql.query(`INSERT INTO ${q()}.bo_faults (day_id, pool) VALUES ('20445', 3)`);
      expect((await cli(['--config', CONFIG, 'pipelines', 'start', 'settlement', '20445'], { env: env(true), cwd: ROOT })).code).toBe(0);
      await waitFor('the settlement of 20445 to fail', async () => (await run('20445'))?.state === 'failed', { timeoutMs: 120_000, everyMs: 200 });
      expect((await run('20445'))!.reason).toMatch(/^step "settle" item "pool-3" failed: pool 3: settlement transaction reverted/);
      // Let the other pools (draining) finish before the rerun, so the rerun's work is what it chose.
      await waitFor(
        'the other pools to be recorded',
        async () =>
          (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pipeline_steps s JOIN ${q()}.pipeline_runs r ON r.id = s.run_id WHERE r.key = '20445' AND s.item <> '' AND s.state IN ('ready', 'running')`))
            .rows[0].n === 0,
        { timeoutMs: 60_000 },
      );
      await waitFor('the alert', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.bo_alerts WHERE day_id = '20445'`)).rows[0].n === 1, { timeoutMs: 60_000 });
      const before = (await t.sql.query(`SELECT pool FROM ${q()}.bo_settle_attempts WHERE day_id = '20445' ORDER BY at`)).rows.length;
      await t.sql.query(`DELETE FROM ${q()}.bo_faults`);
      const rerun = await cli(['--config', CONFIG, 'pipelines', 'rerun', 'settlement', '20445', '--reason', 'rpc fixed'], { env: env(true), cwd: ROOT });
      expect(rerun.code, rerun.stderr).toBe(0);
      await waitFor('the rerun to settle 20445', async () => (await run('20445'))?.state === 'succeeded', { timeoutMs: 120_000, everyMs: 200 });
      const after = (await t.sql.query(`SELECT pool FROM ${q()}.bo_settle_attempts WHERE day_id = '20445' ORDER BY at`)).rows.slice(before).map((r: { pool: number }) => r.pool);
      expect(after).toEqual([3]);
      expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.bo_alerts WHERE day_id = '20445'`)).rows[0].n).toBe(1);
    } catch (err) {
      // What the runs looked like, and what the workers said, for the failure report.
      console.log(
        'steps:',
        new Date().toISOString(),
        JSON.stringify(
          (
            await t.sql.query(
              `SELECT r.key, r.state AS rs, r.created_at, r.finished_at, s.step, s.item, s.state, s.started_at, s.finished_at, j.state AS js, j.attempt, j.created_at AS jc, j.started_at AS jst FROM ${q()}.pipeline_steps s JOIN ${q()}.pipeline_runs r ON r.id = s.run_id LEFT JOIN ${q()}.jobs_all j ON j.id = s.job_id ORDER BY r.id, s.started_at`,
            )
          ).rows,
        ),
      );
      console.log('settle attempts:', JSON.stringify((await t.sql.query(`SELECT * FROM ${q()}.bo_settle_attempts ORDER BY at`)).rows));
      console.log('workers:', procs.map((p) => p.output().slice(-3000)).join('\n-----\n'));
      throw err;
    } finally {
      for (const p of procs) p.kill('SIGTERM');
      await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000))])));
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    }
  });
});
