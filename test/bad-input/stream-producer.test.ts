import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isNightshiftError, type NightshiftError } from '../../src/errors.js';
import { defineStream } from '../../src/streams/define-stream.js';
import { StreamClient } from '../../src/streams/stream-client.js';
import { useStreams } from '../streams/harness.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';

// Entry point: the stream producer (defineStream, StreamClient, publish). Each bad input gets a
// typed error with a stable code and adds no entry. Cases already in test/streams/publish.test.ts
// and definitions.test.ts are not repeated here.

function thrown(fn: () => unknown): NightshiftError {
  try {
    fn();
  } catch (err) {
    expect(isNightshiftError(err), String(err)).toBe(true);
    return err as NightshiftError;
  }
  throw new Error('expected a throw');
}

describe('defineStream and StreamClient options', () => {
  it.each([
    ['a name with Redis glob characters', { name: 'orders*' }, 'name'],
    ['a name with a space and a quote', { name: "orders 'x" }, 'name'],
    ['an empty name', { name: '' }, 'name'],
    ['an over-long name', { name: 's'.repeat(129) }, 'name'],
    ['maxPayloadBytes NaN', { maxPayloadBytes: Number.NaN }, 'maxPayloadBytes'],
    ['maxPayloadBytes beyond 512 MiB', { maxPayloadBytes: 600 * 1_048_576 }, 'maxPayloadBytes'],
    ['maxLength negative', { maxLength: -1 }, 'maxLength'],
  ])('defineStream with %s: NS_CONFIG_INVALID at %s', (_what, patch, path) => {
    const err = thrown(() => defineStream({ name: 'orders', payload: z.object({}), ...patch } as never));
    expect(err.code).toBe('NS_CONFIG_INVALID');
    expect(err.issues.map((i) => i.path)).toContain(path);
  });

  it.each([
    ['an empty URL', { redisUrl: '' }, 'redisUrl'],
    ['a port out of range', { redisUrl: 'redis://127.0.0.1:99999' }, 'redisUrl'],
    ['a database that is not a number', { redisUrl: 'redis://127.0.0.1:6379/x' }, 'redisUrl'],
    ['connectTimeoutMs negative', { redisUrl: 'redis://127.0.0.1:6379', connectTimeoutMs: -1 }, 'connectTimeoutMs'],
    ['a misspelt option', { redisUrl: 'redis://127.0.0.1:6379', stream: [] }, 'stream'],
  ])('StreamClient with %s: NS_CONFIG_INVALID at %s', (_what, options, path) => {
    const err = thrown(() => new StreamClient(options as never));
    expect(err.code).toBe('NS_CONFIG_INVALID');
    expect(err.issues.map((i) => i.path)).toContain(path);
  });
});

describeWithRedis('publish: payloads that cannot be stored faithfully', () => {
  const redis = useRedisServer();
  const t = useStreams(redis.server);
  const circular: Record<string, unknown> = {};
  circular.self = circular;

  it.each([
    ['a lone surrogate', { v: 'x\ud800' }, 'NS_PAYLOAD_INVALID'],
    ['NaN', { v: Number.NaN }, 'NS_PAYLOAD_INVALID'],
    ['a bigint', { v: 10n }, 'NS_PAYLOAD_INVALID'],
    ['a cycle', circular, 'NS_PAYLOAD_INVALID'],
    ['undefined', undefined, 'NS_PAYLOAD_INVALID'],
    ['a Map', { v: new Map([[1, 2]]) }, 'NS_PAYLOAD_INVALID'],
    ['multi-byte characters over the byte limit', { v: 'é'.repeat(60) }, 'NS_PAYLOAD_TOO_LARGE'],
  ])('%s: %s, no entry added', async (_what, payload, code) => {
    const stream = defineStream({ name: t.name('bad'), payload: z.unknown(), maxPayloadBytes: 100 });
    const client = t.client();
    const err = (await client.publish(stream, payload).catch((e: unknown) => e)) as NightshiftError;
    expect(isNightshiftError(err), String(err)).toBe(true);
    expect(err.code).toBe(code);
    expect(await t.redis().exists(stream.name)).toBe(0);
  });

  it('a stream name given as a string that no definition has: NS_UNKNOWN_STREAM, no entry added', async () => {
    const client = t.client();
    const name = t.name('nowhere');
    const err = (await client.publish(name, { a: 1 }).catch((e: unknown) => e)) as NightshiftError;
    expect(err.code).toBe('NS_UNKNOWN_STREAM');
    expect(await t.redis().exists(name)).toBe(0);
  });
});
