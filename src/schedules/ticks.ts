import { Cron } from 'croner';
import { localToInstant, offsetAt } from './time-zone.js';

/**
 * Pure tick arithmetic: when a schedule fires. No clock is read here — every function takes the
 * instants it works from — so the rules are tested with fixed instants.
 *
 * Cron schedules are evaluated in two steps. croner enumerates the local wall-clock times that
 * match the expression, on a calendar without DST (it runs at UTC offset 0 over "naive" local
 * times); {@link localToInstant} then maps each local time to an instant by nightshift's DST rules
 * (a time skipped by the clock fires once at the first instant after the jump; a repeated time
 * fires once, on its first occurrence). croner's own time-zone mode is not used because its DST
 * rules differ: for expressions with a wildcard or step in the second, minute or hour field it
 * drops ticks in a skipped hour and fires both occurrences of a repeated hour (see
 * docs/schedules.md, "DST").
 *
 * Several local times can map to one instant (every time in a skipped hour maps to the jump), and
 * instants are the unit of a tick, so such ticks merge into one.
 */

/** When a schedule fires: a cron expression in a zone, or a fixed interval aligned to the Unix epoch. */
export type TickTiming = { readonly kind: 'cron'; readonly expression: string; readonly tz: string; readonly cron: Cron } | { readonly kind: 'every'; readonly everyMs: number; readonly tz: string };

/** Local times scanned at most per call, far above any real case (a repeated hour of a per-second expression is 3,600). */
const MAX_SCAN = 1_000_000;

/** Compiles a cron expression of 5 fields (minute first) or 6 (second first); returns croner's complaint when it is not one. */
export function compileCron(expression: string): { cron: Cron } | { problem: string } {
  const fields = expression.trim().split(/\s+/).length;
  if (!expression.trim().startsWith('@') && fields !== 5 && fields !== 6) {
    return { problem: `it has ${fields} field${fields === 1 ? '' : 's'}; write 5 (minute hour day-of-month month day-of-week) or 6 (second first)` };
  }
  try {
    // Offset 0 makes croner a pure calendar over naive local times; domAndDow stays off, so a
    // restricted day of month and day of week combine with OR, as in Vixie cron.
    return { cron: new Cron(expression, { utcOffset: 0, mode: '5-or-6-parts' }) };
  } catch (err) {
    return { problem: (err instanceof Error ? err.message : String(err)).replace(/^CronPattern: /, '') };
  }
}

function cronNextLocal(cron: Cron, local: number): number | null {
  return cron.nextRun(new Date(local))?.getTime() ?? null;
}

function cronPrevLocal(cron: Cron, local: number): number | null {
  return cron.previousRuns(1, new Date(local))[0]?.getTime() ?? null;
}

/** The first tick strictly after `after` (ms since the epoch), or null when there is none. */
export function nextTick(timing: TickTiming, after: number): number | null {
  if (timing.kind === 'every') return Math.floor(after / timing.everyMs) * timing.everyMs + timing.everyMs;
  const { cron, tz } = timing;
  // Every local time up to the local time of `after` maps to an instant at or before `after`
  // (the mapping never decreases), so the search starts just past it. Only inside a repeated hour
  // (when `after` lies in its second pass) does it step over local times already fired.
  let local = cronNextLocal(cron, after + offsetAt(tz, after));
  for (let i = 0; local !== null; i++) {
    const at = localToInstant(tz, local);
    if (at > after) return at;
    if (i > MAX_SCAN) throw new Error(`tick search for "${timing.expression}" did not converge`);
    local = cronNextLocal(cron, local);
  }
  return null;
}

/** The last tick at or before `atOrBefore`, or null when there is none. */
export function prevTick(timing: TickTiming, atOrBefore: number): number | null {
  if (timing.kind === 'every') return Math.floor(atOrBefore / timing.everyMs) * timing.everyMs;
  const { cron, tz } = timing;
  // A local time later than this bound cannot map to an instant at or before `atOrBefore`: the
  // only offsets in force within hours before it are the offset now and the one before a
  // transition in those hours (first occurrences of a repeated hour use the earlier one).
  const bound = Math.floor(atOrBefore / 1000) * 1000 + Math.max(offsetAt(tz, atOrBefore), offsetAt(tz, atOrBefore - 3 * 3_600_000));
  let local = cronPrevLocal(cron, bound + 1);
  for (let i = 0; local !== null; i++) {
    const at = localToInstant(tz, local);
    if (at <= atOrBefore) return at;
    if (i > MAX_SCAN) throw new Error(`tick search for "${timing.expression}" did not converge`);
    local = cronPrevLocal(cron, local);
  }
  return null;
}

/** The ticks in (from, to], oldest first, at most `max` of them. */
export function ticksBetween(timing: TickTiming, from: number, to: number, max: number): number[] {
  const out: number[] = [];
  let t = nextTick(timing, from);
  while (t !== null && t <= to && out.length < max) {
    out.push(t);
    t = nextTick(timing, t);
  }
  return out;
}

/** How many ticks lie in (from, to], counting no further than `cap`. */
export function countTicks(timing: TickTiming, from: number, to: number, cap: number): number {
  if (to <= from) return 0;
  if (timing.kind === 'every') return Math.min(cap, Math.floor(to / timing.everyMs) - Math.floor(from / timing.everyMs));
  return ticksBetween(timing, from, to, cap).length;
}
