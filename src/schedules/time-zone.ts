import { closest } from '../errors.js';

/**
 * Time-zone arithmetic for schedules: the UTC offset of a zone at an instant, and the instant a
 * local wall-clock time stands for under nightshift's DST rules. Built on `Intl` (the tz database
 * that ships with Node), so there is no zone data to keep up to date here.
 *
 * Local wall-clock times are handled as "naive" milliseconds: the local fields read as if they
 * were UTC (`Date.UTC(year, month, day, hour, minute, second)`), which makes calendar stepping
 * free of DST.
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface Zone {
  readonly name: string;
  readonly format: Intl.DateTimeFormat | undefined;
  /** Offsets of whole hours (key: hour number since the epoch) where the offset holds the whole hour. */
  readonly cache: Map<number, number>;
}

const zones = new Map<string, Zone>();

/** The canonical name of a time zone, or undefined when Intl does not know it. Case-insensitive, aliases resolve (US/Eastern → America/New_York). */
export function canonicalTimeZone(name: string): string | undefined {
  if (typeof name !== 'string' || name.length === 0 || name.length > 64) return undefined;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** Why a time-zone name is not acceptable (with a did-you-mean), or undefined when it is. */
export function timeZoneProblem(name: unknown): string | undefined {
  if (typeof name !== 'string') return `must be an IANA time-zone name such as "Europe/Berlin", got ${typeof name}`;
  if (canonicalTimeZone(name)) return undefined;
  const known = [...Intl.supportedValuesOf('timeZone'), 'UTC'];
  const best = closest(name, known);
  const hint = /^[+-]\d/.test(name)
    ? '; fixed offsets are written Etc/GMT-1 for UTC+1 (the sign is inverted by POSIX)'
    : best
      ? `; did you mean "${best}"?`
      : '; use a name from the IANA tz database such as "Europe/Berlin" or "UTC"';
  return `"${name.slice(0, 64)}" is not a time zone this Node.js knows${hint}`;
}

function zone(name: string): Zone {
  let z = zones.get(name);
  if (!z) {
    const canonical = canonicalTimeZone(name);
    if (!canonical) throw new RangeError(`unknown time zone "${name}"`);
    // Zones that never change their offset skip Intl altogether.
    const fixed = canonical === 'UTC' || canonical === 'Etc/UTC' || canonical === 'Etc/GMT';
    z = {
      name: canonical,
      format: fixed
        ? undefined
        : new Intl.DateTimeFormat('en-US', {
            timeZone: canonical,
            hourCycle: 'h23',
            year: 'numeric',
            month: 'numeric',
            day: 'numeric',
            hour: 'numeric',
            minute: 'numeric',
            second: 'numeric',
          }),
      cache: new Map(),
    };
    zones.set(name, z);
  }
  return z;
}

function exactOffset(z: Zone, ms: number): number {
  if (!z.format) return 0;
  const whole = Math.floor(ms / 1000) * 1000;
  const f: Record<string, number> = {};
  for (const p of z.format.formatToParts(whole)) if (p.type !== 'literal') f[p.type] = Number(p.value);
  // setUTCFullYear, unlike Date.UTC, takes years 0–99 literally.
  const naive = new Date(0);
  naive.setUTCFullYear(f.year!, f.month! - 1, f.day!);
  naive.setUTCHours(f.hour!, f.minute!, f.second!, 0);
  return naive.getTime() - whole;
}

/**
 * The zone's UTC offset in ms at an instant (local = UTC + offset). Formatting through Intl is
 * slow (~15 µs), so offsets are cached per whole hour in which they do not change: no zone has
 * two transitions within one hour, so equal offsets at both ends of an hour hold for all of it.
 */
export function offsetAt(tz: string, ms: number): number {
  const z = zone(tz);
  if (!z.format) return 0;
  const hour = Math.floor(ms / HOUR);
  const cached = z.cache.get(hour);
  if (cached !== undefined) return cached;
  const start = exactOffset(z, hour * HOUR);
  if (start === exactOffset(z, hour * HOUR + HOUR - 1000)) {
    if (z.cache.size > 50_000) z.cache.clear();
    z.cache.set(hour, start);
    return start;
  }
  return exactOffset(z, ms);
}

/** The local wall-clock time of an instant, as naive ms. */
export function toLocal(tz: string, ms: number): number {
  return ms + offsetAt(tz, ms);
}

/**
 * The instant a local wall-clock time stands for, by nightshift's DST rules:
 * - a time that exists once: that instant;
 * - a time that occurs twice (the clock went back): its first occurrence;
 * - a time that does not exist (the clock jumped forward over it): the first instant after the
 *   jump, which is the transition itself.
 * The mapping never decreases as the local time grows, so ticks keep their order.
 */
export function localToInstant(tz: string, local: number): number {
  // At most one transition lies within a day of any local time (true of every zone in use), so
  // the offsets a day either side are the only candidates.
  const before = offsetAt(tz, local - DAY);
  const after = offsetAt(tz, local + DAY);
  let best: number | undefined;
  for (const o of before === after ? [before] : [before, after]) {
    const candidate = local - o;
    if (offsetAt(tz, candidate) === o && (best === undefined || candidate < best)) best = candidate;
  }
  if (best !== undefined) return best;
  // In a gap: the transition lies between the instant the local time would be under the later
  // offset and the one it would be under the earlier offset.
  return transitionIn(tz, local - Math.max(before, after), local - Math.min(before, after));
}

/** The first whole second in (lo, hi] whose offset differs from the offset at lo. */
function transitionIn(tz: string, lo: number, hi: number): number {
  const from = offsetAt(tz, lo);
  let a = Math.floor(lo / 1000);
  let b = Math.ceil(hi / 1000);
  while (b - a > 1) {
    const mid = Math.floor((a + b) / 2);
    if (offsetAt(tz, mid * 1000) === from) a = mid;
    else b = mid;
  }
  return b * 1000;
}

/** The local date and time of an instant in a zone, as `YYYY-MM-DD` and `HH:MM:SS`. */
export function localParts(tz: string, ms: number): { date: string; time: string } {
  const iso = new Date(toLocal(tz, ms)).toISOString();
  return { date: iso.slice(0, 10), time: iso.slice(11, 19) };
}
