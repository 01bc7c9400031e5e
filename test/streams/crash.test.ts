import type { Redis } from 'ioredis';
import { beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { RedisUnavailableError } from '../../src/errors.js';
import { defineConsumer } from '../../src/streams/define-consumer.js';
import { defineStream } from '../../src/streams/define-stream.js';
import { useTestDatabase } from '../support/db.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { useStreams } from './harness.js';
import { useConsumerProcesses } from './processes.js';

const payload = z.object({ n: z.number() });

describeWithRedis('consumer processes killed for real', () => {
  const db = useTestDatabase('streams');
  const redis = useRedisServer({ appendfsync: 'always' });
  const t = useStreams(redis.server);
  const spawnConsumer = useConsumerProcesses(() => ({ REDIS_URL: redis.server().url, DATABASE_URL: db.url, SCHEMA: db.schema }));

  beforeAll(async () => {
    await db.sql.query(`CREATE SCHEMA IF NOT EXISTS "${db.schema}"`);
    await db.sql.query(
      `CREATE TABLE "${db.schema}".handled (stream text NOT NULL, n int NOT NULL, entry_id text NOT NULL, phase text NOT NULL, pid int NOT NULL, token text, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
    );
  });

  async function rows(stream: string, phase: 'started' | 'done'): Promise<{ n: number; pid: number; token: string | null }[]> {
    const { rows } = await db.sql.query<{ n: number; pid: number; token: string | null }>(`SELECT n, pid, token FROM "${db.schema}".handled WHERE stream = $1 AND phase = $2 ORDER BY at`, [stream, phase]);
    return rows;
  }

  async function publishAll(stream: string, from: number, to: number): Promise<void> {
    const def = defineStream({ name: stream, payload });
    const client = t.client();
    for (let n = from; n < to; n++) {
      // Right after a Redis restart the connection may still be coming back: retry what was refused.
      await waitFor(`publish ${n}`, () => client.publish(def, { n }).catch((e: unknown) => (e instanceof RedisUnavailableError ? undefined : Promise.reject(e))));
    }
  }

  async function settled(raw: Redis, stream: string, group: string): Promise<boolean> {
    const groups = (await raw.xinfo('GROUPS', stream)) as unknown[][];
    const g = groups.find((row) => row[row.indexOf('name') + 1] === group);
    if (!g) return false;
    return Number(g[g.indexOf('pending') + 1]) === 0 && Number(g[g.indexOf('lag') + 1]) === 0;
  }

  it('at-most-once: a consumer killed mid-stream (SIGKILL) never has a message handled twice', async () => {
    const stream = t.name('intents');
    await publishAll(stream, 0, 30);
    const common = { STREAM: stream, GROUP: 'operator', DELIVERY: 'at-most-once', CLAIM_IDLE_MS: '300', CONCURRENCY: '2' };
    const a = spawnConsumer({ ...common, HANG_ON: '10' });
    await a.ready;
    await waitFor('entry 10 being handled by A', async () => (await rows(stream, 'started')).some((r) => r.n === 10 && r.pid === a.pid));
    await a.kill('SIGKILL');

    const b = spawnConsumer(common);
    await b.ready;
    await publishAll(stream, 30, 40);
    const raw = t.redis();
    // Acked before handling, so "nothing pending" comes before the handlers end: also wait until
    // every handler B started has finished, and B has handled all ten published after the kill.
    await waitFor('every entry delivered and B idle', async () => {
      if (!(await settled(raw, stream, 'operator'))) return false;
      const ofB = async (phase: 'started' | 'done') => (await rows(stream, phase)).filter((r) => r.pid === b.pid);
      const [started, done] = [await ofB('started'), await ofB('done')];
      return started.length === done.length && done.filter((r) => r.n >= 30).length === 10;
    });

    const started = await rows(stream, 'started');
    const count = new Map<number, number>();
    for (const r of started) count.set(r.n, (count.get(r.n) ?? 0) + 1);
    expect(
      [...count].filter(([, c]) => c > 1),
      'entries handled twice',
    ).toEqual([]);
    expect(started.filter((r) => r.n === 10).map((r) => r.pid)).toEqual([a.pid]);
    // Everything published after the kill was handled, by B.
    expect(started.filter((r) => r.n >= 30).map((r) => r.pid)).toEqual(Array(10).fill(b.pid));
    // What A held when it died is recorded as abandoned, not handled — the entry inside its handler
    // (10) too, since an at-most-once entry stays pending until its handler returns: none is missing.
    const dead = ((await raw.xrange(`${stream}:dead-letter`, '-', '+')) as [string, string[]][]).map(([, f]) => ({
      n: (JSON.parse(f[1]!) as { n: number }).n,
      error: f[f.indexOf('error') + 1]!,
    }));
    const accounted = new Set([...count.keys(), ...dead.map((d) => d.n)]);
    expect(Array.from({ length: 40 }, (_, n) => n).filter((n) => !accounted.has(n))).toEqual([]);
    expect(dead.find((d) => d.n === 10)?.error).toContain('its handler started');
    expect(b.alive()).toBe(true);
  });

  it('at-most-once: an entry whose process was killed inside its handler shows as abandoned in the diagnosis (with the other statuses that apply), then onAbandoned recovers it once', async () => {
    const stream = t.name('escrows');
    await publishAll(stream, 0, 3);
    const common = { STREAM: stream, GROUP: 'operator', DELIVERY: 'at-most-once', CLAIM_IDLE_MS: '300', ON_ABANDONED: '1' };
    const a = spawnConsumer({ ...common, HANG_ON: '1' });
    await a.ready;
    await waitFor('entry 1 inside its handler on A', async () => (await rows(stream, 'started')).some((r) => r.n === 1 && r.pid === a.pid));
    await a.kill('SIGKILL');
    await publishAll(stream, 3, 4);

    const def = defineStream({ name: stream, payload });
    const consumer = defineConsumer({ stream: def, group: 'operator', delivery: 'at-most-once', claimIdleMs: 300, handler: () => undefined, onAbandoned: () => undefined });
    const client = t.client();
    // Nobody reads now: entry 3 waits unread, entry 1 was abandoned inside the handler, and is stuck pending — all three at once.
    const sick = await waitFor('abandoned, not reading and stuck at once', async () => {
      const g = (await client.diagnose({ consumers: [consumer], stalledAfterMs: 100 })).streams[0]!.groups[0]!;
      return g.statuses.length === 3 ? g : undefined;
    });
    expect(sick.statuses).toEqual(['not-reading', 'abandoned', 'stuck-pending']);
    expect(sick).toMatchObject({ status: 'not-reading', abandoned: 1, started: 1 });
    expect(sick.statusText).toContain('abandoned inside the handler');

    const b = spawnConsumer(common);
    await b.ready;
    const raw = t.redis();
    await waitFor('recovered and every entry handled', async () => (await settled(raw, stream, 'operator')) && (await rows(stream, 'done')).some((r) => r.n === 3));
    const recovered = await db.sql.query<{ n: number; pid: number }>(`SELECT n, pid FROM "${db.schema}".handled WHERE stream = $1 AND phase = 'recovered'`, [stream]);
    expect(recovered.rows).toEqual([{ n: 1, pid: b.pid }]);
    expect((await rows(stream, 'started')).filter((r) => r.n === 1).map((r) => r.pid)).toEqual([a.pid]);
    const dead = (await raw.xrange(`${stream}:dead-letter`, '-', '+')) as [string, string[]][];
    expect(dead.map(([, f]) => [f[f.indexOf('reason') + 1], f[f.indexOf('error') + 1]])).toEqual([['abandoned', expect.stringContaining('recovered by onAbandoned')]]);
    const healthy = (await client.diagnose({ consumers: [consumer], stalledAfterMs: 100 })).streams[0]!.groups[0]!;
    expect(healthy).toMatchObject({ statuses: ['ok'], abandoned: 0, started: 0 });
  });

  it('at-least-once: with consumers killed and Redis restarted (AOF always), every message is handled at least once', async () => {
    const stream = t.name('updates');
    await publishAll(stream, 0, 40);
    const common = { STREAM: stream, GROUP: 'bets-backend', DELIVERY: 'at-least-once', CLAIM_IDLE_MS: '500', CONCURRENCY: '2' };
    // A starts alone, so entry 5 is certainly A's; C joins before the crash and must ride out the restart.
    const a = spawnConsumer({ ...common, HANG_ON: '5' });
    await a.ready;
    await waitFor('entry 5 being handled by A', async () => (await rows(stream, 'started')).some((r) => r.n === 5 && r.pid === a.pid));
    const c = spawnConsumer(common);
    await c.ready;

    await a.kill('SIGKILL');
    await redis.server().kill();
    await redis.server().restart();
    await publishAll(stream, 40, 50);
    const d = spawnConsumer(common);
    await d.ready;

    const raw = t.redis();
    await waitFor('every entry handled and acked', async () => (await settled(raw, stream, 'bets-backend')) && new Set((await rows(stream, 'done')).map((r) => r.n)).size === 50, {
      timeoutMs: 45_000,
    });
    const done = await rows(stream, 'done');
    const handled = new Set(done.map((r) => r.n));
    expect(
      Array.from({ length: 50 }, (_, n) => n).filter((n) => !handled.has(n)),
      'entries never handled',
    ).toEqual([]);
    // Entry 5 died with A and was taken over by a live consumer.
    expect(done.filter((r) => r.n === 5).map((r) => r.pid)).not.toContain(a.pid);
    // C rode out the Redis restart: it is still running, and consumed after it.
    expect(c.alive()).toBe(true);
    expect(c.lines().some((l) => l.type === 'stream.connection-lost')).toBe(true);
    expect(c.lines().some((l) => l.type === 'stream.connected')).toBe(true);
    expect(await raw.xlen(`${stream}:dead-letter`)).toBe(0);
  });
});
