// Seed 003 (the operations worker) rebuilt on nightshift. Its src/workers/index.ts polled every
// 30 s, took an advisory lock for producers and FOR UPDATE SKIP LOCKED for delivery of
// operations_outbox rows with unique dedupe keys, retried up to five times. Here:
// - the outbox rows are jobs (`send-push`) with unique dedupe keys (scope `ever`: one notification
//   per key, whatever became of it), delivered by the claim's SKIP LOCKED, 5 attempts with backoff;
// - the producers (the session digest) are schedules: each tick runs exactly once in the fleet;
// - pack changes come from the SQL function queue_pack_change (schema.ts), debounced 30 minutes;
// - provider calls (OpenRouter, Expo) are bounded fleet-wide by flow-control limits, and timed out;
// - an Expo ticket-level error is a failed attempt; every push carries its job id as notification_id;
// - the media janitor is a daemon: exactly one owner in the fleet, failover when it dies;
// - production start-up fails closed without OPENROUTER_API_KEY (and ADMIN_PRIVATE_KEY_JWK when
//   encrypted messages are on); one shared pool with an explicit budget; bounded shutdown.
// The legacy one-hour partner-activity sender and the generic match sender are gone: the
// five-minute session digest sends one notification per response session (the seed's consolidation).
// `OPS_FAST=1` makes the cadences seconds (for the tests).
import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { defineConfig, defineDaemon, defineJob, defineQueue, defineSchedule, type Executor } from '../../src/index.js';

const env = process.env;
const schema = env.NS_SCHEMA ?? 'nightshift';
const q = `"${schema}"`;
const fast = env.OPS_FAST === '1';
const production = env.NODE_ENV === 'production';
const encrypted = env.ENCRYPTED_MESSAGES === 'true';
const int = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback);

const rows = async <T>(db: Executor, text: string, values: unknown[] = []) => (await db.query({ text, values })).rows as T[];

/** An outbox row: one push, delivered once per dedupe key; its job id is the client's notification_id. */
export const sendPush = defineJob({
  kind: 'send-push',
  queue: 'push',
  payload: z.object({ userId: z.string(), coupleId: z.string(), title: z.string(), body: z.string(), kind: z.string() }),
  dedupeScope: 'ever',
  maxAttempts: 5,
  backoff: { initialMs: fast ? 100 : 30_000, factor: 2, maxMs: fast ? 1_000 : 3_600_000, jitter: 0.1 },
  timeoutMs: 10_000,
  run: async (p, ctx) => {
    const [member] = await rows<{ push_token: string }>(ctx.db, `SELECT push_token FROM ${q}.ops_members WHERE couple_id = $1 AND user_id = $2`, [p.coupleId, p.userId]);
    if (!member) return; // left the couple since: nothing to send
    const res = await fetch(new URL('/--/api/v2/push/send', env.EXPO_URL ?? 'https://exp.host'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ to: member.push_token, title: p.title, body: p.body, data: { notification_id: ctx.jobId, kind: p.kind } }]),
      signal: ctx.signal,
    });
    if (!res.ok) throw new Error(`Expo answered ${res.status}`);
    const [ticket] = ((await res.json()) as { data: { status: string; message?: string; details?: { error?: string } }[] }).data;
    // Expo answers 200 for a batch whose messages failed: the ticket says so, and that is a failure.
    if (ticket?.status !== 'ok') throw new Error(`Expo ticket error ${ticket?.details?.error ?? ''}: ${ticket?.message ?? 'no ticket'}`);
  },
});

// One provider, one budget for the fleet: every pod's classifications share these slots.
const openRouterLimits = {
  concurrency: { limit: int('OPENROUTER_CONCURRENCY', 4), name: 'openrouter' },
  rateLimit: { limit: int('OPENROUTER_RATE_PER_MIN', 60), per: 60_000, name: 'openrouter-rate' },
};

/** Message classification (on by default), through OpenRouter. */
export const classifyMessage = defineJob({
  kind: 'classify-message',
  queue: 'classify',
  payload: z.object({ messageId: z.string() }),
  maxAttempts: 5,
  timeoutMs: 15_000,
  ...openRouterLimits,
  run: async ({ messageId }, ctx) => {
    const [m] = await rows<{ body: string; encrypted: boolean }>(ctx.db, `SELECT body, encrypted FROM ${q}.ops_messages WHERE id = $1`, [messageId]);
    if (!m) return;
    if (m.encrypted && !env.ADMIN_PRIVATE_KEY_JWK) throw new Error('an encrypted message needs ADMIN_PRIVATE_KEY_JWK to be classified');
    const res = await fetch(new URL('/api/v1/chat/completions', env.OPENROUTER_URL ?? 'https://openrouter.ai'), {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${env.OPENROUTER_API_KEY ?? ''}` },
      body: JSON.stringify({ model: 'classifier', messages: [{ role: 'user', content: m.body }] }),
      signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(10_000)]),
    });
    if (!res.ok) throw new Error(`OpenRouter answered ${res.status}`);
    const label = ((await res.json()) as { choices: { message: { content: string } }[] }).choices[0]?.message.content ?? 'unknown';
    await ctx.db.query({ text: `UPDATE ${q}.ops_messages SET label = $2 WHERE id = $1`, values: [messageId, label] });
  },
});

/** A pack change (from queue_pack_change, debounced 30 minutes): the partner hears of it once. */
export const packChange = defineJob({
  kind: 'pack-change',
  payload: z.object({ coupleId: z.string(), userId: z.string() }),
  maxAttempts: 5,
  // One couple's pack change at a time (and limit keys, as for the digest below).
  concurrency: { limit: 1, key: (p) => p.coupleId },
  run: async ({ coupleId, userId }, ctx) => {
    await ctx.transaction(async (tx) => {
      for (const p of await rows<{ user_id: string }>(tx, `SELECT user_id FROM ${q}.ops_members WHERE couple_id = $1 AND user_id <> $2`, [coupleId, userId])) {
        await ctx.enqueue(
          sendPush,
          { userId: p.user_id, coupleId, title: 'New packs', body: 'Your partner enabled a pack', kind: 'pack-change' },
          { db: tx, dedupeKey: `pack-change:${ctx.jobId}:${p.user_id}` },
        );
      }
    });
  },
});

/**
 * The five-minute session digest, the producer that replaced three: for every response session
 * with new responses, one push to each partner who did not respond — the match (both responded) is
 * in the same push, not a second one. Its dedupe key is the session and the recipient.
 */
export const sessionDigest = defineJob({
  kind: 'session-digest',
  payload: z.object({ at: z.string() }),
  maxAttempts: 5,
  // One digest at a time in the fleet. (It also gives the kind limit keys: on this base, a kind
  // without limits claimed beside limited kinds makes the limited claim fail — see the README.)
  concurrency: { limit: 1 },
  run: async (_p, ctx) => {
    await ctx.transaction(async (tx) => {
      // Taking the responses and marking them is one statement: a tick that ran twice would find none.
      const taken = await rows<{ session_id: string; couple_id: string; user_id: string }>(tx, `UPDATE ${q}.ops_responses SET digested = true WHERE NOT digested RETURNING session_id, couple_id, user_id`);
      const by = new Map<string, { couple_id: string; responders: string[] }>();
      for (const r of taken) {
        const s = by.get(r.session_id) ?? { couple_id: r.couple_id, responders: [] };
        s.responders.push(r.user_id);
        by.set(r.session_id, s);
      }
      const sessions = [...by].map(([session_id, s]) => ({ session_id, ...s }));
      for (const s of sessions) {
        const members = await rows<{ user_id: string }>(tx, `SELECT user_id FROM ${q}.ops_members WHERE couple_id = $1 ORDER BY user_id`, [s.couple_id]);
        const everyone = members.every((m) => s.responders.includes(m.user_id));
        for (const m of members) {
          await ctx.enqueue(
            sendPush,
            { userId: m.user_id, coupleId: s.couple_id, title: everyone ? "It's a match" : 'Your partner answered', body: `session ${s.session_id}`, kind: 'session-digest' },
            { db: tx, dedupeKey: `session-digest:${s.session_id}:${m.user_id}` },
          );
        }
      }
    });
  },
});

/** The filesystem MediaJanitor: deletes files under MEDIA_DIR that no row references. Idempotent. */
const mediaJanitor = defineDaemon({
  name: 'media-janitor',
  everyMs: fast ? 300 : 3_600_000,
  ttlMs: fast ? 1_500 : 30_000,
  run: async (ctx) => {
    const dir = env.MEDIA_DIR;
    if (!dir) return;
    const kept = new Set((await rows<{ path: string }>(ctx.db, `SELECT path FROM ${q}.ops_media`)).map((r) => r.path));
    let deleted = 0;
    for (const f of await readdir(dir)) {
      if (kept.has(f)) continue;
      await unlink(join(dir, f)).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err; // deleted by an overlapping owner during a rollout: fine
      });
      deleted++;
    }
    await ctx.transaction((tx) => tx.query({ text: `INSERT INTO ${q}.ops_janitor_runs (pid, token, deleted) VALUES ($1, $2, $3)`, values: [process.pid, ctx.fencingToken, deleted] }));
  },
});

const digestSchedule = defineSchedule({ name: 'session-digest', every: fast ? '1s' : '5m', job: sessionDigest, payload: (t) => ({ at: t.at.toISOString() }) });

export default defineConfig({
  database: {
    schema,
    // One shared pool per process, its size explicit: OPS_DB_POOL_MAX × replicas must fit the server.
    maxConnections: int('OPS_DB_POOL_MAX', 8),
    ...(env.OPS_REPLICAS ? { budget: { replicas: int('OPS_REPLICAS', 1) } } : {}),
  },
  jobs: [sendPush, classifyMessage, packChange, sessionDigest],
  queues: [defineQueue({ name: 'push', concurrency: { limit: int('EXPO_CONCURRENCY', 8) }, rateLimit: { limit: int('EXPO_RATE_PER_MIN', 600), per: 60_000 } })],
  schedules: [digestSchedule],
  daemons: [mediaJanitor],
  // Fail closed in production: classification is on by default and needs its key.
  requiredEnv: production ? ['OPENROUTER_API_KEY', ...(encrypted ? ['ADMIN_PRIVATE_KEY_JWK'] : [])] : [],
  roles: {
    // The API process enqueues only; with the worker service on, it hosts no janitor.
    api: {},
    'operations-worker': { queues: ['default', 'push', 'classify'], schedules: ['session-digest'], daemons: ['media-janitor'] },
  },
  // Bounded shutdown: running jobs get 10 s, then are handed back.
  worker: { pollIntervalMs: fast ? 200 : 30_000, shutdownGraceMs: 10_000, ...(fast ? { leaseMs: 2_000, heartbeatMs: 500, maintenanceIntervalMs: 250 } : {}) },
});
