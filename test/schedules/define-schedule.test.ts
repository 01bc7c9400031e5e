import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, defineJob } from '../../src/index.js';
import { defineSchedule, type ScheduleOptions } from '../../src/schedules/define-schedule.js';

const settle = defineJob({ kind: 'settle', payload: z.object({ dayId: z.number().int() }), run: () => undefined });

function problems(options: unknown): { path: string; message: string }[] {
  try {
    defineSchedule(options as ScheduleOptions);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe('NS_CONFIG_INVALID');
    return [...(err as ConfigError).issues];
  }
  throw new Error('expected defineSchedule to throw');
}

describe('defineSchedule', () => {
  it('resolves defaults: UTC, catch-up latest, overlap skip, default grace', () => {
    const s = defineSchedule({ name: 'settle', cron: '0 0 * * *', job: settle, payload: ({ at }) => ({ dayId: Math.floor(at.getTime() / 86_400_000) - 1 }) });
    expect(s.tz).toBe('UTC');
    expect(s.catchUp).toEqual({ policy: 'latest' });
    expect(s.overlap).toBe('skip');
    expect(s.graceMs).toBeUndefined();
    expect(s.kind).toBe('settle');
    expect(s.spec).toBe('cron 0 0 * * * UTC');
    expect(Object.isFrozen(s)).toBe(true);
  });

  it('accepts intervals as ms or duration strings, and canonicalises zones', () => {
    expect(defineSchedule({ name: 'a', every: '2m', job: 'x' }).everyMs).toBe(120_000);
    expect(defineSchedule({ name: 'a', every: '1h30m', job: 'x' }).spec).toBe('every 1h30m');
    expect(defineSchedule({ name: 'a', every: 15_000, job: 'x' }).everyMs).toBe(15_000);
    expect(defineSchedule({ name: 'a', cron: '0 9 * * *', tz: 'europe/berlin', job: 'x' }).tz).toBe('Europe/Berlin');
    const all = defineSchedule({ name: 'a', every: '1m', job: 'x', catchUp: { all: true, window: '6h' } });
    expect(all.catchUp).toEqual({ policy: 'all', windowMs: 21_600_000 });
  });

  const invalid: [what: string, options: Record<string, unknown>, path: string, message: RegExp][] = [
    ['a cron field out of range', { cron: '61 * * * *' }, 'cron', /not a valid cron expression: Invalid value for minute: 61/],
    ['too few cron fields', { cron: '* * * *' }, 'cron', /not a valid cron expression: it has 4 fields; write 5 .* or 6 \(second first\)/],
    ['a year field', { cron: '0 0 0 1 1 * 2030' }, 'cron', /it has 7 fields/],
    ['letters where numbers go', { cron: 'a b c d e' }, 'cron', /illegal characters/],
    ['a zero step', { cron: '*/0 * * * *' }, 'cron', /illegal stepping/],
    ['an expression that never fires (30 February)', { cron: '0 0 30 2 *' }, 'cron', /never fires/],
    ['an expression that never fires (31 April)', { cron: '0 0 31 4 *' }, 'cron', /never fires/],
    ['an unknown time zone', { cron: '0 0 * * *', tz: 'Europe/Berln' }, 'tz', /not a time zone.*did you mean "Europe\/Berlin"/],
    ['a fixed offset as zone', { cron: '0 0 * * *', tz: '+01:00' }, 'tz', /Etc\/GMT-1/],
    ['cron and every together', { cron: '* * * * *', every: '1m' }, 'every', /not both/],
    ['neither cron nor every', {}, 'cron', /give cron/],
    ['a sub-second interval', { every: 500 }, 'every', /at least 1 s/],
    ['a bad duration', { every: 'two minutes' }, 'every', /not a duration/],
    ['a bad catch-up', { every: '1m', catchUp: 'all' }, 'catchUp', /'none', 'latest' or \{ all: true/],
    ['a catch-up window missing', { every: '1m', catchUp: { all: true } }, 'catchUp.window', /required/],
    ['a bad overlap', { every: '1m', overlap: 'wait' }, 'overlap', /'skip', 'queue' or 'allow'/],
    ['a typo in an option', { every: '1m', catchup: 'none' }, 'catchup', /did you mean "catchUp"/],
    ['a bad enqueue option', { every: '1m', enqueue: { priority: 5000 } }, 'enqueue.priority', /-1000 to 1000/],
    ['an unknown enqueue option', { every: '1m', enqueue: { runAt: new Date() } }, 'enqueue.runAt', /unknown option/],
    ['a payload that is not a function', { every: '1m', payload: { dayId: 1 } }, 'payload', /must be a function/],
    ['a bad name', { name: 'has space', every: '1m' }, 'name', /not allowed/],
  ];
  it.each(invalid)('rejects %s, naming the field and the reason', (_what, options, path, message) => {
    const issues = problems({ name: 's', job: settle, ...options });
    const issue = issues.find((i) => i.path === path);
    expect(issue, JSON.stringify(issues)).toBeDefined();
    expect(issue!.message).toMatch(message);
  });

  it('reports every problem at once', () => {
    const issues = problems({ name: '', cron: '99 * * * *', tz: 'Nowhere/City', job: 42, overlap: 'x' });
    expect(issues.map((i) => i.path).sort()).toEqual(['cron', 'job', 'name', 'overlap', 'tz']);
  });
});
