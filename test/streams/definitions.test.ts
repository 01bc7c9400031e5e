import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, RedisUnavailableError, StoppedError, UnknownStatusError } from '../../src/errors.js';
import { ConsumerRunner } from '../../src/streams/consumer-runner.js';
import { defineConsumer } from '../../src/streams/define-consumer.js';
import { defineStream } from '../../src/streams/define-stream.js';
import { defineStatusOrder } from '../../src/streams/status-order.js';

const stream = defineStream({ name: 'polymarket:order', payload: z.object({ orderId: z.string() }) });

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error('expected NS_CONFIG_INVALID');
}

describe('defineConsumer', () => {
  it('applies the documented defaults', () => {
    const c = defineConsumer({ stream, group: 'polymarket-operator', handler: () => {} });
    expect(c).toMatchObject({
      name: 'polymarket-operator',
      delivery: 'at-least-once',
      maxDeliveries: 10,
      claimIdleMs: 60_000,
      concurrency: 1,
      singleton: false,
      maxAgeMs: undefined,
      deadLetterStream: 'polymarket:order:dead-letter',
    });
  });

  it('reports every invalid option at once, naming the field, with a did-you-mean for typos', () => {
    const err = configError(() =>
      defineConsumer({
        stream: { name: 'x' } as never,
        group: 'bad group',
        delivery: 'exactly-once' as never,
        handler: 'nope' as never,
        claimIdleMs: 5,
        concurrency: 0,
        maxAgeMs: -1,
        singelton: true,
      } as never),
    );
    expect(err.code).toBe('NS_CONFIG_INVALID');
    const paths = err.issues.map((i) => i.path).sort();
    expect(paths).toEqual(['claimIdleMs', 'concurrency', 'delivery', 'group', 'handler', 'maxAgeMs', 'singelton', 'stream']);
    expect(err.issues.find((i) => i.path === 'singelton')!.message).toContain('did you mean "singleton"');
  });

  it('refuses options that contradict the delivery mode or each other', () => {
    const err = configError(() => defineConsumer({ stream, group: 'g', delivery: 'at-most-once', maxDeliveries: 3, onExpired: () => {}, deadLetterStream: 'polymarket:order', handler: () => {} }));
    expect(err.issues.map((i) => i.path).sort()).toEqual(['deadLetterStream', 'maxDeliveries', 'onExpired']);
  });
});

describe('ConsumerRunner options', () => {
  const op = defineConsumer({ stream, group: 'polymarket-operator', singleton: true, handler: () => {} });

  it('requires a leaderLease factory for a singleton consumer, and refuses duplicate groups', () => {
    const err = configError(() => new ConsumerRunner({ redisUrl: 'redis://127.0.0.1:6379', consumers: [op, defineConsumer({ stream, group: 'polymarket-operator', name: 'other', handler: () => {} })] }));
    expect(err.issues.map((i) => i.path)).toEqual(['leaderLease', 'consumers.1']);
    expect(err.issues[0]!.message).toContain('consumer "polymarket-operator" is a singleton');
  });

  it('validates the URL and timings, and is safe to stop before start and twice', async () => {
    const err = configError(() => new ConsumerRunner({ redisUrl: 'localhost:6379', consumers: [], blockMs: 0 } as never));
    expect(err.issues.map((i) => i.path)).toEqual(['redisUrl', 'blockMs']);
    const r = new ConsumerRunner({ redisUrl: 'redis://127.0.0.1:1', consumers: [] });
    await r.stop();
    await r.stop();
    await expect(r.start()).rejects.toBeInstanceOf(StoppedError);
  });

  it('fails start with NS_REDIS_UNAVAILABLE when Redis cannot be reached, leaving nothing running', async () => {
    const r = new ConsumerRunner({ redisUrl: 'redis://127.0.0.1:1', consumers: [defineConsumer({ stream, group: 'g', handler: () => {} })], connectTimeoutMs: 200 });
    const err = await r.start().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisUnavailableError);
    expect((err as RedisUnavailableError).code).toBe('NS_REDIS_UNAVAILABLE');
    // The leak guard checks that no connection or timer is left; a stop after a failed start is safe.
    await r.stop();
  });
});

describe('defineStatusOrder (seed 004: bet order statuses)', () => {
  const bet = defineStatusOrder({ order: ['queued', 'open', 'filled', 'killed', 'rejected'], terminal: ['filled', 'killed', 'rejected'], initial: 'queued' });

  it('applies open only to a queued row', () => {
    expect(bet.canApply('queued', 'open')).toBe(true);
    for (const from of ['open', 'filled', 'killed', 'rejected'] as const) expect(bet.canApply(from, 'open')).toBe(false);
    expect(bet.allowedFrom('open')).toEqual(['queued']);
  });

  it('applies any other status only to a row that is not terminal', () => {
    for (const to of ['filled', 'killed', 'rejected'] as const) {
      expect(bet.allowedFrom(to)).toEqual(['queued', 'open']);
      for (const from of ['filled', 'killed', 'rejected'] as const) expect(bet.canApply(from, to)).toBe(false);
    }
    expect(bet.allowedFrom('queued')).toEqual([]);
  });

  it('never moves a row backwards and never leaves a terminal status, whatever order updates arrive in', () => {
    const rank = (s: string) => bet.statuses.indexOf(s as never);
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...bet.statuses), { maxLength: 12 }), (updates) => {
        let status: (typeof bet.statuses)[number] = 'queued';
        for (const to of updates) {
          if (!bet.canApply(status, to)) continue;
          expect(bet.allowedFrom(to)).toContain(status);
          expect(rank(to)).toBeGreaterThan(rank(status));
          expect(bet.isTerminal(status)).toBe(false);
          status = to;
        }
        // The final status is the furthest reachable one: the highest-ranked update, unless a terminal came first.
        const firstTerminal = updates.findIndex((u) => bet.isTerminal(u));
        const considered = firstTerminal < 0 ? updates : updates.slice(0, firstTerminal + 1);
        const furthest = considered.reduce((best, u) => (rank(u) > rank(best) && !bet.isTerminal(best) ? u : best), 'queued' as (typeof bet.statuses)[number]);
        expect(status).toBe(furthest);
      }),
    );
  });

  it('throws NS_UNKNOWN_STATUS for a status not in the order, and refuses an invalid order', () => {
    expect(() => bet.canApply('queued', 'filed' as never)).toThrow(UnknownStatusError);
    expect(() => bet.allowedFrom('filed' as never)).toThrow(/did you mean "filled"/);
    expect(bet.isStatus('open')).toBe(true);
    expect(bet.isStatus('opened')).toBe(false);
    const err = configError(() => defineStatusOrder({ order: ['a', 'b', 'a'], terminal: ['c' as never, 'a'], initial: 'b' }));
    expect(err.issues.map((i) => i.path)).toEqual(['order.2', 'terminal.0', 'terminal.1', 'initial']);
  });
});
