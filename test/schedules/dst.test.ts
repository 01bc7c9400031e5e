import { Cron } from 'croner';
import { describe, expect, it } from 'vitest';
import { defineSchedule } from '../../src/schedules/define-schedule.js';
import { prevTick, ticksBetween } from '../../src/schedules/ticks.js';
import { localToInstant, offsetAt } from '../../src/schedules/time-zone.js';

// The rules (PRODUCT.md): a tick whose local time the clock skips runs once, at the first instant
// after the jump; a local time the clock repeats fires once, on its first occurrence.
//
// 2026 transitions used below:
//   Europe/Berlin        spring 2026-03-29 01:00Z  02:00 CET  → 03:00 CEST (02:00–02:59 skipped)
//                        autumn 2026-10-25 01:00Z  03:00 CEST → 02:00 CET  (02:00–02:59 repeated)
//   America/New_York     spring 2026-03-08 07:00Z  02:00 EST  → 03:00 EDT
//                        autumn 2026-11-01 06:00Z  02:00 EDT  → 01:00 EST  (01:00–01:59 repeated)
//   Australia/Lord_Howe  spring 2026-10-03 15:30Z  02:00 +10:30 → 02:30 +11 (a 30-minute shift)
//                        autumn 2026-04-04 15:00Z  02:00 +11 → 01:30 +10:30 (01:30–01:59 repeated)

const rows: [zone: string, cron: string, from: string, expected: string[], why: string][] = [
  // Europe/Berlin, spring
  ['Europe/Berlin', '30 2 * * *', '2026-03-27T12:00:00Z', ['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z'], '02:30 does not exist on the 29th: runs at 03:00 CEST'],
  ['Europe/Berlin', '0 2 * * *', '2026-03-28T12:00:00Z', ['2026-03-29T01:00:00.000Z', '2026-03-30T00:00:00.000Z'], '02:00 is the jump itself: runs at 03:00 CEST'],
  ['Europe/Berlin', '15,45 2 * * *', '2026-03-28T12:00:00Z', ['2026-03-29T01:00:00.000Z', '2026-03-30T00:15:00.000Z'], 'two skipped times run once together at the jump'],
  ['Europe/Berlin', '*/30 * * * *', '2026-03-29T00:00:00Z', ['2026-03-29T00:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-29T01:30:00.000Z'], '02:00 and 02:30 merge into the 03:00 tick'],
  ['Europe/Berlin', '0 30 2 * * *', '2026-03-28T12:00:00Z', ['2026-03-29T01:00:00.000Z'], 'with a seconds field'],
  // Europe/Berlin, autumn
  ['Europe/Berlin', '30 2 * * *', '2026-10-23T12:00:00Z', ['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z'], '02:30 happens twice on the 25th: first occurrence (CEST) only'],
  ['Europe/Berlin', '*/30 * * * *', '2026-10-25T00:00:00Z', ['2026-10-25T00:30:00.000Z', '2026-10-25T02:00:00.000Z', '2026-10-25T02:30:00.000Z'], 'the repeated 02:00 and 02:30 (CET) do not fire again'],
  ['Europe/Berlin', '0 3 * * *', '2026-10-24T12:00:00Z', ['2026-10-25T02:00:00.000Z', '2026-10-26T02:00:00.000Z'], '03:00 exists once (CET)'],
  // America/New_York
  ['America/New_York', '30 2 * * *', '2026-03-07T00:00:00Z', ['2026-03-07T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-09T06:30:00.000Z'], '02:30 skipped: runs at 03:00 EDT'],
  ['America/New_York', '30 1 * * *', '2026-10-31T00:00:00Z', ['2026-10-31T05:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z'], '01:30 repeated: EDT occurrence only'],
  [
    'America/New_York',
    '0 * * * *',
    '2026-11-01T03:30:00Z',
    ['2026-11-01T04:00:00.000Z', '2026-11-01T05:00:00.000Z', '2026-11-01T07:00:00.000Z', '2026-11-01T08:00:00.000Z'],
    'hourly: 01:00 EST (06:00Z) does not fire again',
  ],
  ['America/New_York', '0 * * * *', '2026-03-08T05:30:00Z', ['2026-03-08T06:00:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-08T08:00:00.000Z'], 'hourly: 02:00 skipped merges into 03:00 EDT'],
  // Australia/Lord_Howe: half-hour shifts
  ['Australia/Lord_Howe', '15 2 * * *', '2026-10-02T00:00:00Z', ['2026-10-02T15:45:00.000Z', '2026-10-03T15:30:00.000Z', '2026-10-04T15:15:00.000Z'], '02:15 skipped: runs at 02:30 +11'],
  [
    'Australia/Lord_Howe',
    '*/15 * * * *',
    '2026-10-03T14:59:00Z',
    ['2026-10-03T15:00:00.000Z', '2026-10-03T15:15:00.000Z', '2026-10-03T15:30:00.000Z', '2026-10-03T15:45:00.000Z'],
    '02:00 and 02:15 merge into 02:30',
  ],
  ['Australia/Lord_Howe', '45 1 * * *', '2026-04-03T00:00:00Z', ['2026-04-03T14:45:00.000Z', '2026-04-04T14:45:00.000Z', '2026-04-05T15:15:00.000Z'], '01:45 repeated: +11 occurrence only'],
  [
    'Australia/Lord_Howe',
    '*/15 * * * *',
    '2026-04-04T13:59:00Z',
    ['2026-04-04T14:00:00.000Z', '2026-04-04T14:15:00.000Z', '2026-04-04T14:30:00.000Z', '2026-04-04T14:45:00.000Z', '2026-04-04T15:30:00.000Z'],
    'the repeated 01:30 and 01:45 do not fire again',
  ],
];

describe('DST', () => {
  it.each(rows)('%s %s from %s', (tz, cron, from, expected) => {
    const t = defineSchedule({ name: 'dst', cron, tz, job: 'noop' }).timing;
    const got = ticksBetween(t, Date.parse(from), Date.parse(from) + 10 * 86_400_000, expected.length).map((x) => new Date(x).toISOString());
    expect(got).toEqual(expected);
    // prevTick walks the same ticks backwards.
    for (let i = 1; i < got.length; i++) expect(new Date(prevTick(t, Date.parse(got[i]!) - 1)!).toISOString()).toBe(got[i - 1]);
  });

  it('maps local times: once, first occurrence, or the jump', () => {
    const local = (s: string) => Date.parse(`${s}Z`);
    expect(new Date(localToInstant('Europe/Berlin', local('2026-03-29T02:30:00'))).toISOString()).toBe('2026-03-29T01:00:00.000Z');
    expect(new Date(localToInstant('Europe/Berlin', local('2026-10-25T02:30:00'))).toISOString()).toBe('2026-10-25T00:30:00.000Z');
    expect(new Date(localToInstant('Australia/Lord_Howe', local('2026-10-04T02:10:00'))).toISOString()).toBe('2026-10-03T15:30:00.000Z');
    expect(offsetAt('Australia/Lord_Howe', Date.parse('2026-10-03T15:30:00Z'))).toBe(11 * 3_600_000);
    expect(offsetAt('Australia/Lord_Howe', Date.parse('2026-10-03T15:29:59Z'))).toBe(10.5 * 3_600_000);
  });

  it("needs the wrapper: croner's own zone mode fires a repeated half hour twice and skips the jump for */30", () => {
    // This is why ticks.ts uses croner only as a calendar. If croner changes, this test says so.
    const c = new Cron('*/30 * * * *', { timezone: 'Europe/Berlin' });
    const autumn = c.nextRuns(4, new Date('2026-10-25T00:00:00Z')).map((d) => d.toISOString());
    expect(autumn).toEqual(['2026-10-25T00:30:00.000Z', '2026-10-25T01:00:00.000Z', '2026-10-25T01:30:00.000Z', '2026-10-25T02:00:00.000Z']);
  });
});
