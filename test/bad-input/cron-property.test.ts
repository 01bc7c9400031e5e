import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/index.js';
import { defineSchedule } from '../../src/schedules/define-schedule.js';

// Properties of cron and time-zone parsing at defineSchedule: any text either defines a schedule
// or fails with NS_CONFIG_INVALID naming the field — never another error, never a hang — and a
// field out of its range is always refused. (test/schedules/ticks-property.test.ts checks the
// ticks of valid expressions.)

function outcome(options: Record<string, unknown>): 'ok' | { paths: string[] } {
  try {
    defineSchedule({ name: 'p', job: 'noop', ...options } as never);
    return 'ok';
  } catch (err) {
    expect(err, `not a ConfigError: ${String(err)}`).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe('NS_CONFIG_INVALID');
    return { paths: (err as ConfigError).issues.map((i) => i.path) };
  }
}

const token = fc.oneof(
  fc.constantFrom('*', '?', 'L', 'W', '#', ',', '-', '/', '*/0', '*/-1', '1-', '-1', '5L', '15W', '2#3', 'MON', 'mon-fri', 'JAN', 'FOO', '@daily', '@yearly', '@every'),
  fc.integer({ min: -5, max: 120 }).map(String),
  fc.tuple(fc.integer({ min: 0, max: 70 }), fc.integer({ min: 0, max: 70 })).map(([a, b]) => `${a}-${b}`),
  fc.tuple(fc.integer({ min: 0, max: 70 }), fc.integer({ min: 0, max: 70 })).map(([a, b]) => `${a}/${b}`),
  fc.string({ maxLength: 4 }),
);
const cronLike = fc.array(token, { minLength: 0, maxLength: 8 }).map((t) => t.join(' '));

const fields = [
  { name: 'minute', valid: '0', bad: fc.oneof(fc.integer({ min: 60, max: 999 }), fc.integer({ min: -99, max: -1 })) },
  { name: 'hour', valid: '0', bad: fc.oneof(fc.integer({ min: 24, max: 999 }), fc.integer({ min: -99, max: -1 })) },
  { name: 'day of month', valid: '1', bad: fc.oneof(fc.integer({ min: 32, max: 999 }), fc.constant(0)) },
  { name: 'month', valid: '1', bad: fc.oneof(fc.integer({ min: 13, max: 999 }), fc.constant(0)) },
  { name: 'day of week', valid: '*', bad: fc.integer({ min: 8, max: 999 }) },
];

describe('cron and time-zone parsing (properties)', () => {
  it('any text as a cron expression defines a schedule or fails with NS_CONFIG_INVALID at cron', () => {
    fc.assert(
      fc.property(fc.oneof(cronLike, fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 20 })), (cron) => {
        const r = outcome({ cron });
        if (r !== 'ok') expect(r.paths).toContain('cron');
      }),
      { numRuns: 1_000 },
    );
  });

  it('a field out of its range is always refused, naming cron', () => {
    const outOfRange = fc.integer({ min: 0, max: fields.length - 1 }).chain((index) => fields[index]!.bad.map((bad) => ({ index, bad })));
    fc.assert(
      fc.property(outOfRange, fc.boolean(), ({ index, bad }, withSeconds) => {
        const parts = fields.map((f, i) => (i === index ? String(bad) : f.valid));
        const cron = (withSeconds ? ['0', ...parts] : parts).join(' ');
        const r = outcome({ cron });
        expect(r, `${cron} (${fields[index]!.name} ${bad}) was accepted`).not.toBe('ok');
        expect((r as { paths: string[] }).paths).toContain('cron');
      }),
      { numRuns: 500 },
    );
  });

  it('any text as a time zone is an IANA zone or fails with NS_CONFIG_INVALID at tz', () => {
    const zoneLike = fc.oneof(
      fc.string({ maxLength: 30 }),
      fc.tuple(fc.constantFrom('Europe', 'America', 'Asia', 'Etc', 'US', 'Mars'), fc.string({ maxLength: 12 })).map(([a, b]) => `${a}/${b}`),
      fc.constantFrom('UTC', 'utc', 'Etc/GMT-14', 'Etc/GMT+13', '+01:00', 'GMT+1', 'Z', '', ' UTC', 'Europe/Berlin\u0000'),
    );
    fc.assert(
      fc.property(zoneLike, (tz) => {
        const r = outcome({ cron: '0 0 * * *', tz });
        if (r !== 'ok') expect(r.paths).toContain('tz');
      }),
      { numRuns: 500 },
    );
  });
});
