import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createNightshift, defineCheck, defineJob } from '../../src/index.js';
import { silentLogger } from '../../src/telemetry/logger.js';

// Roles host checks like everything else: a role's `checks` brings their schedules, their kinds,
// the delivery of notifications and the watchdog queue; nothing else does.
const run = () => ({ status: 'ok' as const, message: '' });
const mail = defineJob({ kind: 'mail', payload: z.object({}), run: async () => {} });
const mine = defineCheck({ name: 'mine', every: '1m', run });
const made: { stop(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(made.splice(0).map((c) => c.stop()));
});
const keep = <C extends { stop(): Promise<void> }>(c: C) => (made.push(c), c);
const client = (o: { activeRoles?: string[]; builtins?: false | Record<string, unknown> } = {}) =>
  keep(
    createNightshift({
      databaseUrl: 'postgres://plan-only/',
      logger: silentLogger(),
      jobs: [mail],
      checks: [mine],
      watchdog: { builtins: (o.builtins ?? {}) as never },
      roles: { workers: { jobs: ['mail'] }, watchdog: { checks: ['mine', 'nightshift.*'] }, builtins: { checks: ['nightshift.queue-lag', 'nightshift.expired-leases'] } },
      ...(o.activeRoles ? { activeRoles: o.activeRoles } : {}),
    }),
  );

describe('roles and checks', () => {
  it('a role hosting checks gets their schedules, kinds, the notification kind and the watchdog queue', async () => {
    const ns = client({ activeRoles: ['watchdog'] });
    const plan = ns.planRoles();
    expect(plan.checks).toEqual([
      'mine',
      'nightshift.queue-lag',
      'nightshift.unrunnable-kinds',
      'nightshift.expired-leases',
      'nightshift.discarded-jobs',
      'nightshift.waiting-for-operator',
      'nightshift.overdue-schedules',
      'nightshift.leaderless-daemons',
      'nightshift.connection-budget',
    ]);
    expect(plan.schedules).toContain('check:mine');
    expect(plan.schedules).toContain('check:nightshift.queue-lag');
    expect(plan.kinds).toEqual(expect.arrayContaining(['check:mine', 'nightshift.notify']));
    expect(plan.kinds).not.toContain('mail');
    expect([...plan.queues.keys()]).toEqual(['nightshift.watchdog']);
  });

  it('a role without checks hosts none, and no role hosts everything', async () => {
    const workers = client({ activeRoles: ['workers'] }).planRoles();
    expect(workers.checks).toEqual([]);
    expect(workers.kinds).toEqual(['mail']);
    expect(workers.schedules).toEqual([]);
    const all = client().planRoles();
    expect(all.checks).toContain('mine');
    expect(all.kinds).toEqual(expect.arrayContaining(['mail', 'check:mine', 'nightshift.notify']));
  });

  it('a built-in that is turned off is skipped where a role names it', () => {
    const plan = client({ activeRoles: ['builtins'], builtins: { expiredLeases: false } }).planRoles();
    expect(plan.checks).toEqual(['nightshift.queue-lag']);
  });

  it('without checks or watchdog there is no watchdog: no check jobs, schedules or queue', () => {
    const ns = keep(createNightshift({ databaseUrl: 'postgres://plan-only/', logger: silentLogger(), jobs: [mail] }));
    expect(ns.options.jobs.map((j) => j.kind)).toEqual(['mail']);
    expect(ns.options.schedules).toEqual([]);
    expect([...ns.planRoles().queues.keys()]).toEqual(['default']);
  });
});
