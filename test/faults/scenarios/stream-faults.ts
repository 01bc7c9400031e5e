import { Redis } from 'ioredis';
import { z } from 'zod';
import { defineStream, StreamClient } from '../../../src/index.js';
import { startRedis, type RedisServer } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import type { Member } from '../harness/fleet.js';
import { FaultInjector, runTimeline } from '../harness/injector.js';
import type { Invariant, Scenario, ScenarioContext, ScenarioResult } from '../harness/scenario.js';

/** Parameters of scenario 9. */
export interface StreamFaultParams {
  /** Messages published to each of the two streams. */
  messages: number;
  /** Consumer processes per stream. */
  consumers: number;
  windowMs: number;
  /** A random consumer is SIGKILLed (and replaced) this often. */
  killEveryMs: number;
  /** Redis SIGKILLed and restarted (appendfsync always) this many times in the window. */
  redisRestarts: number;
  concurrency: number;
  claimIdleMs: number;
  timeoutMs: number;
}

const full: StreamFaultParams = { messages: 3_000, consumers: 3, windowMs: 40_000, killEveryMs: 2_500, redisRestarts: 2, concurrency: 2, claimIdleMs: 1_000, timeoutMs: 300_000 };
const short: StreamFaultParams = { messages: 200, consumers: 2, windowMs: 6_000, killEveryMs: 2_000, redisRestarts: 1, concurrency: 2, claimIdleMs: 1_000, timeoutMs: 120_000 };

const payload = z.object({ n: z.number() });

interface Handling {
  entry_id: string;
  phase: 'started' | 'done';
  pid: number;
  at: Date;
}

async function run(ctx: ScenarioContext, p: StreamFaultParams): Promise<ScenarioResult> {
  const q = ctx.recorder.q;
  // The streams suite's consumer process records a `started` and a `done` row per handling.
  await ctx.admin.query(
    `CREATE TABLE ${q}.handled (stream text NOT NULL, n int NOT NULL, entry_id text NOT NULL, phase text NOT NULL, pid int NOT NULL, token text, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
  );
  const redis: RedisServer = await startRedis({ appendfsync: 'always' });
  ctx.resources.defer('redis-server', () => redis.destroy());
  const injector = new FaultInjector(ctx.admin, ctx.random);
  const streams = { alo: defineStream({ name: `faults:alo:${ctx.schema}`, payload }), amo: defineStream({ name: `faults:amo:${ctx.schema}`, payload }) };
  const fleets = {
    alo: ctx.resources.fleet('test/streams/fixtures/consumer-process.ts', consumerEnv(ctx, redis, streams.alo.name, 'at-least-once', p)),
    amo: ctx.resources.fleet('test/streams/fixtures/consumer-process.ts', consumerEnv(ctx, redis, streams.amo.name, 'at-most-once', p)),
  };
  const client = new StreamClient({ redisUrl: redis.url, streams: Object.values(streams), connectTimeoutMs: 30_000 });
  ctx.resources.defer('the stream client', () => client.stop());
  const published = { alo: new Set<string>(), amo: new Set<string>() };
  let unsure = 0;
  const errors: string[] = [];
  const ready = (m: Member) => m.proc.waitForLine('"type":"ready"');
  const start = async (mode: 'alo' | 'amo', wait: boolean) => {
    const m = await fleets[mode].start({ wait: false });
    if (wait) await ready(m);
    return m;
  };
  for (const mode of ['alo', 'amo'] as const) for (let i = 0; i < p.consumers; i++) await start(mode, true);
  ctx.log(`9-streams: publishing ${p.messages} messages to each stream while consumers and Redis are killed`);

  const publishing = (async () => {
    const gap = p.windowMs / p.messages;
    const t0 = Date.now();
    for (let n = 0; n < p.messages; n++) {
      const due = t0 + n * gap - Date.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
      for (const mode of ['alo', 'amo'] as const) {
        // Until Redis acknowledges it. A connection lost mid-command may have added the entry
        // anyway: such an entry is consumed like any other but is not counted as published.
        await waitFor(
          `publish ${n} to ${mode}`,
          async () => {
            try {
              published[mode].add((await client.publish(streams[mode], { n })).id);
              return true;
            } catch (err) {
              if ((err as { code?: string }).code === 'NS_REDIS_UNAVAILABLE') {
                unsure++;
                return false;
              }
              throw err;
            }
          },
          { timeoutMs: p.timeoutMs, everyMs: 50 },
        );
      }
    }
  })();

  const actions: { atMs: number; run: () => Promise<unknown> }[] = [];
  for (let t = p.killEveryMs; t <= p.windowMs; t += p.killEveryMs) {
    actions.push({
      atMs: t,
      run: async () => {
        const mode = ctx.random.pick(['alo', 'amo'] as const);
        const live = fleets[mode].alive();
        if (live.length === 0) return;
        await injector.kill(ctx.random.pick(live));
        await start(mode, false);
      },
    });
  }
  for (let i = 1; i <= p.redisRestarts; i++) {
    actions.push({
      atMs: Math.round((p.windowMs * i) / (p.redisRestarts + 1)) + 300,
      run: async () => {
        const at = Date.now();
        await redis.restart();
        injector.record('redis-restart', null, 'redis-server SIGKILLed and restarted (appendfsync always)', at, Date.now());
      },
    });
  }
  await Promise.all([publishing, runTimeline(actions, (err) => errors.push(String(err)))]);

  // Everything delivered, nothing pending, every handler that started has ended.
  await waitFor(
    'both groups to have read and settled every entry',
    async () => {
      for (const def of Object.values(streams)) if (!(await settled(redis.url, def.name))) return false;
      const { rows } = await ctx.admin.query<{ open: number }>(
        `SELECT count(*)::int AS open FROM (SELECT entry_id, pid FROM ${q}.handled GROUP BY 1, 2 HAVING bool_and(phase = 'started')) s
         WHERE s.pid = ANY($1::int[])`,
        [[...fleets.alo.alive(), ...fleets.amo.alive()].map((m) => m.proc.pid)],
      );
      return rows[0]!.open === 0;
    },
    { timeoutMs: p.timeoutMs, everyMs: 250 },
  );
  await Promise.all([fleets.alo.stopAll(), fleets.amo.stopAll()]);
  await ctx.recorder.writeFaults(injector.seal());

  const handled = async (stream: string) => (await ctx.admin.query<Handling>(`SELECT entry_id, phase, pid, at FROM ${q}.handled WHERE stream = $1 ORDER BY at`, [stream])).rows;
  const deadLetters = (stream: string) => deadLettered(redis.url, `${stream}:dead-letter`);

  // At-least-once: every published entry was handled to the end; duplicates only where a fault hit.
  const alo = await handled(streams.alo.name);
  const aloDead = await deadLetters(streams.alo.name);
  const aloDone = new Set(alo.filter((h) => h.phase === 'done').map((h) => h.entry_id));
  const aloLost = [...published.alo].filter((id) => !aloDone.has(id) && !aloDead.has(id));
  const starts = new Map<string, Handling[]>();
  for (const h of alo.filter((x) => x.phase === 'started')) starts.set(h.entry_id, [...(starts.get(h.entry_id) ?? []), h]);
  let explained = 0;
  const unexplained: string[] = [];
  const recoveries: number[] = [];
  for (const [id, list] of starts) {
    for (let i = 0; i + 1 < list.length; i++) {
      const [a, b] = [list[i]!, list[i + 1]!];
      const fault = injector.log.find((f) => f.startedAt <= b.at.getTime() && f.endedAt >= a.at.getTime() && (f.kind === 'redis-restart' || (f.kind === 'sigkill' && f.targetPid === a.pid)));
      if (fault) {
        explained++;
        recoveries.push(b.at.getTime() - fault.startedAt);
      } else unexplained.push(`${id}: ${a.pid} then ${b.pid}`);
    }
  }

  // At-most-once: never handled twice; the rest is handled, dead-lettered, or lost in the documented window.
  const amo = await handled(streams.amo.name);
  const amoDead = await deadLetters(streams.amo.name);
  const amoStarts = new Map<string, number>();
  for (const h of amo.filter((x) => x.phase === 'started')) amoStarts.set(h.entry_id, (amoStarts.get(h.entry_id) ?? 0) + 1);
  const twice = [...amoStarts].filter(([, c]) => c > 1).map(([id]) => id);
  const amoDone = new Set(amo.filter((h) => h.phase === 'done').map((h) => h.entry_id));
  const killedPids = new Set(injector.log.filter((f) => f.kind === 'sigkill').map((f) => f.targetPid));
  const cutShort = [...published.amo].filter((id) => amoStarts.has(id) && !amoDone.has(id) && !amoDead.has(id));
  const cutShortByKill = cutShort.filter((id) => amo.some((h) => h.entry_id === id && killedPids.has(h.pid)));
  const neverStarted = [...published.amo].filter((id) => !amoStarts.has(id) && !amoDead.has(id));
  const amoKills = injector.log.filter((f) => f.kind === 'sigkill' && fleets.amo.byPid(f.targetPid ?? -1)).length;
  const invariants: Invariant[] = [
    { name: 'at-least-once: every published message was handled to the end (none lost)', holds: aloLost.length === 0, detail: aloLost.slice(0, 5).join(', ') },
    { name: 'at-least-once: every second handling is explained by a fault that hit the first', holds: unexplained.length === 0, detail: unexplained.slice(0, 5).join('; ') },
    { name: 'at-most-once: no message was handled twice', holds: twice.length === 0, detail: twice.slice(0, 5).join(', ') },
    {
      name: 'at-most-once: every message was handled, dead-lettered, or cut short by the kill of its consumer (the documented window)',
      holds: cutShort.length === cutShortByKill.length && neverStarted.length <= amoKills * p.concurrency,
      detail: `cut short ${cutShort.length} (by a kill ${cutShortByKill.length}); acked but never started ${neverStarted.length} (bound: ${amoKills} kills × ${p.concurrency})`,
    },
  ];
  return {
    id: '9-streams',
    title: 'stream consumers SIGKILLed and Redis SIGKILLed and restarted (appendfsync always)',
    faults: injector.counts(),
    jobs: published.alo.size + published.amo.size,
    unit: 'messages',
    lost: aloLost.length,
    duplicates: { explained, unexplained: unexplained.length + twice.length },
    maxRecoveryMs: recoveries.length ? Math.max(...recoveries) : null,
    recovery: 'longest time from a fault to the second handling of a message it interrupted (at-least-once)',
    invariants,
    figures: {
      'at-least-once: handled / dead-lettered / published': `${aloDone.size} / ${aloDead.size} / ${published.alo.size}`,
      'at-most-once: handled / dead-lettered / cut short / never started / published': `${amoDone.size} / ${amoDead.size} / ${cutShort.length} / ${neverStarted.length} / ${published.amo.size}`,
      'publishes that met a lost connection (retried; the entry may exist twice)': unsure,
      ...(errors.length ? { 'injector errors': errors.join('; ') } : {}),
    },
    durationMs: 0,
  };
}

/** Whether the group `g` of `stream` has read every entry and acked (or dead-lettered) all it read. */
async function settled(url: string, stream: string): Promise<boolean> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await redis.connect();
    const info = (await redis.xinfo('STREAM', stream)) as unknown[];
    const last = info[info.indexOf('last-generated-id') + 1];
    const groups = (await redis.xinfo('GROUPS', stream)) as unknown[][];
    const g = groups.find((row) => row[row.indexOf('name') + 1] === 'g');
    return !!g && Number(g[g.indexOf('pending') + 1]) === 0 && g[g.indexOf('last-delivered-id') + 1] === last;
  } finally {
    redis.disconnect();
  }
}

/** The source ids of the entries in a dead-letter stream. */
async function deadLettered(url: string, key: string): Promise<Set<string>> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  try {
    await redis.connect();
    const entries = (await redis.xrange(key, '-', '+')) as [string, string[]][];
    return new Set(entries.map(([, f]) => f[f.indexOf('source-id') + 1]!));
  } finally {
    redis.disconnect();
  }
}

function consumerEnv(ctx: ScenarioContext, redis: RedisServer, stream: string, delivery: string, p: StreamFaultParams): Record<string, string> {
  return {
    REDIS_URL: redis.url,
    DATABASE_URL: ctx.url,
    SCHEMA: ctx.schema,
    STREAM: stream,
    GROUP: 'g',
    DELIVERY: delivery,
    CLAIM_IDLE_MS: String(p.claimIdleMs),
    CONCURRENCY: String(p.concurrency),
    WORK_MS: '50',
  };
}

/** Scenario 9: stream consumers and Redis killed; at-least-once loses nothing, at-most-once never repeats. */
export const streamFaults: Scenario<StreamFaultParams> = {
  id: '9-streams',
  title: 'stream consumers SIGKILLed and Redis SIGKILLed and restarted (appendfsync always)',
  restartsServer: false,
  sizes: { full, short },
  run,
};
