import { expect, it } from 'vitest';
import { z } from 'zod';
import { defineConsumer, type ConsumerContext } from '../../src/streams/define-consumer.js';
import { defineStream } from '../../src/streams/define-stream.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { gatedHandler, useStreams } from './harness.js';

const payload = z.object({ n: z.number() });

describeWithRedis('consumer groups', () => {
  const redis = useRedisServer();
  const t = useStreams(redis.server);

  it('creates the group at id 0 with MKSTREAM: a backlog written before the consumer started is handled once, and not again after a restart', async () => {
    const stream = defineStream({ name: t.name('backlog'), payload });
    const client = t.client();
    for (let n = 0; n < 5; n++) await client.publish(stream, { n });
    const seen: number[] = [];
    const consumer = defineConsumer({ stream, group: 'g', handler: ({ n }) => void seen.push(n) });

    const first = t.runner({ consumers: [consumer] });
    await first.start();
    await waitFor('the backlog handled', () => seen.length === 5);
    await first.stop();

    // A new process of the same group resumes at the group's cursor: the history is not replayed.
    const { events, of } = t.recorder();
    const second = t.runner({ consumers: [consumer], events });
    await second.start();
    await client.publish(stream, { n: 5 });
    await waitFor('the new entry handled', () => seen.length === 6);
    expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
    expect(of('stream.group-created')).toEqual([]); // BUSYGROUP on the second start is not an error
    const raw = t.redis();
    const pending = (await raw.xpending(stream.name, 'g')) as [number, ...unknown[]];
    expect(pending[0]).toBe(0);
  });

  it('creates the stream when it does not exist yet (MKSTREAM) and tolerates a group created by someone else (BUSYGROUP)', async () => {
    const fresh = defineStream({ name: t.name('fresh'), payload });
    const taken = defineStream({ name: t.name('taken'), payload });
    const raw = t.redis();
    await raw.xgroup('CREATE', taken.name, 'g', '$', 'MKSTREAM');
    const { events, of } = t.recorder();
    const runner = t.runner({
      events,
      consumers: [defineConsumer({ stream: fresh, group: 'g', handler: () => {} }), defineConsumer({ stream: taken, group: 'g', name: 'taken', handler: () => {} })],
    });
    await runner.start();
    expect(await raw.exists(fresh.name)).toBe(1);
    expect(of('stream.group-created').map((e) => e.stream)).toEqual([fresh.name]);
    const groups = (await raw.xinfo('GROUPS', fresh.name)) as unknown[][];
    expect(groups).toHaveLength(1);
    expect(groups[0]![groups[0]!.indexOf('last-delivered-id') + 1]).toBe('0-0');
  });

  it('reads the payload field by name, whatever its position among the fields', async () => {
    const stream = defineStream({ name: t.name('fields'), payload: z.object({ orderId: z.string() }) });
    const raw = t.redis();
    await raw.xadd(stream.name, '*', 'source', 'p2', 'traceparent', 'x', 'payload', JSON.stringify({ orderId: 'a' }));
    await raw.xadd(stream.name, '*', 'payload', JSON.stringify({ orderId: 'b' }), 'source', 'p2');
    const seen: string[] = [];
    const runner = t.runner({ consumers: [defineConsumer({ stream, group: 'g', handler: ({ orderId }) => void seen.push(orderId) })] });
    await runner.start();
    await waitFor('both handled', () => seen.length === 2);
    expect(seen).toEqual(['a', 'b']);
  });

  it('gives the handler the entry id, its time and delivery count, and acks after success (at-least-once)', async () => {
    const stream = defineStream({ name: t.name('ctx'), payload });
    const contexts: ConsumerContext[] = [];
    const { events, of } = t.recorder();
    const runner = t.runner({ events, consumers: [defineConsumer({ stream, group: 'g', handler: (_p, ctx) => void contexts.push(ctx) })] });
    await runner.start();
    const { id } = await t.client().publish(stream, { n: 1 });
    await waitFor('handled event', () => of('stream.handled').length === 1);
    const ctx = contexts[0]!;
    expect(ctx.id).toBe(id);
    expect(ctx.publishedAtMs).toBe(Number(id.split('-')[0]));
    expect(ctx.deliveries).toBe(1);
    expect(ctx.consumer).toBe(runner.consumer);
    expect(ctx.fencingToken).toBeUndefined();
    expect(ctx.leaseName).toBeUndefined();
    const pending = (await t.redis().xpending(stream.name, 'g')) as [number];
    expect(pending[0]).toBe(0);
  });

  it('runs up to `concurrency` handlers at once and reads no more than it can start', async () => {
    const stream = defineStream({ name: t.name('conc'), payload });
    const client = t.client();
    for (let n = 0; n < 6; n++) await client.publish(stream, { n });
    let running = 0;
    let peak = 0;
    const gates: (() => void)[] = [];
    const runner = t.runner({
      consumers: [
        defineConsumer({
          stream,
          group: 'g',
          concurrency: 3,
          handler: async () => {
            running++;
            peak = Math.max(peak, running);
            await new Promise<void>((r) => gates.push(r));
            running--;
          },
        }),
      ],
    });
    await runner.start();
    await waitFor('three handlers running', () => running === 3);
    // Only what it handles is delivered: the rest is still unread in the stream, not pending here.
    const raw = t.redis();
    expect(((await raw.xpending(stream.name, 'g')) as [number])[0]).toBe(3);
    let handled = 0;
    await waitFor('all six handled', async () => {
      handled += gates.length;
      gates.splice(0).forEach((release) => release());
      return handled === 6 && ((await raw.xpending(stream.name, 'g')) as [number])[0] === 0;
    });
    expect(peak).toBe(3);
  });

  it('recreates a deleted stream and group and reads on (a Redis restart without persistence, a FLUSHALL, an operator mistake)', async () => {
    const stream = defineStream({ name: t.name('deleted'), payload });
    const seen: number[] = [];
    const { events, of } = t.recorder();
    const runner = t.runner({ events, consumers: [defineConsumer({ stream, group: 'g', handler: ({ n }) => void seen.push(n) })] });
    await runner.start();
    const client = t.client();
    await client.publish(stream, { n: 1 });
    await waitFor('first handled', () => seen.length === 1);

    const raw = t.redis();
    await raw.del(stream.name);
    await waitFor('the group recreated', () => of('stream.group-created').some((e) => e.recreated));
    await client.publish(stream, { n: 2 });
    await waitFor('handled after the stream was deleted', () => seen.includes(2));

    await raw.xgroup('DESTROY', stream.name, 'g');
    await waitFor('the group recreated again', () => of('stream.group-created').filter((e) => e.recreated).length === 2);
    await client.publish(stream, { n: 3 });
    await waitFor('handled after the group was destroyed', () => seen.includes(3));
    // Recreated at id 0, the group delivers what the stream still holds: entry 2 again (at-least-once).
    expect(seen).toEqual([1, 2, 2, 3]);
  });

  it('stops gracefully: an entry being handled finishes and is acked, then the consumer leaves the group', async () => {
    const stream = defineStream({ name: t.name('graceful'), payload });
    const gated = gatedHandler();
    const runner = t.runner({ consumers: [defineConsumer({ stream, group: 'g', handler: gated.handler })] });
    await runner.start();
    await t.client().publish(stream, { n: 1 });
    await gated.started;
    const stopping = runner.stop();
    gated.release();
    await stopping;
    expect(gated.finished).toEqual([1]);
    const raw = t.redis();
    expect(((await raw.xpending(stream.name, 'g')) as [number])[0]).toBe(0);
    expect((await raw.xinfo('CONSUMERS', stream.name, 'g')) as unknown[]).toEqual([]);
  });

  it('on stop, hands back an at-least-once entry whose handler outlives the grace period: another consumer takes it at once, its delivery not counted', async () => {
    const stream = defineStream({ name: t.name('handback'), payload });
    const { events, of } = t.recorder();
    let signal: AbortSignal | undefined;
    const slow = defineConsumer({
      stream,
      group: 'g',
      claimIdleMs: 60_000,
      handler: async (_p, ctx) => {
        signal = ctx.signal;
        await new Promise(() => {}); // never finishes, ignores its signal
      },
    });
    const first = t.runner({ events, consumers: [slow], shutdownGraceMs: 100 });
    await first.start();
    await t.client().publish(stream, { n: 1 });
    await waitFor('handler started', () => signal);
    await first.stop();
    expect(signal!.aborted).toBe(true);
    expect(of('stream.handed-back')).toEqual([expect.objectContaining({ count: 1 })]);

    const deliveries: number[] = [];
    const second = t.runner({ consumers: [defineConsumer({ stream, group: 'g', claimIdleMs: 60_000, handler: (_p, ctx) => void deliveries.push(ctx.deliveries) })] });
    await second.start();
    // claimIdleMs is a minute: only the hand-back makes it claimable now.
    await waitFor('taken over by the second consumer', () => deliveries.length === 1);
    expect(deliveries).toEqual([1]);
  });
});
