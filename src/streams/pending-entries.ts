import type { ConsumerScope, InFlightEntry } from './consumer-scope.js';
import { deadLetter, startedSetKey } from './dead-letter.js';
import { recoverAbandoned, streamFields } from './entry-handler.js';
import { errorText } from './redis-connection.js';
import { DELETE_IDLE_CONSUMER, HAND_BACK, TOUCH_PENDING } from './redis-scripts.js';
import { parseEntries, type StreamEntry } from './stream-entry.js';

/**
 * The consumer group's pending entries list (PEL): entries delivered and not yet acked. These
 * functions take over what dead consumers left, keep in-flight entries fresh, and hand entries back.
 */

/** Creates the group at id 0 with MKSTREAM (the backlog is delivered once); BUSYGROUP means it exists. True when it was created now. */
export async function ensureGroup(scope: ConsumerScope, recreated: boolean): Promise<boolean> {
  const { def } = scope;
  try {
    await scope.conn.redis.call('XGROUP', 'CREATE', def.stream.name, def.group, '0', 'MKSTREAM');
  } catch (err) {
    if (errorText(err).startsWith('BUSYGROUP')) return false;
    throw err;
  }
  scope.events.emit({ type: 'stream.group-created', stream: def.stream.name, group: def.group, recreated });
  return true;
}

/** Whether an error says the stream or group does not exist (deleted, or lost with a Redis restart). */
export function isNoGroup(err: unknown): boolean {
  return errorText(err).startsWith('NOGROUP');
}

/** Whether an error says the server has no XAUTOCLAIM (Redis < 6.2, or the command renamed away). */
export function isUnknownCommand(err: unknown): boolean {
  return /unknown command/i.test(errorText(err));
}

/** An entry taken over from the PEL, with its delivery count (this delivery included). */
export interface ClaimedEntry {
  readonly entry: StreamEntry;
  readonly deliveries: number;
}

/**
 * Takes over up to `count` entries idle for `claimIdleMs` or more (XAUTOCLAIM from `cursor`), and
 * reads their delivery counts. Returns them and the cursor to continue from next time.
 */
export async function claimIdle(scope: ConsumerScope, cursor: string, count: number): Promise<{ claimed: ClaimedEntry[]; cursor: string }> {
  const { def } = scope;
  const reply = (await scope.conn.redis.call('XAUTOCLAIM', def.stream.name, def.group, scope.consumer, def.claimIdleMs, cursor, 'COUNT', count)) as unknown[];
  const next = typeof reply[0] === 'string' ? reply[0] : '0-0';
  const entries = parseEntries(reply[1]);
  if (entries.length === 0) return { claimed: [], cursor: next };
  const counts = await deliveryCounts(scope, entries);
  return { claimed: entries.map((entry) => ({ entry, deliveries: counts.get(entry.id) ?? 1 })), cursor: next };
}

async function deliveryCounts(scope: ConsumerScope, entries: StreamEntry[]): Promise<Map<string, number>> {
  const { def } = scope;
  // One exact-range XPENDING per entry; sent together, they travel as one pipeline.
  const rows = await Promise.all(entries.map((e) => scope.conn.redis.call('XPENDING', def.stream.name, def.group, e.id, e.id, 1) as Promise<unknown[][]>));
  const counts = new Map<string, number>();
  for (const r of rows) if (r[0]) counts.set(String(r[0][0]), Number(r[0][3]));
  return counts;
}

/**
 * At-least-once: entries delivered more than `maxDeliveries` times never got an ack or a recorded
 * failure — their consumers died while handling them (a message that crashes its consumer). They
 * are dead-lettered instead of handled again. Returns the entries that may still be handled.
 */
export async function dropUndeliverable(scope: ConsumerScope, claimed: ClaimedEntry[]): Promise<ClaimedEntry[]> {
  const keep: ClaimedEntry[] = [];
  for (const c of claimed) {
    if (c.deliveries <= scope.def.maxDeliveries) keep.push(c);
    else {
      await deadLetter(
        scope,
        c.entry,
        c.deliveries - 1,
        'undeliverable',
        `delivered ${c.deliveries - 1} times without an ack or a recorded failure (maxDeliveries ${scope.def.maxDeliveries}): the consumers died or lost their connection while handling it`,
        true,
      );
    }
  }
  return keep;
}

/**
 * At-most-once: an entry pending longer than `claimIdleMs` was read by a consumer that died (or
 * lost its connection) — before its handler started, or inside it (it is in the started set). It
 * is never handed to a handler now — that could run it twice — but recorded in the dead-letter
 * stream as abandoned; one whose handler started goes through `onAbandoned` first, and stays
 * pending (tried again next sweep) while that fails. Returns the cursor to continue from and how
 * many were recorded.
 */
export async function sweepAbandoned(scope: ConsumerScope, cursor: string): Promise<{ cursor: string; count: number }> {
  const { def } = scope;
  const reply = (await scope.conn.redis.call('XAUTOCLAIM', def.stream.name, def.group, scope.consumer, def.claimIdleMs, cursor, 'COUNT', 100)) as unknown[];
  const next = typeof reply[0] === 'string' ? reply[0] : '0-0';
  let count = 0;
  for (const entry of parseEntries(reply[1])) {
    if (entry.fields === null) {
      // Deleted while pending (Redis 6.2 still returns it): nothing to record, only the pending record to clear.
      await scope.conn.redis.call('XACK', def.stream.name, def.group, entry.id);
      await scope.conn.redis.call('HDEL', startedSetKey(def), entry.id);
      continue;
    }
    const startedBy = (await scope.conn.redis.call('HGET', startedSetKey(def), entry.id)) as string | null;
    let error: string;
    if (startedBy === null) {
      error = `read by a consumer that did not start handling it within claimIdleMs (${def.claimIdleMs} ms): it died or lost its connection before handling it; at-most-once entries are never handled again`;
    } else {
      const recovered = def.onAbandoned ? await recoverAbandoned(scope, entry) : false;
      if (def.onAbandoned && !recovered) continue;
      error =
        `its handler started on consumer ${startedBy} and did not finish within claimIdleMs (${def.claimIdleMs} ms) of its last sign of life: the process died or lost Redis inside the handler; ` +
        (recovered ? 'recovered by onAbandoned' : 'no onAbandoned hook: recover it by hand');
    }
    if (await deadLetter(scope, entry, 1, 'abandoned', error, true)) count++;
  }
  return { cursor: next, count };
}

/** Resets the idle time of entries being handled, so a slow handler's entry is not taken over. Returns the ids still owned. */
export async function touchInFlight(scope: ConsumerScope, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const owned = (await TOUCH_PENDING.run(scope.conn.redis, [scope.def.stream.name], [scope.def.group, scope.consumer, ...ids])) as string[];
  return new Set(owned);
}

/** Hands unfinished at-least-once entries back: claimable at once, their interrupted delivery not counted. Returns how many. */
export async function handBack(scope: ConsumerScope, recs: InFlightEntry[]): Promise<number> {
  if (recs.length === 0) return 0;
  const args: (string | number)[] = [scope.def.group, scope.consumer, scope.def.claimIdleMs];
  for (const r of recs) args.push(r.entry.id, Math.max(0, r.deliveries - 1));
  const n = Number(await HAND_BACK.run(scope.conn.redis, [scope.def.stream.name], args));
  if (n > 0) scope.events.emit({ type: 'stream.handed-back', ...streamFields(scope), count: n });
  return n;
}

/** Removes this process's consumer from the group when it holds no pending entries (a clean stop leaves no ghost). */
export async function leaveGroup(scope: ConsumerScope): Promise<boolean> {
  return Number(await DELETE_IDLE_CONSUMER.run(scope.conn.redis, [scope.def.stream.name], [scope.def.group, scope.consumer])) === 1;
}

/**
 * Removes consumers of crashed processes: idle for longer than `idleMs` with no pending entries.
 * A live consumer reads every few seconds, so its idle time stays short; and one removed by
 * mistake is recreated by its next read, losing nothing (it had nothing pending).
 */
export async function pruneDeadConsumers(scope: ConsumerScope, idleMs: number): Promise<number> {
  const { def } = scope;
  const rows = (await scope.conn.redis.call('XINFO', 'CONSUMERS', def.stream.name, def.group)) as unknown[][];
  let removed = 0;
  for (const row of rows) {
    const info = pairs(row);
    const name = String(info.get('name'));
    if (name === scope.consumer || Number(info.get('pending')) > 0 || Number(info.get('idle')) < idleMs) continue;
    const gone = Number(await DELETE_IDLE_CONSUMER.run(scope.conn.redis, [def.stream.name], [def.group, name]));
    removed += gone;
  }
  return removed;
}

/** Turns a flat `[k, v, k, v, …]` reply into a map. */
export function pairs(row: unknown[]): Map<string, unknown> {
  const m = new Map<string, unknown>();
  for (let i = 0; i + 1 < row.length; i += 2) m.set(String(row[i]), row[i + 1]);
  return m;
}
