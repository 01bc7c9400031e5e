import { describe, expect, it } from 'vitest';
import { defineSchedule } from '../../src/schedules/define-schedule.js';
import { nextTick, prevTick, ticksBetween, type TickTiming } from '../../src/schedules/ticks.js';

const DAY = 86_400_000;

function timing(cron: string, tz = 'UTC'): TickTiming {
  return defineSchedule({ name: 't', cron, tz, job: 'noop' }).timing;
}

/** The next `n` ticks after `from`, as ISO strings. */
function next(t: TickTiming, from: string, n: number): string[] {
  return ticksBetween(t, Date.parse(from), Date.parse(from) + 3_700 * DAY, n).map((x) => new Date(x).toISOString());
}

describe('cron ticks: the seed crontab (CRON_TZ=UTC)', () => {
  // seed 000 / 001: every row of the worker table and the crontab.
  const rows: [worker: string, cron: string, from: string, expected: string[]][] = [
    ['recoverBuyIntents (*/2)', '*/2 * * * *', '2026-02-28T23:57:30Z', ['2026-02-28T23:58:00.000Z', '2026-03-01T00:00:00.000Z', '2026-03-01T00:02:00.000Z']],
    ['resolvePendingClaims (*/2)', '*/2 * * * *', '2026-03-01T00:00:00Z', ['2026-03-01T00:02:00.000Z', '2026-03-01T00:04:00.000Z', '2026-03-01T00:06:00.000Z']],
    ['updatePotSizes (*/15)', '*/15 * * * *', '2026-03-01T10:14:59.999Z', ['2026-03-01T10:15:00.000Z', '2026-03-01T10:30:00.000Z', '2026-03-01T10:45:00.000Z']],
    ['watchdog (*/5)', '*/5 * * * *', '2026-03-01T10:59:00Z', ['2026-03-01T11:00:00.000Z', '2026-03-01T11:05:00.000Z', '2026-03-01T11:10:00.000Z']],
    ['settle (00:00)', '0 0 * * *', '2026-02-27T12:00:00Z', ['2026-02-28T00:00:00.000Z', '2026-03-01T00:00:00.000Z', '2026-03-02T00:00:00.000Z']],
    ['awardAffiliateBonus (00:30)', '30 0 * * *', '2026-03-01T00:30:00Z', ['2026-03-02T00:30:00.000Z', '2026-03-03T00:30:00.000Z']],
    ['awardAffiliateBonus (12:00)', '0 12 * * *', '2026-03-01T11:00:00Z', ['2026-03-01T12:00:00.000Z', '2026-03-02T12:00:00.000Z']],
    ['reEngagementEmail (10:00)', '0 10 * * *', '2026-03-01T10:00:00.001Z', ['2026-03-02T10:00:00.000Z', '2026-03-03T10:00:00.000Z']],
    ['awardLeaderboardBonus (1st, 01:00)', '0 1 1 * *', '2026-01-15T00:00:00Z', ['2026-02-01T01:00:00.000Z', '2026-03-01T01:00:00.000Z', '2026-04-01T01:00:00.000Z']],
    ['seed refresh PID check (every minute)', '* * * * *', '2026-03-01T10:00:30Z', ['2026-03-01T10:01:00.000Z', '2026-03-01T10:02:00.000Z']],
  ];
  it.each(rows)('%s: %s', (_worker, cron, from, expected) => {
    expect(next(timing(cron), from, expected.length)).toEqual(expected);
  });
});

describe('cron ticks: syntax', () => {
  const rows: [cron: string, from: string, expected: string[]][] = [
    // a sixth field in front is seconds
    ['*/20 * * * * *', '2026-01-01T00:00:00Z', ['2026-01-01T00:00:20.000Z', '2026-01-01T00:00:40.000Z', '2026-01-01T00:01:00.000Z']],
    ['30 0 0 * * *', '2026-01-01T00:00:00Z', ['2026-01-01T00:00:30.000Z', '2026-01-02T00:00:30.000Z']],
    ['0 0 29 2 *', '2026-01-01T00:00:00Z', ['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z']],
    // day of month and day of week both restricted: either matches (Vixie cron)
    ['0 9 13 * 5', '2026-02-01T00:00:00Z', ['2026-02-06T09:00:00.000Z', '2026-02-13T09:00:00.000Z', '2026-02-20T09:00:00.000Z']],
    ['0 8 * * MON-FRI', '2026-03-06T09:00:00Z', ['2026-03-09T08:00:00.000Z', '2026-03-10T08:00:00.000Z']],
    ['0 0 1 JAN,JUL *', '2026-03-01T00:00:00Z', ['2026-07-01T00:00:00.000Z', '2027-01-01T00:00:00.000Z']],
    ['@daily', '2026-03-01T10:00:00Z', ['2026-03-02T00:00:00.000Z']],
    ['0 0 L * *', '2026-02-01T00:00:00Z', ['2026-02-28T00:00:00.000Z', '2026-03-31T00:00:00.000Z']],
    ['0 12 * * *', '2026-01-01T00:00:00Z', ['2026-01-01T12:00:00.000Z']],
  ];
  it.each(rows)('%s after %s', (cron, from, expected) => {
    expect(next(timing(cron), from, expected.length)).toEqual(expected);
  });

  it('a zone moves the wall clock: 10:00 in Berlin is 09:00 UTC in winter and 08:00 UTC in summer', () => {
    expect(next(timing('0 10 * * *', 'Europe/Berlin'), '2026-01-10T00:00:00Z', 1)).toEqual(['2026-01-10T09:00:00.000Z']);
    expect(next(timing('0 10 * * *', 'Europe/Berlin'), '2026-07-10T00:00:00Z', 1)).toEqual(['2026-07-10T08:00:00.000Z']);
  });

  it('prevTick is the last tick at or before an instant; nextTick the first strictly after', () => {
    const t = timing('*/15 * * * *');
    const at = Date.parse('2026-01-01T10:15:00Z');
    expect(prevTick(t, at)).toBe(at);
    expect(prevTick(t, at - 1)).toBe(Date.parse('2026-01-01T10:00:00Z'));
    expect(nextTick(t, at)).toBe(Date.parse('2026-01-01T10:30:00Z'));
    expect(nextTick(t, at - 1)).toBe(at);
  });
});

describe('interval ticks', () => {
  it('are aligned to the Unix epoch, so every replica computes the same slots', () => {
    const t = defineSchedule({ name: 'i', every: '2m', job: 'noop' }).timing;
    expect(next(t, '2026-01-01T00:01:59.999Z', 2)).toEqual(['2026-01-01T00:02:00.000Z', '2026-01-01T00:04:00.000Z']);
    expect(prevTick(t, Date.parse('2026-01-01T00:03:59Z'))).toBe(Date.parse('2026-01-01T00:02:00Z'));
    const odd = defineSchedule({ name: 'i', every: 7_000, job: 'noop' }).timing;
    for (const x of ticksBetween(odd, 1_000_000, 2_000_000, 100)) expect(x % 7_000).toBe(0);
  });

  it('ignore DST: an interval is elapsed time', () => {
    const t = defineSchedule({ name: 'i', every: '1h', tz: 'Europe/Berlin', job: 'noop' }).timing;
    expect(next(t, '2026-10-25T00:00:00Z', 3)).toEqual(['2026-10-25T01:00:00.000Z', '2026-10-25T02:00:00.000Z', '2026-10-25T03:00:00.000Z']);
  });
});
