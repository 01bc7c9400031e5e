import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defineSchedule } from '../../src/schedules/define-schedule.js';
import { compileCron, nextTick, prevTick, ticksBetween } from '../../src/schedules/ticks.js';
import { localToInstant, offsetAt, toLocal } from '../../src/schedules/time-zone.js';

const HOUR = 3_600_000;

function field(min: number, max: number): fc.Arbitrary<string> {
  const v = fc.integer({ min, max });
  return fc.oneof(
    fc.constant('*'),
    fc.integer({ min: 2, max: Math.max(2, Math.floor((max - min) / 2)) }).map((k) => `*/${k}`),
    v.map(String),
    fc.tuple(v, v).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
    fc.tuple(v, v).map(([a, b]) => (a === b ? String(a) : `${a},${b}`)),
  );
}

const expression = fc
  .record({
    second: fc.option(fc.oneof(fc.constant('0'), fc.constant('*/20'), fc.integer({ min: 0, max: 59 }).map(String)), { nil: undefined }),
    minute: field(0, 59),
    hour: field(0, 23),
    dom: fc.oneof({ weight: 3, arbitrary: fc.constant('*') }, { weight: 1, arbitrary: field(1, 28) }),
    month: fc.oneof({ weight: 4, arbitrary: fc.constant('*') }, { weight: 1, arbitrary: field(1, 12) }),
    dow: fc.oneof({ weight: 3, arbitrary: fc.constant('*') }, { weight: 1, arbitrary: field(0, 6) }),
  })
  .map((f) => [f.second, f.minute, f.hour, f.dom, f.month, f.dow].filter((x) => x !== undefined).join(' '));

const zones = fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Australia/Lord_Howe', 'Asia/Kolkata', 'America/Santiago', 'Pacific/Chatham');

// Start near a 2026 transition of the zones above most of the time, anywhere in 2020–2030 otherwise.
const transitions = [
  '2026-03-29T01:00:00Z',
  '2026-10-25T01:00:00Z',
  '2026-03-08T07:00:00Z',
  '2026-11-01T06:00:00Z',
  '2026-10-03T15:30:00Z',
  '2026-04-04T15:00:00Z',
  '2026-04-05T03:00:00Z',
  '2026-09-06T04:00:00Z',
  '2026-04-04T14:00:00Z',
  '2026-09-26T14:00:00Z',
].map(Date.parse);
const start = fc.oneof(
  fc.tuple(fc.constantFrom(...transitions), fc.integer({ min: -30 * HOUR, max: 6 * HOUR })).map(([t, d]) => t + d),
  fc.integer({ min: Date.parse('2020-01-01T00:00:00Z'), max: Date.parse('2030-12-31T00:00:00Z') }),
);

describe('cron ticks (properties)', () => {
  it('are strictly increasing whole seconds, each the instant of a matching local time by the DST rules, none missing', () => {
    fc.assert(
      fc.property(expression, zones, start, (cron, tz, from) => {
        const t = defineSchedule({ name: 'p', cron, tz, job: 'noop' }).timing;
        const naive = (compileCron(cron) as { cron: import('croner').Cron }).cron;
        const to = from + 36 * HOUR;
        const ticks = ticksBetween(t, from, to, 2_000);
        for (let i = 0; i < ticks.length; i++) {
          const at = ticks[i]!;
          expect(at % 1000).toBe(0);
          if (i > 0) expect(at).toBeGreaterThan(ticks[i - 1]!);
          const local = toLocal(tz, at);
          if (naive.match(new Date(local))) {
            // A matching local time, fired at its first occurrence: no earlier instant within the
            // largest DST shift in use (2 h) shows the same wall-clock time.
            for (const back of [HOUR / 2, HOUR, 2 * HOUR]) expect(toLocal(tz, at - back)).not.toBe(local);
          } else {
            // Otherwise it must be a forward jump standing for a skipped local time that matches.
            const jump = offsetAt(tz, at) - offsetAt(tz, at - 1000);
            expect(jump).toBeGreaterThan(0);
            const skipped = naive.nextRun(new Date(local - jump - 1));
            expect(skipped && skipped.getTime() < local).toBe(true);
          }
        }
        // Differential check: every matching local time around the window, mapped by the rules,
        // gives exactly the ticks above (within the part of the window they cover).
        const covered = ticks.length === 2_000 ? ticks.at(-1)! : to;
        const expected = new Set<number>();
        for (let l = naive.nextRun(new Date(toLocal(tz, from) - 3 * HOUR)); l && l.getTime() < toLocal(tz, covered) + 3 * HOUR; l = naive.nextRun(l)) {
          const at = localToInstant(tz, l.getTime());
          if (at > from && at <= covered) expected.add(at);
        }
        expect(ticks.filter((x) => x <= covered)).toEqual([...expected].sort((a, b) => a - b));
      }),
      { numRuns: 120 },
    );
  });

  it('prevTick and nextTick agree: the tick before the next tick after x is at or before x', () => {
    fc.assert(
      fc.property(expression, zones, start, (cron, tz, x) => {
        const t = defineSchedule({ name: 'p', cron, tz, job: 'noop' }).timing;
        const n = nextTick(t, x);
        const p = prevTick(t, x);
        if (n !== null) {
          expect(n).toBeGreaterThan(x);
          expect(prevTick(t, n)).toBe(n);
          const before = prevTick(t, n - 1);
          if (before !== null) expect(before).toBeLessThanOrEqual(x);
        }
        if (p !== null) {
          expect(p).toBeLessThanOrEqual(x);
          expect(nextTick(t, p)).toBe(n);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('interval ticks are consecutive multiples of the interval', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 90_000 }), fc.integer({ min: 0, max: 4e12 }), (seconds, from) => {
        const t = defineSchedule({ name: 'p', every: seconds * 1000, job: 'noop' }).timing;
        const ticks = ticksBetween(t, from, from + 50 * seconds * 1000, 60);
        expect(ticks.length).toBe(50);
        ticks.forEach((x, i) => {
          expect(x % (seconds * 1000)).toBe(0);
          if (i > 0) expect(x - ticks[i - 1]!).toBe(seconds * 1000);
        });
        expect(ticks[0]! - from).toBeLessThanOrEqual(seconds * 1000);
        expect(ticks[0]!).toBeGreaterThan(from);
      }),
    );
  });
});
