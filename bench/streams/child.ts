/**
 * The streams benchmark's child process: runs one consume or publish task at a time against the
 * bench's Redis, with nightshift's API, a plain ioredis loop, or BullMQ, driven over IPC by
 * bench/streams/scenario.ts. Bundled to plain JavaScript with bench/child.ts (bench/build-child.ts).
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { ConsumerRunner, defineConsumer, defineStream, StreamClient } from '../../src/index.js';
import { wallMs, type ChildInit, type ChildReply, type ChildRequest } from '../protocol.js';
import { bullQueue, GROUP, type StreamTask, type StreamTaskResult } from './tasks.js';

const payload = z.object({ i: z.number().int() });

function send(msg: ChildReply): void {
  process.send?.(msg);
}

/** Resolves once `pred()` holds, polling every `everyMs` (bounded by the caller's timeout). */
async function until(pred: () => Promise<boolean>, everyMs: number): Promise<void> {
  while (!(await pred())) await new Promise((r) => setTimeout(r, everyMs));
}

function redisOptions(url: string) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port) };
}

/** nightshift's at-least-once consumer: from the first handler call until nothing is pending. */
async function consumeNightshift(url: string, t: Extract<StreamTask, { kind: 'consume' }>): Promise<StreamTaskResult> {
  const stream = defineStream({ name: t.key, payload });
  let handled = 0;
  let first = 0;
  let allHandled: () => void = () => undefined;
  const done = new Promise<void>((r) => (allHandled = r));
  const consumer = defineConsumer({
    stream,
    group: GROUP,
    concurrency: t.concurrency,
    handler: () => {
      first ||= wallMs();
      if (++handled === t.n) allHandled();
    },
  });
  const runner = new ConsumerRunner({ redisUrl: url, consumers: [consumer] });
  const probe = new Redis(url);
  try {
    await runner.start();
    await done;
    // Acks may be batched: the drain is over when the group holds nothing pending.
    await until(async () => Number(((await probe.xpending(t.key, GROUP)) as [number])[0]) === 0, 2);
    return { ms: wallMs() - first, handled };
  } finally {
    await runner.stop();
    probe.disconnect();
  }
}

/** The raw ceiling: one connection, `XREADGROUP COUNT 100`, parse each payload, `XACK` the batch, again. */
async function consumeRaw(url: string, t: Extract<StreamTask, { kind: 'consume' }>): Promise<StreamTaskResult> {
  const redis = new Redis(url);
  try {
    await redis.xgroup('CREATE', t.key, GROUP, '0', 'MKSTREAM');
    let handled = 0;
    const t0 = wallMs();
    for (;;) {
      const res = (await redis.xreadgroup('GROUP', GROUP, 'raw', 'COUNT', 100, 'STREAMS', t.key, '>')) as [string, [string, string[]][]][] | null;
      const entries = res?.[0]?.[1] ?? [];
      if (entries.length === 0) break;
      for (const [, fields] of entries) JSON.parse(fields[1]!);
      await redis.xack(t.key, GROUP, ...entries.map(([id]) => id));
      handled += entries.length;
    }
    return { ms: wallMs() - t0, handled };
  } finally {
    redis.disconnect();
  }
}

/** BullMQ's worker: from the first processor call until every job has completed (its 'completed' event). */
async function consumeBullmq(url: string, t: Extract<StreamTask, { kind: 'consume' }>): Promise<StreamTaskResult> {
  let first = 0;
  let completed = 0;
  let allDone: () => void = () => undefined;
  const done = new Promise<void>((r) => (allDone = r));
  const worker = new Worker(
    bullQueue(t.key),
    async () => {
      first ||= wallMs();
    },
    { connection: redisOptions(url), concurrency: t.concurrency, autorun: false },
  );
  worker.on('completed', () => {
    if (++completed === t.n) allDone();
  });
  worker.on('error', () => undefined);
  try {
    void worker.run();
    await done;
    return { ms: wallMs() - first, handled: completed };
  } finally {
    await worker.close(true);
  }
}

async function publish(url: string, t: Extract<StreamTask, { kind: 'publish' }>): Promise<StreamTaskResult> {
  let next = 0;
  const callers = async (one: (i: number) => Promise<unknown>) => {
    const t0 = wallMs();
    await Promise.all(
      Array.from({ length: t.callers }, async () => {
        while (next < t.n) await one(next++);
      }),
    );
    return { ms: wallMs() - t0, handled: next };
  };
  if (t.side === 'nightshift') {
    const stream = defineStream({ name: t.key, payload });
    const client = new StreamClient({ redisUrl: url, streams: [stream] });
    try {
      await client.publish(stream, { i: -1 }); // connect outside the timed part, as the others do
      return await callers((i) => client.publish(stream, { i }));
    } finally {
      await client.stop();
    }
  }
  if (t.side === 'bullmq') {
    const queue = new Queue(bullQueue(t.key), { connection: redisOptions(url) });
    try {
      await queue.waitUntilReady();
      return await callers((i) => queue.add('noop', { i }, { removeOnComplete: true }));
    } finally {
      await queue.close();
    }
  }
  // Raw: XADD pipelined, 1,000 commands per round trip.
  const redis = new Redis(url);
  try {
    await redis.ping();
    const t0 = wallMs();
    for (let i = 0; i < t.n; i += 1_000) {
      const p = redis.pipeline();
      for (let k = i; k < Math.min(t.n, i + 1_000); k++) p.xadd(t.key, '*', 'payload', JSON.stringify({ i: k }));
      await p.exec();
    }
    return { ms: wallMs() - t0, handled: t.n };
  } finally {
    redis.disconnect();
  }
}

function run(url: string, t: StreamTask): Promise<StreamTaskResult> {
  if (t.kind === 'publish') return publish(url, t);
  if (t.side === 'nightshift') return consumeNightshift(url, t);
  if (t.side === 'bullmq') return consumeBullmq(url, t);
  return consumeRaw(url, t);
}

process.once('message', (init: ChildInit) => {
  if (init?.type !== 'init') return;
  process.on('message', (msg: ChildRequest) => {
    if (msg?.type !== 'request') return;
    const c = msg.command;
    const work: Promise<unknown> =
      c.op === 'stream' ? run(init.url, c.task) : c.op === 'stop' ? Promise.resolve(null).finally(() => setImmediate(() => process.exit(0))) : Promise.reject(new Error(`streams child: unknown op ${c.op}`));
    work.then(
      (result) => send({ type: 'reply', id: msg.id, ok: true, result }),
      (err: unknown) => send({ type: 'reply', id: msg.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
  send({ type: 'ready' });
});
// The orchestrator going away ends the child.
process.on('disconnect', () => process.exit(0));
