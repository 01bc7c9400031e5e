import { beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { RedisUnavailableError } from '../../src/errors.js';
import type { LeaderLease, LeaderTerm } from '../../src/leadership/leader-lease.js';
import { defineConsumer } from '../../src/streams/define-consumer.js';
import { defineStream } from '../../src/streams/define-stream.js';
import { useTestDatabase } from '../support/db.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { deferred, useStreams } from './harness.js';
import { useConsumerProcesses, type ConsumerProcess } from './processes.js';

const payload = z.object({ n: z.number() });

/**
 * Singleton consumers (seed 004's operator, "strictly one instance") across real processes, each
 * electing through the runtime's LeaseElector (a PostgreSQL lease row with a fencing token).
 */
describeWithRedis('singleton consumer', () => {
  const db = useTestDatabase('singleton');
  const redis = useRedisServer();
  const t = useStreams(redis.server);
  const spawnConsumer = useConsumerProcesses(() => ({ REDIS_URL: redis.server().url, DATABASE_URL: db.url, SCHEMA: db.schema, LEASE_TTL_MS: '1000' }));
  db.migrateBeforeAll();

  beforeAll(async () => {
    await db.sql.query(
      `CREATE TABLE "${db.schema}".handled (stream text NOT NULL, n int NOT NULL, entry_id text NOT NULL, phase text NOT NULL, pid int NOT NULL, token text, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    );
  });

  async function done(stream: string): Promise<{ n: number; pid: number; token: string }[]> {
    const { rows } = await db.sql.query<{ n: number; pid: number; token: string }>(`SELECT n, pid, token FROM "${db.schema}".handled WHERE stream = $1 AND phase = 'done' ORDER BY n`, [stream]);
    return rows;
  }

  async function publish(stream: string, from: number, to: number): Promise<void> {
    const def = defineStream({ name: stream, payload });
    const client = t.client();
    for (let n = from; n < to; n++) {
      await waitFor(`publish ${n}`, () => client.publish(def, { n }).catch((e: unknown) => (e instanceof RedisUnavailableError ? undefined : Promise.reject(e))));
    }
  }

  const leading = (p: ConsumerProcess) => p.lines().filter((l) => l.type === 'stream.consumer-started').length;

  it('runs on exactly one process, and fails over to another when that process dies', async () => {
    const stream = t.name('polymarket:order');
    const env = { STREAM: stream, GROUP: 'polymarket-operator', DELIVERY: 'at-most-once', SINGLETON: '1', CLAIM_IDLE_MS: '500' };
    const a = spawnConsumer(env);
    const b = spawnConsumer(env);
    await Promise.all([a.ready, b.ready]);
    const leader = await waitFor('a leader', () => [a, b].find((p) => leading(p) > 0));
    const follower = leader === a ? b : a;

    await publish(stream, 0, 10);
    await waitFor('first ten handled', async () => (await done(stream)).length === 10);
    const before = await done(stream);
    expect(new Set(before.map((r) => r.pid))).toEqual(new Set([leader.pid]));
    expect(leading(follower)).toBe(0);

    await leader.kill('SIGKILL');
    await waitFor('the follower elected', () => leading(follower) > 0);
    await publish(stream, 10, 20);
    await waitFor('all twenty handled', async () => (await done(stream)).length === 20);
    const after = (await done(stream)).filter((r) => r.n >= 10);
    expect(new Set(after.map((r) => r.pid))).toEqual(new Set([follower.pid]));
    // Each term's fencing token is greater than every earlier one, so a deposed leader's writes can be refused.
    expect(BigInt(after[0]!.token)).toBeGreaterThan(BigInt(before[0]!.token));
    expect(follower.lines().find((l) => l.type === 'stream.consumer-started')).toMatchObject({ singleton: true, fencingToken: after[0]!.token });
  });

  it('hands over at once on a graceful stop: the leader releases its lease and the other process takes over', async () => {
    const stream = t.name('polymarket:order');
    const env = { STREAM: stream, GROUP: 'polymarket-operator', DELIVERY: 'at-most-once', SINGLETON: '1', CLAIM_IDLE_MS: '500' };
    const a = spawnConsumer(env);
    const b = spawnConsumer(env);
    await Promise.all([a.ready, b.ready]);
    const leader = await waitFor('a leader', () => [a, b].find((p) => leading(p) > 0));
    const follower = leader === a ? b : a;
    expect(await leader.kill('SIGTERM')).toBe(0);
    expect(leader.lines().find((l) => l.type === 'stream.consumer-stopped')).toMatchObject({ reason: 'shutdown' });
    await waitFor('the follower elected', () => leading(follower) > 0);
    await publish(stream, 0, 3);
    await waitFor('handled by the new leader', async () => (await done(stream)).filter((r) => r.pid === follower.pid).length === 3);
  });
});

/** A lease the test elects and deposes by hand. */
class ManualLease implements LeaderLease {
  term: LeaderTerm | undefined;
  private controller: AbortController | undefined;
  private listeners: ((t: LeaderTerm | undefined) => void)[] = [];
  constructor(readonly name: string) {}
  onChange(l: (t: LeaderTerm | undefined) => void) {
    this.listeners.push(l);
    return () => void (this.listeners = this.listeners.filter((x) => x !== l));
  }
  async start() {}
  async stop() {
    this.depose();
  }
  elect(token: string) {
    this.controller = new AbortController();
    const signal = this.controller.signal;
    this.term = { token, signal, held: () => !signal.aborted };
    for (const l of this.listeners) l(this.term);
  }
  depose() {
    if (!this.term) return;
    this.term = undefined;
    this.controller!.abort(new Error('lease lost'));
    for (const l of this.listeners) l(undefined);
  }
}

describeWithRedis('singleton consumer and its term', () => {
  const redis = useRedisServer();
  const t = useStreams(redis.server);

  it('consumes only while it holds a term: stops reading when deposed, hands back in-flight entries, resumes when elected again', async () => {
    const stream = defineStream({ name: t.name('operator'), payload });
    const leases: ManualLease[] = [];
    const seen: { n: number; token: string | undefined; lease: string | undefined; aborted: () => boolean }[] = [];
    const gate = deferred();
    const { events, of } = t.recorder();
    const runner = t.runner({
      events,
      leaderLease: (name) => {
        const l = new ManualLease(name);
        leases.push(l);
        return l;
      },
      consumers: [
        defineConsumer({
          stream,
          group: 'polymarket-operator',
          singleton: true,
          handler: async ({ n }, ctx) => {
            seen.push({ n, token: ctx.fencingToken, lease: ctx.leaseName, aborted: () => ctx.signal.aborted });
            if (n === 2 && ctx.fencingToken === '1') await gate.promise;
          },
        }),
      ],
    });
    await runner.start();
    expect(leases.map((l) => l.name)).toEqual([`stream:${stream.name}:polymarket-operator`]);
    const client = t.client();
    await client.publish(stream, { n: 1 });
    expect(runner.active).toEqual([]);
    expect((await t.redis().xinfo('CONSUMERS', stream.name, 'polymarket-operator')) as unknown[]).toEqual([]);

    leases[0]!.elect('1');
    await client.publish(stream, { n: 2 });
    await waitFor('entry 2 in its handler', () => seen.some((s) => s.n === 2));
    expect(runner.active).toEqual(['polymarket-operator']);

    leases[0]!.depose();
    await waitFor('stopped on loss of leadership', () => of('stream.consumer-stopped').length === 1);
    expect(of('stream.consumer-stopped')[0]!.reason).toBe('leadership lost');
    expect(seen.find((s) => s.n === 2)!.aborted()).toBe(true);
    expect(of('stream.handed-back')).toEqual([expect.objectContaining({ count: 1 })]);
    expect(runner.active).toEqual([]);

    await client.publish(stream, { n: 3 });
    leases[0]!.elect('2');
    await waitFor('entries 2 (again) and 3 handled in the new term', () => seen.filter((s) => s.token === '2').length === 2);
    expect(seen.map((s) => [s.n, s.token])).toEqual([
      [1, '1'],
      [2, '1'],
      [2, '2'],
      [3, '2'],
    ]);
    expect(new Set(seen.map((s) => s.lease))).toEqual(new Set([`stream:${stream.name}:polymarket-operator`]));
    gate.resolve();
  });
});
