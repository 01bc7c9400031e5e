import { describe, expect, it } from 'vitest';
import { nextState, type SubjectState } from '../../src/watchdog/alert-transitions.js';
import { normaliseOutcome } from '../../src/watchdog/check-results.js';

// The alert state machine and result normalisation, pure: every rule of docs/watchdog.md with fixed inputs.
const now = new Date('2026-03-01T12:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const policy = { failAfter: 1, renotifyMs: undefined };
const open = (level: 'warning' | 'critical', extra: Partial<NonNullable<SubjectState['alert']>> = {}): SubjectState => ({
  status: level,
  streak: 3,
  alert: { level, lastNotifiedAt: ago(60_000), acked: false, ...extra },
});

describe('nextState', () => {
  it.each([
    ['ok from nothing: nothing', undefined, 'ok', policy, { kind: 'none' }, 0, false],
    ['bad from nothing: opens at its level', undefined, 'critical', policy, { kind: 'open', level: 'critical' }, 1, true],
    ['bad, below failAfter: pending', undefined, 'warning', { failAfter: 2, renotifyMs: undefined }, { kind: 'none' }, 1, true],
    ['bad again, reaching failAfter: opens', { status: 'warning', streak: 1 }, 'critical', { failAfter: 2, renotifyMs: undefined }, { kind: 'open', level: 'critical' }, 2, true],
    ['ok after pending: back to nothing', { status: 'warning', streak: 1 }, 'ok', { failAfter: 2, renotifyMs: undefined }, { kind: 'none' }, 0, false],
    ['same level while open: update only', open('warning'), 'warning', policy, { kind: 'update' }, 4, true],
    ['other level while open: change', open('warning'), 'critical', policy, { kind: 'change', from: 'warning', to: 'critical' }, 4, true],
    ['de-escalation is a change too', open('critical'), 'warning', policy, { kind: 'change', from: 'critical', to: 'warning' }, 4, true],
    ['ok while open: resolve', open('critical'), 'ok', policy, { kind: 'resolve' }, 0, false],
    ['renotify due: reminder', open('warning'), 'warning', { failAfter: 1, renotifyMs: 60_000 }, { kind: 'remind' }, 4, true],
    ['renotify not due yet: update', open('warning'), 'warning', { failAfter: 1, renotifyMs: 60_001 }, { kind: 'update' }, 4, true],
    ['acknowledged: no reminder', open('warning', { acked: true }), 'warning', { failAfter: 1, renotifyMs: 1_000 }, { kind: 'update' }, 4, true],
    ['acknowledged: a level change still notifies', open('warning', { acked: true }), 'critical', { failAfter: 1, renotifyMs: 1_000 }, { kind: 'change', from: 'warning', to: 'critical' }, 4, true],
  ] as const)('%s', (_what, prev, status, p, step, streak, keep) => {
    const t = nextState(prev as SubjectState | undefined, status, p, now);
    expect(t).toEqual({ status, streak, step, keep });
  });
});

describe('normaliseOutcome', () => {
  it('one result per subject, the worst when a subject is reported twice', () => {
    const r = normaliseOutcome([
      { subject: 'a', status: 'warning', message: 'w' },
      { subject: 'a', status: 'critical', message: 'c' },
      { subject: 'b', status: 'ok', message: 'fine' },
    ]);
    expect(r).toEqual({
      failed: false,
      status: 'critical',
      results: [
        { subject: 'a', status: 'critical', message: 'c', details: null },
        { subject: 'b', status: 'ok', message: 'fine', details: null },
      ],
    });
  });

  it('cleans text the database cannot hold and bounds details', () => {
    const r = normaliseOutcome({ status: 'warning', message: `nul\u0000 and lone \ud800`, details: { big: 'x'.repeat(10_000) } });
    expect(r.results[0]!.message).toBe('nul\uFFFD and lone \uFFFD');
    expect(r.results[0]!.details).toEqual({ note: expect.stringMatching(/^details left out: \d+ bytes of JSON, over 8192$/) });
  });

  it.each([
    ['undefined', undefined, 'expected { status, message }, got undefined'],
    ['a string', 'ok', 'expected { status, message }, got string'],
    ['an unknown status', { status: 'fine', message: '' }, 'status must be'],
    ['a message that is not text', { status: 'ok', message: 42 }, 'message must be a string'],
    ['details that are a list', { status: 'ok', message: '', details: [1] }, 'details must be an object'],
  ])('%s is a failed, critical run', (_what, outcome, says) => {
    const r = normaliseOutcome(outcome);
    expect(r).toMatchObject({ failed: true, status: 'critical', results: [{ subject: '', status: 'critical' }] });
    expect(r.results[0]!.message).toContain(says);
  });

  it('an empty list is ok: nothing is bad', () => {
    expect(normaliseOutcome([])).toEqual({ failed: false, status: 'ok', results: [] });
  });
});
