import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConsumer, defineDaemon, defineJob, defineSchedule, defineStream, type CheckRunReport } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { startScript } from '../support/processes.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

// Each built-in check about the fleet fires on a real condition made here — a schedule nobody
// ticks, a killed daemon holder, a stream group with no consumer, a fleet over the server's
// connections — and resolves when it is mended.
const t = useTestDatabase('wdfleetb');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const subject = (r: CheckRunReport, s: string) => r.results.find((x) => x.subject === s);

describe('built-in checks about the fleet', () => {
  it('nightshift.overdue-schedules: a schedule whose ticker stopped; resolves when a process ticks it again', async () => {
    const beat = defineJob({ kind: 'beat', payload: z.object({}), run: async () => {} });
    const everySecond = defineSchedule({ name: 'every-second', every: '1s', job: beat });
    const wd = t.client({ jobs: [beat], schedules: [everySecond], watchdog: { builtins: { overdueSchedules: { graceMs: 1_000 } } } });
    const host = () => t.client({ jobs: [beat], schedules: [everySecond], registerProcess: false });
    const first = host();
    await first.start();
    await waitFor('a tick', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.schedule_ticks WHERE schedule = 'every-second'`)).rows[0].n > 0);
    await first.stop();
    // Overdue: the tick after the last decided one is more than the grace (1 s) behind the database clock.
    await waitFor('the schedule to fall behind', async () => (await t.sql.query(`SELECT now() - last_tick_at > interval '2.5 seconds' AS late FROM ${q()}.schedules WHERE name = 'every-second'`)).rows[0].late);
    const bad = await wd.runCheck('nightshift.overdue-schedules');
    expect(subject(bad, 'every-second')).toMatchObject({ status: 'critical', message: expect.stringContaining('schedule "every-second" is overdue') });
    // The watchdog's own checks' schedules were never registered by a ticker here: said so, as a warning.
    expect(subject(bad, 'check:nightshift.queue-lag')).toMatchObject({ status: 'warning', message: expect.stringContaining('was never registered') });
    const second = host();
    await second.start();
    await waitFor('the schedule to catch up', async () => (await t.sql.query(`SELECT now() - last_tick_at < interval '1 second' AS ok FROM ${q()}.schedules WHERE name = 'every-second'`)).rows[0].ok);
    const good = await wd.runCheck('nightshift.overdue-schedules');
    expect(subject(good, 'every-second')).toBeUndefined();
    expect(good.alerts).toContainEqual(expect.objectContaining({ subject: 'every-second', event: 'resolved' }));
  });

  it('nightshift.leaderless-daemons: a killed holder and nobody to take over; resolves when a process hosting it is elected', async () => {
    const beacon = defineDaemon({ name: 'beacon', everyMs: 100, ttlMs: 1_000, run: async () => {} });
    const wd = t.client({ daemons: [beacon], watchdog: { builtins: { leaderlessDaemons: { graceMs: 500 } } } });
    const holder = startScript('test/watchdog/fixtures/fleet-member.ts', { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_DAEMON: '1' });
    await holder.waitForLine('started');
    await waitFor('the holder to lead', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.leases WHERE name = 'daemon:beacon' AND expires_at > now()`)).rows[0].n === 1);
    expect(subject(await wd.runCheck('nightshift.leaderless-daemons'), 'beacon')).toBeUndefined();
    holder.kill('SIGKILL');
    await holder.exited;
    await waitFor(
      'the lease to have expired over half a second ago',
      async () => (await t.sql.query(`SELECT expires_at < now() - interval '500 milliseconds' AS gone FROM ${q()}.leases WHERE name = 'daemon:beacon'`)).rows[0].gone,
    );
    const bad = await wd.runCheck('nightshift.leaderless-daemons');
    expect(subject(bad, 'beacon')).toMatchObject({ status: 'critical', message: expect.stringMatching(/^daemon "beacon" has had no leader for .* \(the last was .*:\d+\)/) });
    // Mended: another process hosting the daemon takes the lease.
    const heir = t.client({ daemons: [beacon] });
    await heir.start();
    await waitFor('a new leader', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.leases WHERE name = 'daemon:beacon' AND expires_at > now()`)).rows[0].n === 1);
    expect((await wd.runCheck('nightshift.leaderless-daemons')).alerts).toMatchObject([{ subject: 'beacon', event: 'resolved' }]);
  });

  it('nightshift.connection-budget: live processes × what one needs over the server’s connections; resolves when the fleet shrinks', async () => {
    // Each process of this shape needs 1,000 pooled connections + the listener: one live process is over any small server.
    const wd = t.client({ maxConnections: 1_000, watchdog: { builtins: { connectionBudget: { liveWithinMs: 2_000 } } } });
    const member = t.client({ heartbeatMs: 300 });
    await member.start();
    const bad = await wd.runCheck('nightshift.connection-budget');
    expect(subject(bad, 'fleet')).toMatchObject({ status: 'critical', details: { perProcess: 1_001 } });
    expect(subject(bad, 'fleet')!.message).toContain('run fewer replicas or smaller pools');
    await member.stop();
    const good = await wd.runCheck('nightshift.connection-budget');
    expect(subject(good, 'fleet')).toMatchObject({ status: 'ok', details: { processes: 0 } });
    expect(good.alerts).toContainEqual(expect.objectContaining({ subject: 'fleet', event: 'resolved' }));
  });
});

describeWithRedis('nightshift.streams', () => {
  const redis = useRedisServer();

  it('a stream group with no consumer is critical (seed 004: the group is missing from XINFO GROUPS); resolves when the consumer runs', async () => {
    const orders = defineStream({ name: `wd-orders-${t.schema}`, payload: z.object({ n: z.number() }) });
    const operator = defineConsumer({ stream: orders, group: 'operator', handler: () => {} });
    const wd = t.client({ redisUrl: redis.server().url, streams: [orders], consumers: [operator], roles: { api: {} }, watchdog: { builtins: { streams: { stalledAfterMs: 1_000 } } } });
    for (let n = 0; n < 3; n++) await wd.publish(orders, { n });
    const bad = await wd.runCheck('nightshift.streams');
    expect(subject(bad, `${orders.name}/operator`)).toMatchObject({
      status: 'critical',
      message: expect.stringContaining(`consumer never started: group "operator" does not exist on "${orders.name}" — 3 entries wait and nothing reads them`),
      details: { status: 'never-started', length: 3 },
    });
    expect(subject(bad, `${orders.name}/operator`)!.message).toContain('roles.<role>.consumers');
    const consumer = t.client({ redisUrl: redis.server().url, streams: [orders], consumers: [operator] });
    await consumer.start();
    await waitFor('the group to read every entry', async () => {
      const d = await wd.diagnoseStreams();
      const g = d.streams[0]?.groups.find((x) => x.group === 'operator');
      return g?.exists && g.lag === 0 && g.pending === 0;
    });
    const good = await wd.runCheck('nightshift.streams');
    expect(subject(good, `${orders.name}/operator`)).toBeUndefined();
    expect(good.alerts).toMatchObject([{ subject: `${orders.name}/operator`, event: 'resolved' }]);
  });

  it('is not there without Redis', async () => {
    const orders = defineStream({ name: 'wd-no-redis', payload: z.object({ n: z.number() }) });
    const saved = process.env.REDIS_URL;
    delete process.env.REDIS_URL;
    try {
      const wd = t.client({ streams: [orders], consumers: [defineConsumer({ stream: orders, group: 'g', handler: () => {} })], roles: { api: {} }, watchdog: {} });
      expect(wd.options.redisUrl).toBeUndefined();
      const names = (await wd.listChecks()).map((c) => c.name);
      expect(names).toContain('nightshift.queue-lag');
      expect(names).not.toContain('nightshift.streams');
    } finally {
      if (saved !== undefined) process.env.REDIS_URL = saved;
    }
  });
});
