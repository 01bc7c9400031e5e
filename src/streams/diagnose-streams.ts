import type { Delivery } from '../jobs/define-job.js';
import { startedSetKey } from './dead-letter.js';
import type { ConsumerDefinition } from './define-consumer.js';
import type { StreamDefinition } from './define-stream.js';
import { pairs } from './pending-entries.js';
import { errorText, type RedisConnection } from './redis-connection.js';
import { entryTimeMs } from './stream-entry.js';

/** What to diagnose: the streams and consumers known from their definitions (never found with KEYS). */
export interface DiagnoseOptions {
  /** Streams to report (the streams of `consumers` are reported too). */
  streams?: readonly StreamDefinition[];
  /** Consumers whose groups are expected to exist; a missing one reads as "consumer never started". */
  consumers?: readonly ConsumerDefinition[];
  /** Entries waiting unread for longer than this mean nobody is reading the group. Default 30 000 ms. */
  stalledAfterMs?: number;
}

/**
 * The state of a group, worst first:
 * - `never-started`: a consumer is defined for it, but the group does not exist — nothing ever read the stream;
 * - `not-reading`: the group exists, but entries have waited unread for longer than `stalledAfterMs`;
 * - `abandoned`: at-most-once entries whose handler started on a consumer that has shown no sign of
 *   life for longer than `claimIdleMs` — half-done effects waiting for `onAbandoned` (or a human);
 * - `stuck-pending`: entries were delivered and not acked for longer than `claimIdleMs`;
 * - `ok`: none of the above.
 *
 * Whether a consumer is alive is judged by its effect (entries get read), not by its idle time:
 * before Redis 7.2 a consumer blocked on an empty stream is never "seen", however alive it is.
 */
export type GroupStatus = 'never-started' | 'not-reading' | 'abandoned' | 'stuck-pending' | 'ok';

/** One consumer of a group, as Redis knows it. */
export interface ConsumerDiagnosis {
  readonly name: string;
  /** Entries delivered to it and not acked. */
  readonly pending: number;
  /** Since it last received or claimed an entry (Redis's `idle`). */
  readonly idleMs: number;
}

/** One consumer group of a stream. */
export interface GroupDiagnosis {
  readonly group: string;
  /** Whether a consumer definition names this group (false: a group created by something else). */
  readonly defined: boolean;
  readonly exists: boolean;
  readonly delivery: Delivery | null;
  readonly singleton: boolean | null;
  readonly consumers: readonly ConsumerDiagnosis[];
  /** Entries delivered and not acked. */
  readonly pending: number;
  readonly oldestPendingId: string | null;
  /** Age of the oldest pending entry, from its id. */
  readonly oldestPendingAgeMs: number | null;
  /** Since the oldest pending entry was last delivered. */
  readonly oldestPendingIdleMs: number | null;
  /** Entries not yet delivered to the group; null when Redis cannot tell (before 7.0, or after deletions). */
  readonly lag: number | null;
  /** Age of the oldest entry not yet delivered to the group (null: none waits). */
  readonly oldestUnreadAgeMs: number | null;
  readonly lastDeliveredId: string | null;
  /** At-most-once: entries whose handler is running (or was, on a process that died). */
  readonly started: number;
  /** At-most-once: of those, the ones idle longer than `claimIdleMs` — abandoned inside their handler, not yet recovered. */
  readonly abandoned: number;
  /** Every status that applies, worst first (`['ok']` when none does). */
  readonly statuses: readonly GroupStatus[];
  /** The worst of `statuses`. */
  readonly status: GroupStatus;
  /** One line for humans per status, joined with "; ", in the words of the symptom it explains. */
  readonly statusText: string;
}

/** One stream. */
export interface StreamDiagnosis {
  readonly stream: string;
  readonly exists: boolean;
  readonly length: number;
  readonly lastEntryId: string | null;
  readonly lastEntryAgeMs: number | null;
  /** Entries in the stream's dead-letter stream(s). */
  readonly deadLetterCount: number;
  readonly deadLetterStreams: readonly { readonly stream: string; readonly length: number }[];
  readonly groups: readonly GroupDiagnosis[];
}

/** The diagnosis of every known stream. */
export interface StreamsDiagnosis {
  /** When it was taken, Unix ms by Redis's clock. */
  readonly at: number;
  readonly redisVersion: string;
  readonly streams: readonly StreamDiagnosis[];
}

/**
 * Reads, for each known stream, its length, groups, consumers, pending entries and their age, lag
 * and dead-letter count, and says in one line per group what is wrong — the seed's symptom table
 * (`XLEN`, `XINFO GROUPS`, `XPENDING`) done by the tool. Uses only per-key commands, never KEYS.
 */
export async function diagnoseWith(conn: RedisConnection, options: DiagnoseOptions = {}): Promise<StreamsDiagnosis> {
  const redis = conn.redis;
  const stalledAfterMs = options.stalledAfterMs ?? 30_000;
  const [sec, usec] = (await redis.call('TIME')) as [string, string];
  const now = Number(sec) * 1_000 + Math.floor(Number(usec) / 1_000);
  const version = /redis_version:([^\r\n]+)/.exec(String(await redis.call('INFO', 'server')))?.[1] ?? 'unknown';

  const names = new Set<string>();
  for (const s of options.streams ?? []) names.add(s.name);
  for (const c of options.consumers ?? []) names.add(c.stream.name);

  const streams: StreamDiagnosis[] = [];
  for (const name of names) {
    const defs = (options.consumers ?? []).filter((c) => c.stream.name === name);
    streams.push(await diagnoseStream(conn, name, defs, now, stalledAfterMs));
  }
  return { at: now, redisVersion: version, streams };
}

async function diagnoseStream(conn: RedisConnection, name: string, defs: ConsumerDefinition[], now: number, stalledAfterMs: number): Promise<StreamDiagnosis> {
  const redis = conn.redis;
  let info: Map<string, unknown> | undefined;
  try {
    info = pairs((await redis.call('XINFO', 'STREAM', name)) as unknown[]);
  } catch (err) {
    if (!/no such key/i.test(errorText(err))) throw err;
  }
  const dlqNames = [...new Set(defs.length ? defs.map((d) => d.deadLetterStream) : [`${name}:dead-letter`])];
  const deadLetterStreams = await Promise.all(dlqNames.map(async (s) => ({ stream: s, length: Number(await redis.call('XLEN', s)) })));
  const length = Number(info?.get('length') ?? 0);
  const lastEntryId = info ? (firstEntryId(info.get('last-entry')) ?? null) : null;

  const rawGroups = info ? ((await redis.call('XINFO', 'GROUPS', name)) as unknown[][]).map(pairs) : [];
  const groupNames = new Set([...defs.map((d) => d.group), ...rawGroups.map((g) => String(g.get('name')))]);
  const groups: GroupDiagnosis[] = [];
  for (const group of groupNames) {
    const def = defs.find((d) => d.group === group);
    const raw = rawGroups.find((g) => String(g.get('name')) === group);
    groups.push(raw ? await diagnoseGroup(conn, name, group, raw, def, now, stalledAfterMs, length) : neverStarted(name, group, def!, length));
  }
  return {
    stream: name,
    exists: info !== undefined,
    length,
    lastEntryId,
    lastEntryAgeMs: lastEntryId ? Math.max(0, now - entryTimeMs(lastEntryId)) : null,
    deadLetterCount: deadLetterStreams.reduce((n, d) => n + d.length, 0),
    deadLetterStreams,
    groups,
  };
}

function neverStarted(stream: string, group: string, def: ConsumerDefinition, length: number): GroupDiagnosis {
  return {
    group,
    defined: true,
    exists: false,
    delivery: def.delivery,
    singleton: def.singleton,
    consumers: [],
    pending: 0,
    oldestPendingId: null,
    oldestPendingAgeMs: null,
    oldestPendingIdleMs: null,
    lag: null,
    oldestUnreadAgeMs: null,
    lastDeliveredId: null,
    started: 0,
    abandoned: 0,
    statuses: ['never-started'],
    status: 'never-started',
    statusText: `consumer never started: group "${group}" does not exist on "${stream}"${length ? ` — ${length} entries wait and nothing reads them` : ''}`,
  };
}

async function diagnoseGroup(
  conn: RedisConnection,
  stream: string,
  group: string,
  raw: Map<string, unknown>,
  def: ConsumerDefinition | undefined,
  now: number,
  stalledAfterMs: number,
  length: number,
): Promise<GroupDiagnosis> {
  const redis = conn.redis;
  const consumers = ((await redis.call('XINFO', 'CONSUMERS', stream, group)) as unknown[][]).map((row) => {
    const c = pairs(row);
    return { name: String(c.get('name')), pending: Number(c.get('pending') ?? 0), idleMs: Number(c.get('idle') ?? 0) };
  });
  const pending = Number(raw.get('pending') ?? 0);
  let oldestPendingId: string | null = null;
  let oldestPendingIdleMs: number | null = null;
  if (pending > 0) {
    const first = ((await redis.call('XPENDING', stream, group, '-', '+', 1)) as unknown[][])[0];
    if (first) {
      oldestPendingId = String(first[0]);
      oldestPendingIdleMs = Number(first[2]);
    }
  }
  const lastDeliveredId = raw.get('last-delivered-id') === undefined ? null : String(raw.get('last-delivered-id'));
  const lagRaw = raw.get('lag');
  const lag = lagRaw === null || lagRaw === undefined ? (length === 0 ? 0 : null) : Number(lagRaw);
  // The first entry after the group's cursor: how long the oldest unread entry has waited.
  let oldestUnreadAgeMs: number | null = null;
  if (lag !== 0 && lastDeliveredId) {
    const next = parseFirstId(await redis.call('XRANGE', stream, `(${lastDeliveredId}`, '+', 'COUNT', 1));
    if (next) oldestUnreadAgeMs = Math.max(0, now - entryTimeMs(next));
  }
  const claimIdleMs = def?.claimIdleMs ?? 60_000;

  const { started, abandoned } = def?.delivery === 'at-most-once' ? await abandonedEntries(conn, stream, group, def, claimIdleMs) : { started: 0, abandoned: 0 };

  // Every status that applies, worst first: a silent reader must not hide entries stuck or abandoned.
  const found: [GroupStatus, string][] = [];
  const lastRead = consumers.length ? Math.min(...consumers.map((c) => c.idleMs)) : undefined;
  if (oldestUnreadAgeMs !== null && oldestUnreadAgeMs > stalledAfterMs) {
    found.push([
      'not-reading',
      `no consumer is reading: ${lag ?? 'some'} entries wait, the oldest for ${seconds(oldestUnreadAgeMs)}` +
        (lastRead === undefined ? '; no consumer ever joined the group' : `; a consumer last received an entry ${seconds(lastRead)} ago`),
    ]);
  }
  if (abandoned > 0) {
    found.push([
      'abandoned',
      `${abandoned} entr${abandoned === 1 ? 'y was' : 'ies were'} abandoned inside the handler (its consumer died after starting it): ` +
        (def?.onAbandoned ? 'a live consumer runs onAbandoned within claimIdleMs' : 'no onAbandoned hook, a live consumer dead-letters them as abandoned — recover by hand'),
    ]);
  }
  if (oldestPendingIdleMs !== null && oldestPendingIdleMs > claimIdleMs) {
    const why =
      def?.delivery === 'at-most-once'
        ? 'read by a consumer that died before finishing; a live consumer records them as abandoned'
        : 'delivered and not acked; a live consumer takes them over with XAUTOCLAIM (on Redis < 6.2 nothing does)';
    found.push(['stuck-pending', `${pending} entries pending, the oldest idle for ${seconds(oldestPendingIdleMs)} (claimIdleMs ${seconds(claimIdleMs)}): ${why}`]);
  }
  if (found.length === 0) found.push(['ok', `ok: ${pending} pending, lag ${lag ?? 'unknown'}, ${consumers.length} consumer${consumers.length === 1 ? '' : 's'} known`]);
  const statuses = found.map(([s]) => s);
  const status = statuses[0]!;
  const statusText = found.map(([, t]) => t).join('; ');

  return {
    group,
    defined: def !== undefined,
    exists: true,
    delivery: def?.delivery ?? null,
    singleton: def?.singleton ?? null,
    consumers,
    pending,
    oldestPendingId,
    oldestPendingAgeMs: oldestPendingId ? Math.max(0, now - entryTimeMs(oldestPendingId)) : null,
    oldestPendingIdleMs,
    lag,
    oldestUnreadAgeMs,
    lastDeliveredId,
    started,
    abandoned,
    statuses,
    status,
    statusText,
  };
}

/** At-most-once: entries in the group's started set, and those of them idle longer than `claimIdleMs` (their consumer died inside the handler). */
async function abandonedEntries(conn: RedisConnection, stream: string, group: string, def: ConsumerDefinition, claimIdleMs: number): Promise<{ started: number; abandoned: number }> {
  const key = startedSetKey(def);
  const started = Number(await conn.redis.call('HLEN', key));
  if (started === 0) return { started, abandoned: 0 };
  // Bounded: the first 1000 idle entries are enough to say "some are abandoned" and roughly how many.
  const idle = (await conn.redis.call('XPENDING', stream, group, 'IDLE', claimIdleMs, '-', '+', 1_000)) as unknown[][];
  if (idle.length === 0) return { started, abandoned: 0 };
  const owners = (await conn.redis.call('HMGET', key, ...idle.map((p) => String(p[0])))) as (string | null)[];
  return { started, abandoned: owners.filter((o) => o !== null).length };
}

function parseFirstId(reply: unknown): string | undefined {
  return Array.isArray(reply) && Array.isArray(reply[0]) && typeof reply[0][0] === 'string' ? reply[0][0] : undefined;
}

function firstEntryId(entry: unknown): string | undefined {
  return Array.isArray(entry) && typeof entry[0] === 'string' ? entry[0] : undefined;
}

function seconds(ms: number): string {
  if (ms < 1_000) return `${ms} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1_000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}
