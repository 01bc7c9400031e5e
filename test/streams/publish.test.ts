import { context, createContextKey, propagation, type TextMapPropagator } from '@opentelemetry/api';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, PayloadInvalidError, PayloadTooLargeError, RedisUnavailableError, UnknownStreamError } from '../../src/errors.js';
import { defineConsumer } from '../../src/streams/define-consumer.js';
import { defineStream } from '../../src/streams/define-stream.js';
import { StreamClient } from '../../src/streams/stream-client.js';
import { LocalContextManager } from '../support/otel.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { fieldsOf, useStreams } from './harness.js';

describeWithRedis('publish', () => {
  const redis = useRedisServer();
  const t = useStreams(redis.server);

  afterEach(() => {
    propagation.disable();
    context.disable();
  });

  it('writes XADD key * payload <json>, validated, and returns the entry id', async () => {
    const orders = defineStream({ name: t.name('orders'), payload: z.object({ orderId: z.string(), size: z.number() }) });
    const { events, of } = t.recorder();
    const client = t.client({ events });
    const { id } = await client.publish(orders, { orderId: 'o-1', size: 5 });
    expect(id).toMatch(/^\d+-\d+$/);
    const raw = t.redis();
    const entries = (await raw.xrange(orders.name, '-', '+')) as [string, string[]][];
    expect(entries).toHaveLength(1);
    expect(entries[0]![0]).toBe(id);
    expect(entries[0]![1]).toEqual(['payload', JSON.stringify({ orderId: 'o-1', size: 5 })]);
    expect(of('stream.published')).toEqual([expect.objectContaining({ stream: orders.name, id })]);
    expect(JSON.stringify(of('stream.published'))).not.toContain('o-1');
  });

  it('rejects an invalid payload with NS_PAYLOAD_INVALID and writes nothing', async () => {
    const orders = defineStream({ name: t.name('orders'), payload: z.object({ orderId: z.string() }) });
    const client = t.client();
    const err = await client.publish(orders, { orderId: 42 } as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadInvalidError);
    expect((err as PayloadInvalidError).code).toBe('NS_PAYLOAD_INVALID');
    expect((err as PayloadInvalidError).issues[0]!.path).toBe('payload.orderId');
    const values = await client.publish(orders, { orderId: 'x\u0000y' }).catch((e: unknown) => e);
    expect(values).toBeInstanceOf(PayloadInvalidError);
    expect(await t.redis().exists(orders.name)).toBe(0);
  });

  it('rejects a payload over maxPayloadBytes with NS_PAYLOAD_TOO_LARGE and writes nothing', async () => {
    const blobs = defineStream({ name: t.name('blobs'), payload: z.object({ data: z.string() }), maxPayloadBytes: 100 });
    const client = t.client();
    const err = await client.publish(blobs, { data: 'x'.repeat(200) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PayloadTooLargeError);
    expect((err as PayloadTooLargeError).code).toBe('NS_PAYLOAD_TOO_LARGE');
    expect(await t.redis().exists(blobs.name)).toBe(0);
  });

  it('validates the payload before connecting: an invalid payload is refused even when Redis is unreachable', async () => {
    const orders = defineStream({ name: t.name('orders'), payload: z.object({ orderId: z.string() }) });
    const client = t.client({ redisUrl: 'redis://127.0.0.1:1', connectTimeoutMs: 200 });
    await expect(client.publish(orders, {} as never)).rejects.toBeInstanceOf(PayloadInvalidError);
    const err = await client.publish(orders, { orderId: 'a' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect((err as RedisUnavailableError).code).toBe('NS_REDIS_UNAVAILABLE');
  });

  it('publishes by name only for streams the client was given, suggesting the closest', async () => {
    const orders = defineStream({ name: 'polymarket:order', payload: z.object({ orderId: z.string() }) });
    const client = t.client({ streams: [orders] });
    const err = await client.publish('polymarket:ordr', { orderId: 'a' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnknownStreamError);
    expect(String((err as Error).message)).toContain('did you mean "polymarket:order"');
    await t.redis().del(orders.name);
    await client.publish('polymarket:order', { orderId: 'a' });
    expect(await t.redis().xlen(orders.name)).toBe(1);
    await t.redis().del(orders.name);
  });

  it('carries the trace context in its own field, next to the payload', async () => {
    const fake: TextMapPropagator = {
      inject: (_ctx, carrier, setter) => setter.set(carrier, 'traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'),
      extract: (ctx) => ctx,
      fields: () => ['traceparent'],
    };
    propagation.setGlobalPropagator(fake);
    const orders = defineStream({ name: t.name('orders'), payload: z.object({ n: z.number() }) });
    await context.with(context.active(), () => t.client().publish(orders, { n: 1 }));
    const entries = (await t.redis().xrange(orders.name, '-', '+')) as [string, string[]][];
    expect(fieldsOf(entries[0]![1])).toEqual({ payload: '{"n":1}', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
  });

  it("runs the consumer's handler in the trace context the entry carries", async () => {
    const TRACE = createContextKey('test trace');
    const fake: TextMapPropagator = {
      inject: (ctx, carrier, setter) => {
        const value = ctx.getValue(TRACE);
        if (typeof value === 'string') setter.set(carrier, 'traceparent', value);
      },
      extract: (ctx, carrier, getter) => {
        const value = getter.get(carrier, 'traceparent');
        return typeof value === 'string' ? ctx.setValue(TRACE, value) : ctx;
      },
      fields: () => ['traceparent'],
    };
    propagation.setGlobalPropagator(fake);
    context.setGlobalContextManager(new LocalContextManager());
    const orders = defineStream({ name: t.name('orders'), payload: z.object({ n: z.number() }) });
    const seen: unknown[] = [];
    const runner = t.runner({ consumers: [defineConsumer({ stream: orders, group: 'g', handler: () => void seen.push(context.active().getValue(TRACE)) })] });
    await runner.start();
    const client = t.client();
    await context.with(context.active().setValue(TRACE, '00-aaaa-bbbb-01'), () => client.publish(orders, { n: 1 }));
    await client.publish(orders, { n: 2 });
    await waitFor('both handled', () => seen.length === 2);
    expect(seen).toEqual(['00-aaaa-bbbb-01', undefined]);
  });

  it('trims to about maxLength entries when the stream sets it', async () => {
    const ticks = defineStream({ name: t.name('ticks'), payload: z.object({ n: z.number() }), maxLength: 10 });
    const client = t.client();
    for (let n = 0; n < 300; n++) await client.publish(ticks, { n });
    // MAXLEN ~ trims whole macro nodes (100 entries by default), so the length is bounded, not exact.
    const length = await t.redis().xlen(ticks.name);
    expect(length).toBeLessThan(300);
    expect(length).toBeGreaterThanOrEqual(10);
  });

  it('refuses invalid stream definitions and client options with NS_CONFIG_INVALID naming each field', () => {
    const e1 = (() => {
      try {
        defineStream({ name: 'has space', payload: {} as never, maxLength: 0, extra: 1 } as never);
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(e1).toBeInstanceOf(ConfigError);
    expect(e1!.issues.map((i) => i.path).sort()).toEqual(['extra', 'maxLength', 'name', 'payload']);
    expect(() => new StreamClient({ redisUrl: 'http://localhost' })).toThrow(/redisUrl: protocol "http:"/);
    expect(() => new StreamClient({ redisUrl: 'redis://x', streams: [{}] as never })).toThrow(ConfigError);
  });
});
