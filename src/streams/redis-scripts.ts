import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

/**
 * The Lua scripts of the consumers. Each one does in a single atomic step what would otherwise
 * race with another consumer: checking who owns a pending entry and then acting on it.
 */
export class RedisScript {
  private readonly sha: string;

  constructor(private readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  /** Runs the script by its hash, loading it when the server does not know it (first use, or after a restart). */
  async run(redis: Redis, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.call('EVALSHA', this.sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.call('EVAL', this.lua, keys.length, ...keys, ...args);
    }
  }
}

/**
 * Moves an entry to the dead-letter stream: XACK it and, only if that ack took it out of the
 * pending list (so no other consumer acked or dead-lettered it meanwhile), XADD the record. The
 * entry leaves the group's started set with its ack.
 * KEYS: stream, dead-letter stream, started set. ARGV: group, id, requireAck ('1'|'0'), field, value, …
 * Returns 1 when the record was written.
 */
export const DEAD_LETTER = new RedisScript(`
local acked = redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[3], ARGV[2])
if acked == 0 and ARGV[3] == '1' then return 0 end
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('XADD', KEYS[2], '*', unpack(fields))
return 1
`);

/**
 * Keeps entries this consumer is handling from being taken over: resets their idle time (XCLAIM to
 * itself with JUSTID, which does not count as a delivery) — but only for entries it still owns, so
 * an entry another consumer already took over is not snatched back.
 * KEYS: stream. ARGV: group, consumer, id, … Returns the ids still owned.
 */
export const TOUCH_PENDING = new RedisScript(`
local owned = {}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    owned[#owned + 1] = ARGV[i]
  end
end
return owned
`);

/**
 * Hands entries back on shutdown: marks them idle for `claimIdleMs` so a live consumer's next
 * XAUTOCLAIM takes them at once, and restores their delivery count (an interrupted delivery is not
 * a failed one). Only entries this consumer still owns.
 * KEYS: stream. ARGV: group, consumer, idleMs, id, retrycount, id, retrycount, … Returns the count.
 */
export const HAND_BACK = new RedisScript(`
local n = 0
for i = 4, #ARGV, 2 do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'IDLE', ARGV[3], 'RETRYCOUNT', ARGV[i + 1], 'JUSTID')
    n = n + 1
  end
end
return n
`);

/**
 * Removes a consumer from its group if it has no pending entries (deleting a consumer drops its
 * pending entries, which would lose them). KEYS: stream. ARGV: group, consumer. Returns 1 if removed.
 */
export const DELETE_IDLE_CONSUMER = new RedisScript(`
local p = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #p > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1
`);

/**
 * At-most-once: marks a pending entry's handler as started — only if this consumer still owns it
 * (a sweep may have recorded it as abandoned meanwhile) — and resets its idle time, in one step. The
 * entry stays pending while the handler runs (kept fresh like an at-least-once one), so a process
 * that dies inside the handler leaves a trace: pending, and in the started set.
 * KEYS: stream, started set. ARGV: group, consumer, id. Returns 1 when the handler may run.
 */
export const START_HANDLER = new RedisScript(`
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if not p[1] or p[1][2] ~= ARGV[2] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')
redis.call('HSET', KEYS[2], ARGV[3], ARGV[2])
return 1
`);

/** At-most-once: the handler finished — XACK and leave the started set. KEYS: stream, started set. ARGV: group, id. */
export const FINISH_HANDLER = new RedisScript(`
redis.call('HDEL', KEYS[2], ARGV[2])
return redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
`);
