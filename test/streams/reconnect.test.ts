import { expect, it } from 'vitest';
import { z } from 'zod';
import { RedisUnavailableError } from '../../src/errors.js';
import { defineConsumer } from '../../src/streams/define-consumer.js';
import { defineStream } from '../../src/streams/define-stream.js';
import type { StreamClient } from '../../src/streams/stream-client.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { gatedHandler, useStreams } from './harness.js';

const payload = z.object({ n: z.number() });

/** Publishes, retrying while the connection is still coming back after a restart. */
function publishWhenBack(client: StreamClient, stream: ReturnType<typeof defineStream<typeof payload>>, n: number) {
  return waitFor(`publish ${n}`, () => client.publish(stream, { n }).catch((e: unknown) => (e instanceof RedisUnavailableError ? undefined : Promise.reject(e))));
}

describeWithRedis('Redis restarts', () => {
  // No persistence: a restart loses every stream and group, as a cache-configured Redis would.
  const redis = useRedisServer({ config: ['appendonly no'] });
  const t = useStreams(redis.server);

  it('a consumer rides out a restart that lost its data: it reconnects, recreates stream and group, and reads on', async () => {
    const stream = defineStream({ name: t.name('volatile'), payload });
    const seen: number[] = [];
    const { events, of } = t.recorder();
    const runner = t.runner({ events, consumers: [defineConsumer({ stream, group: 'g', handler: ({ n }) => void seen.push(n) })] });
    await runner.start();
    const client = t.client();
    await client.publish(stream, { n: 1 });
    await waitFor('first handled', () => seen.length === 1);

    await redis.server().restart();
    expect(await t.redis().exists(stream.name)).toBe(0);
    await waitFor('reconnected', () => of('stream.connected').length > 0);
    await waitFor('the group recreated', () => of('stream.group-created').some((e) => e.recreated));
    await publishWhenBack(client, stream, 2);
    await waitFor('handled after the restart', () => seen.includes(2));
    expect(seen).toEqual([1, 2]);
    expect(of('stream.connection-lost').length).toBeGreaterThan(0);
    expect(runner.active).toEqual(['g']);
  });

  it('stop is bounded while Redis is down: reads are cut, in-flight entries finish, nothing hangs', async () => {
    const stream = defineStream({ name: t.name('down'), payload });
    const gated = gatedHandler();
    const runner = t.runner({ shutdownGraceMs: 10_000, consumers: [defineConsumer({ stream, group: 'g', handler: gated.handler })] });
    await runner.start();
    await t.client().publish(stream, { n: 1 });
    await gated.started;
    await redis.server().kill();
    const stopping = runner.stop();
    gated.release();
    await stopping;
    expect(gated.finished).toEqual([1]);
    await redis.server().restart();
  });
});
