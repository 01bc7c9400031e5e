import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { defineConsumer } from '../../src/streams/define-consumer.js';
import { defineStream } from '../../src/streams/define-stream.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { fieldsOf, gatedHandler, useStreams } from './harness.js';

const payload = z.object({ n: z.number() });

/** Delivers one entry to a consumer that will never ack it (a process that died while handling it). */
async function deliverToGhost(raw: Redis, stream: string, n: number, ghost = 'ghost'): Promise<string> {
  await raw.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM').catch(() => undefined);
  const id = await raw.xadd(stream, '*', 'payload', JSON.stringify({ n }));
  await raw.xreadgroup('GROUP', 'g', ghost, 'COUNT', 1, 'STREAMS', stream, '>');
  return id!;
}

async function pendingCount(raw: Redis, stream: string): Promise<number> {
  return ((await raw.xpending(stream, 'g')) as [number])[0];
}

async function deadLetters(raw: Redis, stream: string): Promise<Record<string, string>[]> {
  return ((await raw.xrange(`${stream}:dead-letter`, '-', '+')) as [string, string[]][]).map(([, f]) => fieldsOf(f));
}

describeWithRedis('pending entries', () => {
  const redis = useRedisServer();
  const t = useStreams(redis.server);

  it('at-least-once: a live consumer takes over an entry pending longer than claimIdleMs (XAUTOCLAIM) and handles it', async () => {
    const stream = defineStream({ name: t.name('reclaim'), payload });
    const raw = t.redis();
    const id = await deliverToGhost(raw, stream.name, 7);
    const seen: { id: string; deliveries: number }[] = [];
    const { events, of } = t.recorder();
    const runner = t.runner({ events, consumers: [defineConsumer({ stream, group: 'g', claimIdleMs: 200, handler: (_p, ctx) => void seen.push({ id: ctx.id, deliveries: ctx.deliveries }) })] });
    await runner.start();
    await waitFor('the stale entry handled', () => seen.length === 1);
    expect(seen).toEqual([{ id, deliveries: 2 }]);
    expect(of('stream.reclaimed')).toEqual([expect.objectContaining({ count: 1, consumer: runner.consumer })]);
    await waitFor('acked', async () => (await pendingCount(raw, stream.name)) === 0);
  });

  it('at-least-once: an entry whose handler is still running is kept fresh, so another live consumer does not take it over', async () => {
    const stream = defineStream({ name: t.name('fresh'), payload });
    const raw = t.redis();
    const gated = gatedHandler();
    const slow = defineConsumer({ stream, group: 'g', claimIdleMs: 150, handler: gated.handler });
    const { events, of } = t.recorder();
    const a = t.runner({ consumers: [slow], events });
    await a.start();
    await t.client().publish(stream, { n: 1 });
    await gated.started;
    const b = t.runner({ consumers: [slow], events });
    await b.start();
    // Wait until B has scanned the pending list many times over, well past claimIdleMs.
    const claims = async () => Number(/cmdstat_xautoclaim:calls=(\d+)/.exec(await raw.info('commandstats'))?.[1] ?? 0);
    const before = await claims();
    await waitFor('many reclaim passes (or a takeover)', async () => gated.calls > 1 || (await claims()) - before >= 12);
    gated.release();
    await waitFor('acked', async () => (await pendingCount(raw, stream.name)) === 0);
    expect(gated.calls).toBe(1);
    expect(of('stream.reclaimed')).toEqual([]);
  });

  it('at-least-once: a poison message is dead-lettered with its error after maxDeliveries, and acked', async () => {
    const stream = defineStream({ name: t.name('poison'), payload });
    const deliveries: number[] = [];
    const { events, of } = t.recorder();
    const runner = t.runner({
      events,
      consumers: [
        defineConsumer({
          stream,
          group: 'g',
          claimIdleMs: 100,
          maxDeliveries: 3,
          handler: (_p, ctx) => {
            deliveries.push(ctx.deliveries);
            throw new Error(`cannot settle order (delivery ${ctx.deliveries})`);
          },
        }),
      ],
    });
    await runner.start();
    const { id } = await t.client().publish(stream, { n: 13 });
    await waitFor('dead-lettered', () => of('stream.dead-lettered').length === 1);
    expect(deliveries).toEqual([1, 2, 3]);
    expect(of('stream.failed').map((e) => e.willRetry)).toEqual([true, true, false]);
    const raw = t.redis();
    expect(await deadLetters(raw, stream.name)).toEqual([
      {
        payload: '{"n":13}',
        'source-stream': stream.name,
        'source-id': id,
        group: 'g',
        consumer: runner.consumer,
        deliveries: '3',
        reason: 'failed',
        error: 'cannot settle order (delivery 3)',
      },
    ]);
    expect(await pendingCount(raw, stream.name)).toBe(0);
    expect(JSON.stringify(of('stream.dead-lettered'))).not.toContain('"n":13');
  });

  it('at-least-once: a message whose consumers keep dying is dead-lettered as undeliverable, without running the handler again', async () => {
    const stream = defineStream({ name: t.name('crasher'), payload });
    const raw = t.redis();
    const id = await deliverToGhost(raw, stream.name, 1, 'ghost-1');
    await raw.xclaim(stream.name, 'g', 'ghost-2', 0, id);
    await raw.xclaim(stream.name, 'g', 'ghost-3', 0, id); // delivered three times, never acked
    let calls = 0;
    const { events, of } = t.recorder();
    const runner = t.runner({ events, consumers: [defineConsumer({ stream, group: 'g', claimIdleMs: 100, maxDeliveries: 3, handler: () => void calls++ })] });
    await runner.start();
    await waitFor('dead-lettered', () => of('stream.dead-lettered').length === 1);
    expect(calls).toBe(0);
    const [record] = await deadLetters(raw, stream.name);
    expect(record).toMatchObject({ reason: 'undeliverable', 'source-id': id, deliveries: '3' });
    expect(record!.error).toContain('without an ack');
    expect(await pendingCount(raw, stream.name)).toBe(0);
  });

  it('aborts a handler past timeoutMs: the delivery fails with NS_STREAM_HANDLER_TIMEOUT', async () => {
    const stream = defineStream({ name: t.name('slow'), payload });
    let signal: AbortSignal | undefined;
    const { events, of } = t.recorder();
    const runner = t.runner({
      events,
      consumers: [
        defineConsumer({
          stream,
          group: 'g',
          timeoutMs: 50,
          maxDeliveries: 1,
          handler: async (_p, ctx) => {
            signal = ctx.signal;
            await new Promise(() => {}); // ignores its signal: the runner does not wait for it
          },
        }),
      ],
    });
    await runner.start();
    await t.client().publish(stream, { n: 1 });
    await waitFor('dead-lettered', () => of('stream.dead-lettered').length === 1);
    expect(signal!.aborted).toBe(true);
    expect((signal!.reason as { code: string }).code).toBe('NS_STREAM_HANDLER_TIMEOUT');
    expect(of('stream.dead-lettered')[0]).toMatchObject({ reason: 'failed', error: expect.stringContaining('timeout of 50 ms') });
  });

  it('dead-letters an entry whose payload does not parse, at once and without calling the handler', async () => {
    const stream = defineStream({ name: t.name('garbage'), payload });
    const raw = t.redis();
    await raw.xadd(stream.name, '*', 'payload', '{not json');
    await raw.xadd(stream.name, '*', 'payload', JSON.stringify({ n: 'one' }));
    await raw.xadd(stream.name, '*', 'body', '{}');
    let calls = 0;
    const { events, of } = t.recorder();
    const runner = t.runner({ events, consumers: [defineConsumer({ stream, group: 'g', handler: () => void calls++ })] });
    await runner.start();
    await waitFor('three dead letters', () => of('stream.dead-lettered').length === 3);
    expect(calls).toBe(0);
    const records = await deadLetters(raw, stream.name);
    expect(records.map((r) => r.reason)).toEqual(['invalid-payload', 'invalid-payload', 'invalid-payload']);
    expect(records[0]!.error).toContain('is not JSON');
    expect(records[1]!.error).toContain('payload.n');
    expect(records[2]!.error).toContain('no "payload" field (it has: body)');
    expect(await pendingCount(raw, stream.name)).toBe(0);
  });

  it('at-most-once: a failed handler is dead-lettered once and never retried', async () => {
    const stream = defineStream({ name: t.name('amo-fail'), payload });
    let calls = 0;
    const { events, of } = t.recorder();
    const runner = t.runner({
      events,
      consumers: [
        defineConsumer({
          stream,
          group: 'g',
          delivery: 'at-most-once',
          claimIdleMs: 100,
          handler: () => {
            calls++;
            throw new Error('escrow reverted');
          },
        }),
      ],
    });
    await runner.start();
    const client = t.client();
    await client.publish(stream, { n: 1 });
    await waitFor('dead-lettered', () => of('stream.dead-lettered').length === 1);
    // A later entry handled proves the consumer moved on; the failed one was not retried meanwhile.
    await client.publish(stream, { n: 2 });
    await waitFor('second failure', () => calls === 2);
    const records = await deadLetters(t.redis(), stream.name);
    expect(records.map((r) => [r.payload, r.reason, r.error])).toEqual([
      ['{"n":1}', 'failed', 'escrow reverted'],
      ['{"n":2}', 'failed', 'escrow reverted'],
    ]);
    expect(of('stream.failed').every((e) => !e.willRetry)).toBe(true);
  });

  it('at-most-once: an entry read by a consumer that died before acking is dead-lettered as abandoned, never handled', async () => {
    const stream = defineStream({ name: t.name('abandoned'), payload });
    const raw = t.redis();
    const id = await deliverToGhost(raw, stream.name, 1);
    const seen: number[] = [];
    const { events, of } = t.recorder();
    const runner = t.runner({ events, consumers: [defineConsumer({ stream, group: 'g', delivery: 'at-most-once', claimIdleMs: 100, handler: ({ n }) => void seen.push(n) })] });
    await runner.start();
    await waitFor('recorded as abandoned', () => of('stream.dead-lettered').length === 1);
    await t.client().publish(stream, { n: 2 });
    await waitFor('a new entry handled', () => seen.length === 1);
    expect(seen).toEqual([2]);
    const [record] = await deadLetters(raw, stream.name);
    expect(record).toMatchObject({ reason: 'abandoned', 'source-id': id, payload: '{"n":1}' });
    expect(await pendingCount(raw, stream.name)).toBe(0);
  });
});

describeWithRedis('pending entries on a server without XAUTOCLAIM (Redis < 6.2)', () => {
  const redis = useRedisServer({ config: ['rename-command XAUTOCLAIM ""'] });
  const t = useStreams(redis.server);

  it('warns once and keeps consuming, without taking over stale entries', async () => {
    const a = defineStream({ name: t.name('old-a'), payload });
    const b = defineStream({ name: t.name('old-b'), payload });
    const raw = t.redis();
    await deliverToGhost(raw, a.name, 0);
    await deliverToGhost(raw, b.name, 0);
    const seen: string[] = [];
    const { events, of } = t.recorder();
    const runner = t.runner({
      events,
      consumers: [
        defineConsumer({ stream: a, group: 'g', claimIdleMs: 100, handler: (p, ctx) => void seen.push(`${ctx.stream}:${p.n}`) }),
        defineConsumer({ stream: b, group: 'g', name: 'b', claimIdleMs: 100, handler: (p, ctx) => void seen.push(`${ctx.stream}:${p.n}`) }),
      ],
    });
    await runner.start();
    await waitFor('the warning', () => of('stream.reclaim-unavailable').length > 0);
    const client = t.client();
    await client.publish(a, { n: 1 });
    await client.publish(b, { n: 1 });
    await waitFor('new entries handled', () => seen.length === 2);
    expect(seen.sort()).toEqual([`${a.name}:1`, `${b.name}:1`].sort());
    expect(of('stream.reclaim-unavailable')).toHaveLength(1);
    expect(of('stream.reclaim-unavailable')[0]!.error).toMatch(/unknown command/i);
    // The ghost's entries stay pending: nothing takes them over on this server.
    expect(await pendingCount(raw, a.name)).toBe(1);
    expect(await pendingCount(raw, b.name)).toBe(1);
  });
});
