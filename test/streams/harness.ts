import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach } from 'vitest';
import { ConsumerRunner, type ConsumerRunnerOptions } from '../../src/streams/consumer-runner.js';
import { StreamClient, type StreamClientOptions } from '../../src/streams/stream-client.js';
import { EventBus, type NightshiftEvent } from '../../src/telemetry/events.js';
import type { RedisServer } from '../support/redis.js';

/** A recorded event, stamped by the bus. */
export type Recorded = NightshiftEvent & { at: number };

/**
 * Runners, clients and raw connections for the streams tests, all stopped after each test; and an
 * event recorder. Stream names get a random suffix so tests sharing a server do not meet.
 */
export function useStreams(server: () => RedisServer) {
  const stops: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
  });
  return {
    /** A unique stream name. */
    name(base: string): string {
      return `${base}:${randomBytes(4).toString('hex')}`;
    },
    /** A bus that records every event. */
    recorder(): { events: EventBus; seen: Recorded[]; of<T extends Recorded['type']>(type: T): Extract<Recorded, { type: T }>[] } {
      const events = new EventBus();
      const seen: Recorded[] = [];
      events.on((e) => seen.push(e));
      return { events, seen, of: (type) => seen.filter((e) => e.type === type) as never };
    },
    runner(options: Omit<ConsumerRunnerOptions, 'redisUrl'> & { redisUrl?: string }): ConsumerRunner {
      const r = new ConsumerRunner({ redisUrl: server().url, blockMs: 1_000, shutdownGraceMs: 5_000, ...options });
      stops.push(() => r.stop());
      return r;
    },
    client(options: Omit<StreamClientOptions, 'redisUrl'> & { redisUrl?: string } = {}): StreamClient {
      const c = new StreamClient({ redisUrl: server().url, ...options });
      stops.push(() => c.stop());
      return c;
    },
    /** A raw connection for arranging and asserting (the tests' own view of Redis). */
    redis(): Redis {
      const r = new Redis(server().url, { maxRetriesPerRequest: 1 });
      stops.push(() => r.quit().catch(() => r.disconnect()));
      return r;
    },
  };
}

/** A promise with its resolve function, for handlers that wait for the test. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/**
 * A handler that says when an entry arrives and holds it until `release()`: for tests of what
 * happens to an entry in flight (shutdown, a Redis outage, another consumer's reclaim).
 */
export function gatedHandler() {
  const arrived = deferred();
  const gate = deferred();
  const finished: number[] = [];
  let calls = 0;
  return {
    /** Resolves when the first entry reaches the handler. */
    started: arrived.promise,
    release: () => gate.resolve(),
    /** The `n` of every entry whose handler returned. */
    finished,
    get calls() {
      return calls;
    },
    handler: async ({ n }: { n: number }) => {
      calls++;
      arrived.resolve();
      await gate.promise;
      finished.push(n);
    },
  };
}

/** Reads a flat `[k, v, …]` field list into an object. */
export function fieldsOf(list: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < list.length; i += 2) out[list[i]!] = list[i + 1]!;
  return out;
}
