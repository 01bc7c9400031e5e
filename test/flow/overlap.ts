/** The most intervals open at one instant (an end at the same instant as a start does not overlap it). */
export function maxOverlap(runs: readonly { start: number; end: number }[]): number {
  const points = runs.flatMap((r) => [
    { at: r.start, d: 1 },
    { at: r.end, d: -1 },
  ]);
  points.sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let most = 0;
  for (const p of points) {
    open += p.d;
    most = Math.max(most, open);
  }
  return most;
}

/** The most starts in any half-open window [t, t + perMs) of the given length. */
export function startsInWindow(starts: readonly number[], perMs: number): number {
  const s = [...starts].sort((a, b) => a - b);
  let most = 0;
  let lo = 0;
  for (let hi = 0; hi < s.length; hi++) {
    while (s[hi]! - s[lo]! >= perMs) lo++;
    most = Math.max(most, hi - lo + 1);
  }
  return most;
}
