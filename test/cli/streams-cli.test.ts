import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { useTestDatabase } from '../support/db.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { cliInProcess as cli, startInProcess, withProcessEnv } from './in-process.js';

const APP = join(new URL('..', import.meta.url).pathname, 'fixtures', 'streams-app');

describeWithRedis('streams hosted by roles, and nightshift streams', () => {
  const redis = useRedisServer();
  const t = useTestDatabase('st');
  // The config names its stream after the schema; this process imports it too. The CLI runs in
  // this process: the config reads NS_SCHEMA and the library REDIS_URL from process.env.
  process.env.NS_SCHEMA = t.schema;
  const env = () => ({ DATABASE_URL: t.url, NIGHTSHIFT_LOG_LEVEL: 'warn' });
  const run = (args: string[]) => cli(args, { env: env(), cwd: APP });

  beforeAll(async () => {
    process.env.REDIS_URL = redis.server().url;
    const r = await cli(['migrate'], { env: { DATABASE_URL: t.url }, cwd: APP });
    expect(r.code, r.stderr).toBe(0);
  });
  afterAll(() => {
    delete process.env.REDIS_URL;
  });

  it('a worker with the backend role consumes its group; the diagnosis shows who reads and who never started', async () => {
    const never = JSON.parse((await run(['streams', '--json'])).stdout);
    const groups = never.streams[0].groups as { group: string; status: string; statusText: string }[];
    expect(groups.map((g) => [g.group, g.status])).toEqual([
      ['bets-backend', 'never-started'],
      ['audit', 'never-started'],
    ]);
    const human = await run(['streams']);
    expect(human.stdout).toContain('consumer never started');
    const worker = startInProcess(['worker', '--roles', 'backend'], { env: env(), cwd: APP });
    try {
      await worker.waitForLine('started');
      const producer = t.client({ redisUrl: redis.server().url, streams: [] });
      const stream = `${t.schema}:order-update`;
      const { updates } = await import('../fixtures/streams-app/nightshift.config.js');
      expect(updates.name).toBe(stream);
      for (let i = 0; i < 5; i++) await producer.publish(updates as never, { orderId: `o-${i}`, status: 'filled' } as never);
      const d = await waitFor('the backend group to consume everything', async () => {
        const r = JSON.parse((await run(['streams', '--json'])).stdout);
        const g = r.streams[0].groups.find((x: { group: string }) => x.group === 'bets-backend');
        return g.exists && g.pending === 0 && g.lag === 0 ? r : undefined;
      });
      const backend = d.streams[0].groups.find((x: { group: string }) => x.group === 'bets-backend');
      expect(backend.status).toBe('ok');
      expect(backend.consumers.length).toBe(1);
      // The audit group is not hosted by the backend role: still never started, with 5 entries waiting.
      const audit = d.streams[0].groups.find((x: { group: string }) => x.group === 'audit');
      expect(audit.status).toBe('never-started');
      expect(d.streams[0].length).toBe(5);
    } finally {
      await worker.close();
    }
  });

  it('publish validates the payload and writes nothing when it does not match', async () => {
    const { updates } = await import('../fixtures/streams-app/nightshift.config.js');
    const producer = t.client({ redisUrl: redis.server().url });
    const before = JSON.parse((await run(['streams', '--json'])).stdout).streams[0].length;
    await expect(producer.publish(updates as never, { orderId: 42 } as never)).rejects.toMatchObject({ code: 'NS_PAYLOAD_INVALID' });
    expect(JSON.parse((await run(['streams', '--json'])).stdout).streams[0].length).toBe(before);
  });

  it('a consumer without Redis configured is a configuration error', async () => {
    const r = await withProcessEnv({ REDIS_URL: undefined }, () => cli(['worker', '--roles', 'backend'], { env: { DATABASE_URL: t.url }, cwd: APP }));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('redisUrl');
  });
});
