import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { RedisVersionError } from '../../src/errors.js';
import { MIN_REDIS_VERSION, RedisConnection, redisTooOld, redisVersionOf } from '../../src/streams/redis-connection.js';
import { describeWithRedis, redisServerPath, useRedisServer } from '../support/redis.js';

// No redis-server older than 6.2 installs here (Debian 12 ships 7.0), so the refusal is tested on
// the parsing of real INFO replies, and the real server is checked to pass.
describe('the Redis version check', () => {
  // The head of a Redis 6.0 INFO server reply, as the server sends it (CRLF lines).
  const info60 = '# Server\r\nredis_version:6.0.16\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\nos:Linux 5.10.0 x86_64\r\n';

  it('reads redis_version from an INFO server reply', () => {
    expect(redisVersionOf(info60)).toBe('6.0.16');
    expect(redisVersionOf('# Server\r\nredis_git_sha1:0\r\n')).toBeUndefined();
  });

  it('refuses servers before 6.2 and accepts 6.2 and later', () => {
    for (const old of ['5.0.14', '6.0.16', '6.1.99', '4.0']) expect(redisTooOld(old), old).toBe(true);
    for (const ok of [MIN_REDIS_VERSION, '6.2', '6.2.14', '7.0.15', '7.4.2', '8.0.0', '10.1.0']) expect(redisTooOld(ok), ok).toBe(false);
  });

  it('does not judge a version it cannot read', () => {
    expect(redisTooOld('unknown')).toBe(false);
    expect(redisTooOld('')).toBe(false);
  });

  it('explains the refusal with a stable code and what to do', () => {
    const err = new RedisVersionError('connecting streams', '6.0.16', MIN_REDIS_VERSION);
    expect(err.code).toBe('NS_REDIS_VERSION');
    expect(err.message).toContain('Redis 6.0.16 is too old');
    expect(err.hint).toContain('upgrade');
  });
});

describeWithRedis('the Redis version check against the installed server', () => {
  const redis = useRedisServer();

  it('parses the real server’s version (the one redis-server --version prints) and lets it connect', async () => {
    const printed = /v=(\S+)/.exec(execFileSync(redisServerPath!, ['--version'], { encoding: 'utf8' }))![1]!;
    const conn = new RedisConnection(redis.server().url, 'version-check', undefined);
    try {
      await conn.open(10_000);
      const info = String(await conn.redis.call('INFO', 'server'));
      expect(redisVersionOf(info)).toBe(printed);
      expect(redisTooOld(printed)).toBe(false);
      expect(conn.ready).toBe(true);
    } finally {
      await conn.close();
    }
  });
});
