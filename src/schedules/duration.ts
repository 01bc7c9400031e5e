/** Units a duration string may use, in ms. */
const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION = /^(\d+(?:ms|s|m|h|d))+$/;
const PART = /(\d+)(ms|s|m|h|d)/g;

/**
 * Reads a duration: a number of milliseconds, or a string of whole numbers with units, largest
 * first or not (`'90s'`, `'2m'`, `'1h30m'`, `'1d'`). Returns the problem instead when it is not one.
 */
export function parseDuration(value: unknown): { ms: number } | { problem: string } {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || !Number.isInteger(value) || value < 0) {
      return { problem: `must be a whole, non-negative number of milliseconds, got ${String(value)}` };
    }
    return { ms: value };
  }
  if (typeof value === 'string') {
    const s = value.trim();
    if (DURATION.test(s)) {
      let ms = 0;
      for (const m of s.matchAll(PART)) ms += Number(m[1]) * UNITS[m[2]!]!;
      if (Number.isSafeInteger(ms)) return { ms };
    }
    return { problem: `"${value.slice(0, 40)}" is not a duration: write ms as a number, or a string like '30s', '2m', '1h30m', '1d'` };
  }
  return { problem: `must be a number of milliseconds or a string like '2m', got ${value === null ? 'null' : typeof value}` };
}

/** Formats ms as the shortest duration string (`120000` → `'2m'`). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
    ['ms', 1],
  ] as const) {
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  return out;
}
