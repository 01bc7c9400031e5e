/** Did-you-mean suggestions for names and option keys. */
import type { Issue } from './base.js';

/** Levenshtein distance, for did-you-mean suggestions. */
export function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/** The candidate closest to `word`, when it is close enough to be a likely typo (or one extends the other). */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  const extended = candidates.find((c) => lower.length >= 3 && (c.toLowerCase().startsWith(lower) || lower.startsWith(c.toLowerCase())));
  if (extended) return extended;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

/**
 * The hint for a name that is not among `known`: a did-you-mean with the list, the list alone, or
 * — when nothing is known — how to define one.
 */
export function knownHint(name: string, known: readonly string[], plural: string, howToDefine: string, adjective = 'known'): string {
  const list = `${plural}: ${known.join(', ')}`;
  const suggestion = closest(name, known);
  if (suggestion) return `did you mean "${suggestion}"? ${adjective[0]!.toUpperCase()}${adjective.slice(1)} ${list}`;
  return known.length ? `${adjective} ${list}` : howToDefine;
}

/** An issue for an unknown option key, with a did-you-mean when one is close. */
export function unknownKey(key: string, known: readonly string[]): Issue {
  const best = closest(
    key.split('.').at(-1) ?? key,
    known.map((k) => k.split('.').at(-1) ?? k),
  );
  return {
    path: key,
    message: best ? `unknown option; did you mean "${best}"?` : `unknown option; known options: ${known.join(', ')}`,
  };
}
