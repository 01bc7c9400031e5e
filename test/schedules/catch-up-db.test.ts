import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { defineSchedule, type CatchUp } from '../../src/schedules/define-schedule.js';
import { useTestDatabase } from '../support/db.js';
import { useTickers } from './support.js';

const t = useTestDatabase('sched');
t.migrateBeforeAll();
const replica = useTickers(t);

const DAY = 86_400_000;
const MIN = 60_000;
const beat = defineJob({ kind: 'beat', payload: z.object({ at: z.string() }), run: () => undefined });
const settle = defineJob({ kind: 'settle', payload: z.object({ dayId: z.number().int() }), run: () => undefined });

async function ticks(name: string) {
  const { rows } = await t.sql.query<{ tick_at: Date; outcome: string; job_id: string | null; missed: number }>(
    `SELECT tick_at, outcome, job_id::text, missed FROM "${t.schema}".schedule_ticks WHERE schedule = $1 ORDER BY tick_at`,
    [name],
  );
  return rows;
}

/** The jobs a schedule's ticks enqueued. */
async function jobsOf(schedule: string) {
  const { rows } = await t.sql.query<{ id: string; payload: Record<string, unknown> }>(
    `SELECT j.id::text, j.payload FROM "${t.schema}".jobs_all j JOIN "${t.schema}".schedule_ticks k ON k.job_id = j.id
     WHERE k.schedule = $1 ORDER BY j.id`,
    [schedule],
  );
  return rows;
}

/** Simulates downtime: moves the schedule's last decided tick back, as if no ticker had run since. */
async function downtime(name: string, sql: string): Promise<Date> {
  const { rows } = await t.sql.query<{ last_tick_at: Date }>(`UPDATE "${t.schema}".schedules SET last_tick_at = ${sql} WHERE name = $1 RETURNING last_tick_at`, [name]);
  return rows[0]!.last_tick_at;
}

async function lastTickAt(name: string): Promise<number> {
  const { rows } = await t.sql.query<{ last_tick_at: Date }>(`SELECT last_tick_at FROM "${t.schema}".schedules WHERE name = $1`, [name]);
  return rows[0]!.last_tick_at.getTime();
}

function minuteSchedule(name: string, catchUp: CatchUp) {
  // graceMs 0: no tick counts as on time, so every due tick is "missed" and the policy alone decides.
  return defineSchedule({ name, every: '1m', job: beat, payload: ({ at }) => ({ at: at.toISOString() }), catchUp, overlap: 'allow', graceMs: 0 });
}

describe('catch-up after downtime', () => {
  it('a schedule first seen gets no ticks from before it existed', async () => {
    const s = minuteSchedule('first-seen', { all: true, window: '1d' });
    const { ticker } = replica([s], [beat]);
    const report = await ticker.runOnce();
    expect(report.fired).toEqual([]);
    expect(await ticks('first-seen')).toEqual([]);
  });

  it("'none' skips every missed tick, recording one skipped-catchup row that stands for all", async () => {
    const s = minuteSchedule('none', 'none');
    const { ticker, seen } = replica([s], [beat]);
    await ticker.runOnce();
    const since = (await downtime('none', `date_trunc('minute', now()) - interval '60 minutes'`)).getTime();
    const report = await ticker.runOnce();
    const decided = await lastTickAt('none');
    expect(report.fired).toEqual([]);
    const rows = await ticks('none');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ outcome: 'skipped-catchup', job_id: null, missed: (decided - since) / MIN });
    expect(rows[0]!.tick_at.getTime()).toBe(decided);
    expect(await jobsOf('none')).toHaveLength(0);
    expect(seen.find((e) => e.type === 'schedule.caught-up')).toMatchObject({ schedule: 'none', fired: 0, skipped: (decided - since) / MIN });
  });

  it("'latest' runs the most recent missed tick once and skips the older ones", async () => {
    const s = minuteSchedule('latest', 'latest');
    const { ticker } = replica([s], [beat]);
    await ticker.runOnce();
    const since = (await downtime('latest', `date_trunc('minute', now()) - interval '60 minutes'`)).getTime();
    const report = await ticker.runOnce();
    const decided = await lastTickAt('latest');
    expect(report.fired.map((f) => f.at.getTime())).toEqual([decided]);
    const rows = await ticks('latest');
    expect(rows.map((r) => r.outcome)).toEqual(['skipped-catchup', 'enqueued']);
    expect(rows[0]).toMatchObject({ missed: (decided - since) / MIN - 1 });
    expect(rows[0]!.tick_at.getTime()).toBe(decided - MIN);
    const jobs = await jobsOf('latest');
    expect(jobs.map((j) => j.payload.at)).toEqual([new Date(decided).toISOString()]);
    expect(rows[1]!.job_id).toBe(jobs[0]!.id);
  });

  it('{ all, window } runs every missed tick inside the window, oldest first, and skips the rest', async () => {
    const s = minuteSchedule('all', { all: true, window: '10m' });
    const { ticker } = replica([s], [beat]);
    await ticker.runOnce();
    const since = (await downtime('all', `date_trunc('minute', now()) - interval '60 minutes'`)).getTime();
    const report = await ticker.runOnce();
    const decided = await lastTickAt('all');
    const fired = report.fired.map((f) => f.at.getTime());
    // The window is 10 minutes back from the ticker's now, which lies in [decided, decided + 1m).
    expect(fired.length === 10 || fired.length === 11).toBe(true);
    fired.forEach((at, i) => expect(at).toBe(decided - (fired.length - 1 - i) * MIN));
    const rows = await ticks('all');
    const skipped = rows.filter((r) => r.outcome === 'skipped-catchup');
    expect(skipped).toHaveLength(1);
    expect(skipped[0]!.tick_at.getTime()).toBe(fired[0]! - MIN);
    expect(skipped[0]!.missed + fired.length).toBe((decided - since) / MIN);
    expect(rows.filter((r) => r.outcome === 'enqueued')).toHaveLength(fired.length);
    expect((await jobsOf('all')).map((j) => j.payload.at)).toEqual(fired.map((x) => new Date(x).toISOString()));
  });

  it('{ all } with more missed ticks than one batch decides them over several transactions, each once', async () => {
    const s = minuteSchedule('batches', { all: true, window: '1d' });
    const { ticker } = replica([s], [beat], { batchSize: 7 });
    await ticker.runOnce();
    const since = (await downtime('batches', `date_trunc('minute', now()) - interval '30 minutes'`)).getTime();
    const report = await ticker.runOnce();
    const decided = await lastTickAt('batches');
    expect(report.fired).toHaveLength((decided - since) / MIN);
    const jobs = await jobsOf('batches');
    expect(new Set(jobs.map((j) => j.payload.at)).size).toBe(jobs.length);
  });

  it('builds the payload from the tick: the settlement at 00:00 UTC gets the id of the day that ended', async () => {
    const s = defineSchedule({
      name: 'settle',
      cron: '0 0 * * *',
      job: settle,
      payload: ({ at }) => ({ dayId: Math.floor(at.getTime() / DAY) - 1 }),
      catchUp: { all: true, window: '3d' },
      overlap: 'allow',
    });
    const { ticker } = replica([s], [settle]);
    await ticker.runOnce();
    // Down since just before midnight two days ago: two midnights were missed.
    await downtime('settle', `date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 day' - interval '1 minute'`);
    const { rows } = await t.sql.query<{ today: number }>(`SELECT (extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC')) / 86400)::int AS today`);
    const today = rows[0]!.today;
    const report = await ticker.runOnce();
    expect(report.fired.map((f) => f.at.getTime())).toEqual([(today - 1) * DAY, today * DAY]);
    expect((await jobsOf('settle')).map((j) => j.payload)).toEqual([{ dayId: today - 2 }, { dayId: today - 1 }]);
  });

  it('never fires a tick twice: the primary key refuses ticks already decided, even when last_tick_at goes back', async () => {
    const s = minuteSchedule('pk', { all: true, window: '1d' });
    const { ticker } = replica([s], [beat]);
    await ticker.runOnce();
    await downtime('pk', `date_trunc('minute', now()) - interval '5 minutes'`);
    const first = await ticker.runOnce();
    expect(first.fired.length).toBeGreaterThanOrEqual(5);
    const before = await jobsOf('pk');
    // An operator (or a bug) moves the schedule back over ticks that already ran.
    await downtime('pk', `last_tick_at - interval '5 minutes'`);
    const second = await ticker.runOnce();
    // Nothing that already ran fires again. (A minute that turned during the run may fire its own,
    // new tick: on a loaded machine a run can span a minute boundary.)
    const latest = Math.max(...first.fired.map((f) => f.at.getTime()));
    expect(second.fired.filter((f) => f.at.getTime() <= latest)).toEqual([]);
    expect(second.duplicates).toBeGreaterThanOrEqual(5);
    expect((await jobsOf('pk')).slice(0, before.length)).toEqual(before);
  });
});
