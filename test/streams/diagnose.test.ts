import { expect, it } from 'vitest';
import { z } from 'zod';
import { defineConsumer } from '../../src/streams/define-consumer.js';
import { defineStream } from '../../src/streams/define-stream.js';
import { diagnoseStreams } from '../../src/streams/stream-client.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { useStreams } from './harness.js';

const payload = z.object({ n: z.number() });

describeWithRedis('diagnoseStreams', () => {
  const redis = useRedisServer();
  const t = useStreams(redis.server);

  it('reads a defined group that does not exist as "consumer never started" (seed 004: XINFO GROUPS without the group)', async () => {
    const updates = defineStream({ name: t.name('order-update'), payload });
    const backend = defineConsumer({ stream: updates, group: 'bets-backend', handler: () => {} });
    const client = t.client();
    for (let n = 0; n < 3; n++) await client.publish(updates, { n });
    const d = await diagnoseStreams(client, { consumers: [backend] });
    expect(d.redisVersion).toMatch(/^\d+\.\d+/);
    expect(d.streams).toHaveLength(1);
    const s = d.streams[0]!;
    expect(s).toMatchObject({ stream: updates.name, exists: true, length: 3, deadLetterCount: 0 });
    expect(s.groups).toEqual([expect.objectContaining({ group: 'bets-backend', defined: true, exists: false, status: 'never-started', pending: 0, consumers: [] })]);
    expect(s.groups[0]!.statusText).toBe(`consumer never started: group "bets-backend" does not exist on "${updates.name}" — 3 entries wait and nothing reads them`);
  });

  it('a stream nothing was published to yet still reports its defined groups', async () => {
    const intents = defineStream({ name: t.name('order'), payload });
    const operator = defineConsumer({ stream: intents, group: 'polymarket-operator', handler: () => {} });
    const d = await t.client().diagnose({ consumers: [operator] });
    expect(d.streams[0]).toMatchObject({ exists: false, length: 0, lastEntryId: null, groups: [expect.objectContaining({ status: 'never-started' })] });
  });

  it('reports a healthy group: live consumers, nothing pending, lag 0', async () => {
    const stream = defineStream({ name: t.name('ok'), payload });
    const seen: number[] = [];
    const consumer = defineConsumer({ stream, group: 'g', handler: ({ n }) => void seen.push(n) });
    const runner = t.runner({ consumers: [consumer] });
    await runner.start();
    const client = t.client();
    await client.publish(stream, { n: 1 });
    await waitFor('handled', () => seen.length === 1);
    const d = await client.diagnose({ consumers: [consumer] });
    const g = d.streams[0]!.groups[0]!;
    expect(g).toMatchObject({ group: 'g', exists: true, status: 'ok', pending: 0, lag: 0, oldestUnreadAgeMs: null, delivery: 'at-least-once', singleton: false });
    expect(g.consumers).toEqual([expect.objectContaining({ name: runner.consumer, pending: 0 })]);
    expect(g.statusText).toBe('ok: 0 pending, lag 0, 1 consumer known');
    expect(d.streams[0]!.lastEntryAgeMs).toBeGreaterThanOrEqual(0);
  });

  it('shows a consumer that joined but has read nothing yet, and a quiet group as ok', async () => {
    const stream = defineStream({ name: t.name('quiet'), payload });
    const consumer = defineConsumer({ stream, group: 'g', handler: () => {} });
    const runner = t.runner({ consumers: [consumer] });
    await runner.start();
    const client = t.client();
    const d = await waitFor('the consumer joined', async () => {
      const r = await client.diagnose({ consumers: [consumer] });
      return r.streams[0]!.groups[0]!.consumers.length === 1 ? r : undefined;
    });
    expect(d.streams[0]!.groups[0]).toMatchObject({ status: 'ok', lag: 0, consumers: [expect.objectContaining({ name: runner.consumer })] });
  });

  it('reports lag and "no consumer is reading" when entries wait unread past stalledAfterMs, and counts dead letters', async () => {
    const stream = defineStream({ name: t.name('lag'), payload });
    const raw = t.redis();
    await raw.xgroup('CREATE', stream.name, 'g', '0', 'MKSTREAM');
    // Entries written a minute ago (by Redis's clock) that no consumer has read since.
    const [sec] = (await raw.time()) as unknown as [string];
    const minuteAgo = Number(sec) * 1_000 - 60_000;
    for (let n = 0; n < 4; n++) await raw.xadd(stream.name, `${minuteAgo}-${n}`, 'payload', JSON.stringify({ n }));
    await raw.xadd(`${stream.name}:dead-letter`, '*', 'payload', '{}', 'reason', 'failed');
    const consumer = defineConsumer({ stream, group: 'g', handler: () => {} });
    const d = await t.client().diagnose({ consumers: [consumer] });
    const s = d.streams[0]!;
    expect(s.deadLetterCount).toBe(1);
    expect(s.deadLetterStreams).toEqual([{ stream: `${stream.name}:dead-letter`, length: 1 }]);
    expect(s.groups[0]).toMatchObject({ status: 'not-reading', lag: 4, pending: 0 });
    expect(s.groups[0]!.oldestUnreadAgeMs).toBeGreaterThan(30_000);
    expect(s.groups[0]!.statusText).toMatch(/^no consumer is reading: 4 entries wait, the oldest for \d+ s; no consumer ever joined the group$/);
  });

  it("reports entries stuck in pending, with the oldest one's age and idle time", async () => {
    const stream = defineStream({ name: t.name('stuck'), payload });
    const raw = t.redis();
    await raw.xgroup('CREATE', stream.name, 'g', '0', 'MKSTREAM');
    const id = await raw.xadd(stream.name, '*', 'payload', '{"n":1}');
    await raw.xreadgroup('GROUP', 'g', 'dead-replica', 'COUNT', 1, 'STREAMS', stream.name, '>');
    const consumer = defineConsumer({ stream, group: 'g', claimIdleMs: 100, handler: () => {} });
    const client = t.client();
    // The dead replica's entry has been pending past claimIdleMs, and nothing took it over.
    const d = await waitFor('stuck', async () => {
      const r = await client.diagnose({ consumers: [consumer] });
      return r.streams[0]!.groups[0]!.status === 'stuck-pending' ? r : undefined;
    });
    const g = d.streams[0]!.groups[0]!;
    expect(g).toMatchObject({ pending: 1, oldestPendingId: id, lag: 0 });
    expect(g.oldestPendingIdleMs).toBeGreaterThan(100);
    expect(g.oldestPendingAgeMs).toBeGreaterThan(0);
    expect(g.consumers).toEqual([expect.objectContaining({ name: 'dead-replica', pending: 1 })]);
    expect(g.statusText).toMatch(/^1 entries pending, the oldest idle for .* \(claimIdleMs 100 ms\): delivered and not acked/);
  });

  it('also lists groups that no definition names, and never uses KEYS or SCAN', async () => {
    const stream = defineStream({ name: t.name('foreign'), payload });
    const raw = t.redis();
    await raw.config('RESETSTAT');
    await raw.xgroup('CREATE', stream.name, 'analytics', '$', 'MKSTREAM');
    const runner = t.runner({ consumers: [defineConsumer({ stream, group: 'g', handler: () => {} })] });
    await runner.start();
    const d = await t.client().diagnose({ streams: [stream] });
    expect(d.streams[0]!.groups.map((g) => [g.group, g.defined]).sort()).toEqual([
      ['analytics', false],
      ['g', false],
    ]);
    const stats = await raw.info('commandstats');
    expect(stats).not.toMatch(/cmdstat_keys:|cmdstat_scan:/);
  });
});
