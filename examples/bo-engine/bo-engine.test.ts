import { beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../../test/support/db.js';
import { cli } from '../../test/support/cli.js';
import { startScript, type Proc } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait.js';
import { drain, tick } from 'nightshift/testing';
import type { NightshiftConfig } from 'nightshift';

const t = useTestDatabase('bo');
// The settlement's calendar, on a test clock (nightshift/testing's tick), in a schema of its own.
const cal = useTestDatabase('bocal');
cal.migrateBeforeAll();
const CONFIG = 'examples/bo-engine/nightshift.config.ts';
const ROOT = new URL('../..', import.meta.url).pathname;
const env = (fast: boolean) => ({ DATABASE_URL: t.url, NS_SCHEMA: t.schema, ...(fast ? { BO_FAST: '1' } : {}) });
const q = () => `"${t.schema}"`;

beforeAll(async () => {
  const r = await cli(['--config', CONFIG, 'migrate'], { env: env(false), cwd: ROOT });
  expect(r.code, r.stderr).toBe(0);
  await t.sql.query(`CREATE TABLE ${q()}.bo_runs (job_id bigint, kind text, payload jsonb, pid int, token bigint, at timestamptz DEFAULT now())`);
  await t.sql.query(`CREATE TABLE ${q()}.bo_seed_rotations (token bigint, pid int, at timestamptz DEFAULT clock_timestamp())`);
  await t.sql.query(`CREATE TABLE ${q()}.bo_refusals (token bigint, pid int, at timestamptz DEFAULT clock_timestamp())`);
  await cal.sql.query(`CREATE TABLE "${cal.schema}".bo_runs (job_id bigint, kind text, payload jsonb, pid int, token bigint, at timestamptz DEFAULT clock_timestamp())`);
});

describe('seed 000: the bo-engine worker table as one config', () => {
  it('settles every day once, in order, with the id of the day that ended: at midnight, and after three days down', async () => {
    // The config's jobs write to the schema NS_SCHEMA names when it is loaded.
    process.env.NS_SCHEMA = cal.schema;
    const config = (await import('./nightshift.config.js')).default as NightshiftConfig;
    const ns = cal.client({ jobs: [...config.jobs!], schedules: config.schedules!.filter((s) => s.name === 'settle') });
    await tick(ns, '2026-02-16T23:00:00Z');
    expect((await tick(ns, '2026-02-17T00:00:00Z')).fired).toMatchObject([{ schedule: 'settle', late: false }]);
    // Down from just after midnight on the 17th until 00:30 on the 20th, the 17th still unsettled:
    // the 18th, 19th and 20th are within the 3-day window and wait behind it (overlap 'queue').
    const back = await tick(ns, '2026-02-20T00:30:00Z');
    expect(back.queued.map((x) => x.at.toISOString().slice(0, 10))).toEqual(['2026-02-18', '2026-02-19', '2026-02-20']);
    // Each settlement runs, then the next queued tick is released.
    for (let i = 0; i < 4; i++) {
      await drain(ns, { kinds: ['settle'] });
      await tick(ns, '2026-02-20T00:30:00Z');
    }
    const runs = await cal.sql.query(`SELECT (payload->>'dayId')::int AS day FROM "${cal.schema}".bo_runs WHERE kind = 'settle' ORDER BY at`);
    expect(runs.rows.map((r: { day: number }) => r.day)).toEqual([20500, 20501, 20502, 20503]);
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
      ['watchdog', '*/5 * * * *', (d) => d.getUTCMinutes() % 5 === 0],
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
      await waitFor('four ticks of recover-buy-intents', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.schedule_ticks WHERE schedule = 'recover-buy-intents'`)).rows[0].n >= 4, { timeoutMs: 60_000 });
      // Kill the seed daemon's holder: another replica takes over with a larger token.
      const first = await waitFor('a seed daemon holder', holder);
      const victim = procs.find((p) => p.pid === pidOf(first))!;
      const before = (await tokens()).length;
      victim.kill('SIGKILL');
      await victim.exited;
      const second = await waitFor('a new holder after the kill', async () => {
        const h = await holder();
        return h && pidOf(h) !== victim.pid ? h : undefined;
      }, { timeoutMs: 60_000 });
      await waitFor('the new holder to rotate seeds', async () => (await tokens()).length > before);
      // Freeze the new holder past its lease: the third replica takes over; on waking, the frozen
      // holder's next write is refused by its stale token.
      const frozen = procs.find((p) => p.pid === pidOf(second))!;
      frozen.kill('SIGSTOP');
      await waitFor('a third holder', async () => {
        const h = await holder();
        return h && pidOf(h) !== frozen.pid && pidOf(h) !== victim.pid ? h : undefined;
      }, { timeoutMs: 60_000 });
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
      await waitFor('three more ticks after the kill', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.schedule_ticks WHERE schedule = 'recover-buy-intents'`)).rows[0].n >= ticksNow + 3, { timeoutMs: 60_000 });
    } finally {
      for (const p of procs) p.kill('SIGTERM');
      await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000))])));
      for (const p of procs) p.kill('SIGKILL');
      await Promise.all(procs.map((p) => p.exited));
    }

    // Exactly once: every tick of the fast schedules has one row (the primary key) and one job,
    // no job belongs to two ticks, and the ticks of each 2-second schedule are contiguous.
    for (const schedule of ['recover-buy-intents', 'resolve-pending-claims']) {
      const ticks = (await t.sql.query(`SELECT tick_at, job_id::text, outcome FROM ${q()}.schedule_ticks WHERE schedule = $1 AND outcome <> 'manual' ORDER BY tick_at`, [schedule])).rows as { tick_at: Date; job_id: string | null; outcome: string }[];
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
