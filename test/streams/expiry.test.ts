import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { defineConsumer, type ConsumerContext } from '../../src/streams/define-consumer.js';
import { defineStream } from '../../src/streams/define-stream.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { fieldsOf, useStreams } from './harness.js';

const intent = z.object({ orderId: z.string() });

/** Adds an entry whose id says it was written `ageMs` ago by Redis's clock (as after an operator outage). */
async function addAged(raw: Redis, stream: string, orderId: string, ageMs: number): Promise<string> {
  const [sec, usec] = (await raw.time()) as unknown as [string, string];
  const nowMs = Number(sec) * 1_000 + Math.floor(Number(usec) / 1_000);
  const id = `${nowMs - ageMs}-0`;
  await raw.xadd(stream, id, 'payload', JSON.stringify({ orderId }));
  return id;
}

describeWithRedis('message age limit (maxAgeMs)', () => {
  const redis = useRedisServer();
  const t = useStreams(redis.server);

  it('hands an entry older than maxAgeMs to onExpired instead of the handler, its age read from the id', async () => {
    const stream = defineStream({ name: t.name('intents'), payload: intent });
    const raw = t.redis();
    const oldId = await addAged(raw, stream.name, 'stale', 10 * 60_000);
    const handled: string[] = [];
    const expired: { orderId: string; ctx: ConsumerContext }[] = [];
    const { events, of } = t.recorder();
    const runner = t.runner({
      events,
      consumers: [
        defineConsumer({
          stream,
          group: 'operator',
          delivery: 'at-most-once',
          maxAgeMs: 300_000,
          handler: ({ orderId }) => void handled.push(orderId),
          onExpired: ({ orderId }, ctx) => void expired.push({ orderId, ctx }),
        }),
      ],
    });
    await runner.start();
    await t.client().publish(stream, { orderId: 'fresh' });
    await waitFor('both handled', () => handled.length + expired.length === 2);
    expect(handled).toEqual(['fresh']);
    expect(expired.map((e) => e.orderId)).toEqual(['stale']);
    const ctx = expired[0]!.ctx;
    expect(ctx.id).toBe(oldId);
    expect(ctx.publishedAtMs).toBe(Number(oldId.split('-')[0]));
    expect(ctx.ageMs).toBeGreaterThan(300_000);
    expect(of('stream.expired')).toEqual([expect.objectContaining({ id: oldId })]);
    expect(
      of('stream.handled')
        .map((e) => e.expired)
        .sort(),
    ).toEqual([false, true]);
  });

  it('dead-letters an expired entry as `expired` when the consumer has no onExpired (at-least-once: acked)', async () => {
    const stream = defineStream({ name: t.name('updates'), payload: intent });
    const raw = t.redis();
    const oldId = await addAged(raw, stream.name, 'stale', 60_000);
    const handled: string[] = [];
    const { events, of } = t.recorder();
    const runner = t.runner({ events, consumers: [defineConsumer({ stream, group: 'g', maxAgeMs: 1_000, handler: ({ orderId }) => void handled.push(orderId) })] });
    await runner.start();
    await waitFor('dead-lettered', () => of('stream.dead-lettered').length === 1);
    expect(handled).toEqual([]);
    const records = (await raw.xrange(`${stream.name}:dead-letter`, '-', '+')) as [string, string[]][];
    expect(fieldsOf(records[0]![1])).toMatchObject({ reason: 'expired', 'source-id': oldId });
    expect(((await raw.xpending(stream.name, 'g')) as [number])[0]).toBe(0);
  });

  it('an onExpired that fails is retried and dead-lettered like a handler', async () => {
    const stream = defineStream({ name: t.name('expiry-fails'), payload: intent });
    const raw = t.redis();
    await addAged(raw, stream.name, 'stale', 60_000);
    let calls = 0;
    const { events, of } = t.recorder();
    const runner = t.runner({
      events,
      consumers: [
        defineConsumer({
          stream,
          group: 'g',
          maxAgeMs: 1_000,
          maxDeliveries: 2,
          claimIdleMs: 100,
          handler: () => {},
          onExpired: () => {
            calls++;
            throw new Error('cannot mark the bet rejected');
          },
        }),
      ],
    });
    await runner.start();
    await waitFor('dead-lettered', () => of('stream.dead-lettered').length === 1);
    expect(calls).toBe(2);
    expect(of('stream.dead-lettered')[0]).toMatchObject({ reason: 'failed', error: 'cannot mark the bet rejected' });
  });
});
