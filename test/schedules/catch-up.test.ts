import { describe, expect, it } from 'vitest';
import { planTicks } from '../../src/schedules/catch-up.js';
import { defineSchedule, type CatchUp } from '../../src/schedules/define-schedule.js';

const MIN = 60_000;
const T0 = Date.parse('2026-03-01T12:00:00Z');
const iso = (xs: number[]) => xs.map((x) => new Date(x).toISOString().slice(11, 19));

function every(catchUp?: CatchUp, graceMs?: number) {
  return defineSchedule({ name: 's', every: '1m', job: 'x', ...(catchUp ? { catchUp } : {}), ...(graceMs !== undefined ? { graceMs } : {}) });
}

describe('planTicks', () => {
  it('fires the one due tick when the ticker is on time', () => {
    const p = planTicks(every(), T0 - MIN, T0 + 150, 100);
    expect(iso(p.fire)).toEqual(['12:00:00']);
    expect(p.late).toBe(0);
    expect(p.skipped).toBeNull();
    expect(p.advanceTo).toBe(T0);
  });

  it('has nothing to do before the next tick', () => {
    expect(planTicks(every(), T0, T0 + 59_999, 100)).toMatchObject({ fire: [], advanceTo: null });
  });

  // Down from 11:00 (last decided tick) until 12:00:30. Missed: 11:01 … 11:59 (59 ticks); 12:00 is on time.
  const since = T0 - 60 * MIN;
  const now = T0 + 30_000;
  const rows: [policy: string, catchUp: CatchUp, fire: string[], skipped: { count: number; latest: string } | null][] = [
    ['none', 'none', ['12:00:00'], { count: 59, latest: '11:59:00' }],
    ['latest (default)', 'latest', ['11:59:00', '12:00:00'], { count: 58, latest: '11:58:00' }],
    ['all within 5m', { all: true, window: '5m' }, ['11:56:00', '11:57:00', '11:58:00', '11:59:00', '12:00:00'], { count: 55, latest: '11:55:00' }],
  ];
  it.each(rows)('after downtime, %s', (_name, catchUp, fire, skipped) => {
    const p = planTicks(every(catchUp), since, now, 100);
    expect(iso(p.fire)).toEqual(fire);
    expect(p.skipped && { count: p.skipped.count, latest: iso([p.skipped.latest])[0] }).toEqual(skipped);
    expect(p.advanceTo).toBe(T0);
    expect(p.late).toBe(fire.length - 1);
  });

  it('counts a tick as missed once its successor is due, or when it is over 60 s late', () => {
    const hourly = defineSchedule({ name: 's', every: '1h', job: 'x', catchUp: 'none' });
    expect(iso(planTicks(hourly, T0 - 60 * MIN, T0 + 59_000, 10).fire)).toEqual(['12:00:00']);
    const late = planTicks(hourly, T0 - 60 * MIN, T0 + 61_000, 10);
    expect(late.fire).toEqual([]);
    expect(late.skipped).toEqual({ count: 1, latest: T0 });
  });

  it('honours an explicit grace', () => {
    const p = planTicks(every('none', 3 * MIN), since, now, 100);
    expect(iso(p.fire)).toEqual(['11:58:00', '11:59:00', '12:00:00']);
    expect(p.skipped?.count).toBe(57);
  });

  it('batches: at most maxFire ticks, then more', () => {
    const p = planTicks(every({ all: true, window: '1h' }), since, now, 25);
    expect(p.fire).toHaveLength(25);
    expect(p.more).toBe(true);
    expect(p.advanceTo).toBe(p.fire.at(-1));
    const rest = planTicks(every({ all: true, window: '1h' }), p.advanceTo!, now, 100);
    expect(rest.fire).toHaveLength(35);
    expect(rest.more).toBe(false);
    expect(rest.skipped).toBeNull();
  });

  it('a schedule first seen has nothing due from before it existed', () => {
    // last_tick_at starts at the moment of registration, so nothing before it is due.
    expect(planTicks(every(), now, now + 10, 100).fire).toEqual([]);
  });
});
