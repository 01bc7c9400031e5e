import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, defineJob, DuplicateScheduleError, PayloadInvalidError, ScheduleNotFoundError, UnknownKindError } from '../../src/index.js';
import { defineSchedule } from '../../src/schedules/define-schedule.js';
import { useTestDatabase } from '../support/db.js';
import { useTickers } from './support.js';

const t = useTestDatabase('sched');
t.migrateBeforeAll();
const replica = useTickers(t);

const DAY = 86_400_000;
const settle = defineJob({ kind: 'settle', payload: z.object({ dayId: z.number().int() }), run: () => undefined });
const report = defineJob({ kind: 'report', payload: z.object({ date: z.string() }), run: () => undefined });

const settleSchedule = defineSchedule({
  name: 'settle',
  cron: '0 0 * * *',
  job: settle,
  payload: ({ at }) => ({ dayId: Math.floor(at.getTime() / DAY) - 1 }),
});

async function ticks(name: string) {
  const { rows } = await t.sql.query<{ tick_at: Date; outcome: string; job_id: string | null; error: string | null }>(
    `SELECT tick_at, outcome, job_id::text, error FROM "${t.schema}".schedule_ticks WHERE schedule = $1 ORDER BY tick_at`,
    [name],
  );
  return rows;
}

async function job(id: string) {
  const { rows } = await t.sql.query<{ kind: string; payload: unknown; queue: string; priority: number }>(`SELECT kind, payload, queue, priority FROM "${t.schema}".jobs_all WHERE id = $1`, [id]);
  return rows[0];
}

describe('triggerSchedule', () => {
  it('runs the job now with the given payload, as a manual tick, with an audit row', async () => {
    const { admin, seen } = replica([settleSchedule], [settle]);
    const r = await admin.triggerSchedule('settle', { dayId: 20500 }, { actor: 'ops', reason: 'rerun' });
    expect(await job(r.jobId)).toMatchObject({ kind: 'settle', payload: { dayId: 20500 } });
    const rows = await ticks('settle');
    expect(rows).toEqual([expect.objectContaining({ outcome: 'manual', job_id: r.jobId })]);
    expect(rows[0]!.tick_at.getTime()).toBe(r.at.getTime());
    expect(r.at.getTime() % 1000).not.toBe(0);
    const { rows: audit } = await t.sql.query(`SELECT actor, action, reason FROM "${t.schema}".audit_log WHERE target = 'schedule:settle'`);
    expect(audit).toEqual([{ actor: 'ops', action: 'schedule-trigger', reason: 'rerun' }]);
    expect(seen).toContainEqual(expect.objectContaining({ type: 'schedule.fired', schedule: 'settle', manual: true, jobId: r.jobId }));
  });

  it('without a payload builds it from the trigger time, like a tick', async () => {
    const s = defineSchedule({ name: 'daily-report', cron: '0 6 * * *', tz: 'Europe/Berlin', job: report, payload: (tick) => ({ date: tick.local.date }), enqueue: { queue: 'reports', priority: 5 } });
    const { admin } = replica([s], [report]);
    const r = await admin.triggerSchedule('daily-report');
    const expectedDate = new Intl.DateTimeFormat('en-CA', { timeZone: 'Europe/Berlin' }).format(r.at);
    expect(await job(r.jobId)).toMatchObject({ payload: { date: expectedDate }, queue: 'reports', priority: 5 });
  });

  it('refuses an invalid payload and an unknown schedule, writing nothing', async () => {
    const { admin } = replica([settleSchedule], [settle]);
    await expect(admin.triggerSchedule('settle', { dayId: 'yesterday' })).rejects.toBeInstanceOf(PayloadInvalidError);
    await expect(admin.triggerSchedule('setle')).rejects.toThrow(/did you mean "settle"/);
    await expect(admin.triggerSchedule('nope')).rejects.toBeInstanceOf(ScheduleNotFoundError);
    expect((await ticks('settle')).filter((r) => r.outcome === 'manual')).toHaveLength(1); // the first test's
  });
});

describe('listSchedules', () => {
  it('shows next runs, the last tick with its job state, and schedules only the database knows', async () => {
    const berlin = defineSchedule({ name: 'berlin-morning', cron: '0 9 * * *', tz: 'Europe/Berlin', job: report, payload: (k) => ({ date: k.local.date }) });
    const other = defineSchedule({ name: 'from-another-service', every: '5m', job: report, payload: () => ({ date: 'x' }) });
    await replica([other], [report]).ticker.register();
    const { admin, ticker } = replica([settleSchedule, berlin], [settle, report]);
    await ticker.register();
    const r = await admin.triggerSchedule('berlin-morning');
    const list = await admin.listSchedules({ next: 3 });
    const info = list.find((s) => s.name === 'berlin-morning')!;
    expect(info).toMatchObject({ defined: true, cron: '0 9 * * *', tz: 'Europe/Berlin', kind: 'report', overlap: 'skip', catchUp: { policy: 'latest' }, paused: false, superseded: false });
    expect(info.nextRuns).toHaveLength(3);
    for (const d of info.nextRuns) expect(new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Berlin', hour: '2-digit', minute: '2-digit' }).format(d)).toBe('09:00');
    expect(info.lastTick).toMatchObject({ outcome: 'manual', jobId: r.jobId, jobState: 'available' });
    const foreign = list.find((s) => s.name === 'from-another-service')!;
    expect(foreign).toMatchObject({ defined: false, every: '5m', kind: 'report', nextRuns: [] });
    expect(list.map((s) => s.name)).toEqual([...list.map((s) => s.name)].sort());
  });
});

describe('pause and resume', () => {
  it('a paused schedule does not fire; resumed, it counts from now', async () => {
    const s = defineSchedule({ name: 'paused', every: '1m', job: report, payload: () => ({ date: 'd' }), catchUp: { all: true, window: '1d' }, overlap: 'allow' });
    const { admin, ticker } = replica([s], [report]);
    await ticker.runOnce();
    expect(await admin.pauseSchedule('paused', { reason: 'maintenance' })).toBe(true);
    expect(await admin.pauseSchedule('paused')).toBe(false);
    await t.sql.query(`UPDATE "${t.schema}".schedules SET last_tick_at = now() - interval '10 minutes' WHERE name = 'paused'`);
    expect((await ticker.runOnce()).fired).toEqual([]);
    expect(await admin.resumeSchedule('paused')).toBe(true);
    expect((await ticker.runOnce()).fired).toEqual([]);
    expect(await ticks('paused')).toEqual([]);
    expect((await admin.listSchedules()).find((x) => x.name === 'paused')!.paused).toBe(false);
  });
});

describe('definitions across the fleet and at start-up', () => {
  it('a changed timing takes over: the process with the old one stops firing it', async () => {
    const v1 = defineSchedule({ name: 'changed', every: '1m', job: report, payload: () => ({ date: 'v1' }), catchUp: 'latest', overlap: 'allow', graceMs: 0 });
    const v2 = defineSchedule({ name: 'changed', every: '2m', job: report, payload: () => ({ date: 'v2' }), catchUp: 'latest', overlap: 'allow', graceMs: 0 });
    const old = replica([v1], [report]);
    await old.ticker.register();
    const next = replica([v2], [report]);
    await next.ticker.register();
    await t.sql.query(`UPDATE "${t.schema}".schedules SET last_tick_at = now() - interval '30 minutes' WHERE name = 'changed'`);
    expect((await old.ticker.runOnce()).fired).toEqual([]);
    expect((await next.ticker.runOnce()).fired).toHaveLength(1);
    expect((await old.admin.listSchedules()).find((x) => x.name === 'changed')).toMatchObject({ superseded: true, spec: 'every 2m' });
    // An operator action from a process with the old definition does not take the schedule back.
    await old.admin.triggerSchedule('changed');
    await old.admin.pauseSchedule('changed');
    const { rows } = await t.sql.query(`SELECT spec, paused FROM "${t.schema}".schedules WHERE name = 'changed'`);
    expect(rows).toEqual([{ spec: 'every 2m', paused: true }]);
  });

  it('rejects at start-up a payload function whose result the job refuses, naming the schedule', async () => {
    const bad = defineSchedule({ name: 'bad-payload', cron: '0 0 * * *', job: settle, payload: ({ at }) => ({ dayId: at.toISOString() }) as unknown as { dayId: number } });
    const missing = defineSchedule({ name: 'no-payload', every: '1h', job: settle });
    const { ticker } = replica([bad, missing], [settle]);
    const err = await ticker.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues.map((i) => i.path)).toEqual(['bad-payload.payload', 'no-payload.payload']);
    expect((err as ConfigError).message).toMatch(/does not accept the default payload/);
  });

  it('rejects duplicate names and job kinds the client does not define', () => {
    expect(() => replica([settleSchedule, defineSchedule({ name: 'settle', every: '1m', job: settle })], [settle])).toThrow(DuplicateScheduleError);
    expect(() => replica([defineSchedule({ name: 'x', every: '1m', job: 'setle' })], [settle])).toThrow(UnknownKindError);
  });

  it('records a tick whose payload function throws as failed, and moves on', async () => {
    let calls = 0;
    const flaky = defineSchedule({
      name: 'throws',
      every: '1m',
      job: report,
      overlap: 'allow',
      catchUp: { all: true, window: '1h' },
      payload: () => {
        calls++;
        if (calls % 2 === 0) throw new Error('no data for this tick');
        return { date: 'ok' };
      },
    });
    const { ticker, seen } = replica([flaky], [report]);
    await ticker.runOnce();
    await t.sql.query(`UPDATE "${t.schema}".schedules SET last_tick_at = date_trunc('minute', now()) - interval '4 minutes' WHERE name = 'throws'`);
    const r = await ticker.runOnce();
    expect(r.failed.length).toBeGreaterThanOrEqual(2);
    const rows = await ticks('throws');
    expect(rows.filter((x) => x.outcome === 'failed').every((x) => x.error === 'no data for this tick' && x.job_id === null)).toBe(true);
    expect(rows.filter((x) => x.outcome === 'enqueued')).toHaveLength(r.fired.length);
    expect(seen.filter((e) => e.type === 'schedule.failed')).toHaveLength(r.failed.length);
  });
});
