import { DEFAULT_GRACE_MS, type CatchUpPolicy } from './define-schedule.js';
import { countTicks, prevTick, ticksBetween, type TickTiming } from './ticks.js';

/** What a ticker should do with a schedule's due ticks. */
export interface TickPlan {
  /** Ticks to fire now, oldest first (instants in ms). */
  fire: number[];
  /**
   * Missed ticks the catch-up policy drops: how many (counted up to {@link MISSED_COUNT_CAP}),
   * and the latest of them, which is recorded as one `skipped-catchup` tick standing for all.
   */
  skipped: { count: number; latest: number } | null;
  /** How many of `fire` were missed ticks that the policy runs late (the rest are on time). */
  late: number;
  /** The schedule's new last tick: every tick at or before it has been decided. Null when nothing is due. */
  advanceTo: number | null;
  /** More ticks are due than fit in one batch; plan again right after this one. */
  more: boolean;
}

/** Missed ticks are counted up to this many (a per-second schedule down for a day has 86,400). */
export const MISSED_COUNT_CAP = 10_000;

const NOTHING: TickPlan = { fire: [], late: 0, skipped: null, advanceTo: null, more: false };

/**
 * Plans the ticks due in (since, now] of one schedule. A tick is on time when it is handled within
 * the grace (explicit `graceMs`; by default 60 s and never once its successor is due) and always
 * fires. Older ticks were missed and follow the catch-up policy:
 * - `none`: all missed ticks are skipped;
 * - `latest`: the latest missed tick fires, older ones are skipped;
 * - `all` with a window: missed ticks at or after now − window fire, older ones are skipped.
 * At most `maxFire` ticks fire per plan; `more` says to plan again. Pure: no clock is read.
 */
export function planTicks(s: { readonly timing: TickTiming; readonly catchUp: CatchUpPolicy; readonly graceMs: number | undefined }, since: number, now: number, maxFire: number): TickPlan {
  const last = prevTick(s.timing, now);
  if (last === null || last <= since) return NOTHING;
  // Ticks at or after `onTime` are on time. By default only the latest due tick can be: every
  // earlier one already has a successor that is due.
  let onTime: number;
  if (s.graceMs !== undefined) onTime = now - s.graceMs;
  else onTime = now - last <= DEFAULT_GRACE_MS ? last : Infinity;

  let fireFrom = onTime; // ticks at or after this fire
  let extra: number | null = null; // a missed tick that fires anyway (policy latest)
  const cp = s.catchUp;
  if (cp.policy === 'all') fireFrom = Math.min(onTime, now - cp.windowMs);
  const missedTo = Math.min(fireFrom - 1, now); // missed-and-dropped ticks lie in (since, missedTo]
  let skipped: TickPlan['skipped'] = null;
  if (missedTo > since) {
    let latest = prevTick(s.timing, missedTo);
    if (latest !== null && latest > since && cp.policy === 'latest') {
      extra = latest;
      latest = prevTick(s.timing, latest - 1);
    }
    if (latest !== null && latest > since) {
      skipped = { count: countTicks(s.timing, since, latest, MISSED_COUNT_CAP), latest };
    }
  }
  const fire: number[] = extra === null ? [] : [extra];
  if (fireFrom <= now) {
    const from = Math.max(since, fireFrom - 1, extra ?? -Infinity);
    fire.push(...ticksBetween(s.timing, from, now, maxFire + 1 - fire.length));
  }
  const more = fire.length > maxFire;
  if (more) fire.length = maxFire;
  const late = fire.filter((t) => t < onTime).length;
  return { fire, late, skipped, advanceTo: more ? fire.at(-1)! : last, more };
}
