import type { JobDefinition } from '../jobs/define-job.js';
import { defaultKeys, type ResolvedLimit } from '../jobs/limits.js';

/** What the limited claim of one queue needs (see LimitQueries.claim); undefined when nothing it claims is limited. */
export interface LimitPlan {
  /** Every limit the queue's claim may take a slot of, sorted. */
  names: string[];
  /** Kind → the keys of its jobs that carry none. */
  defaults: Record<string, string[]>;
  /** The queue's own limits. */
  queueKeys: string[];
  /** Whether a rate limit is among them (its window counts a start at the claim: nothing is claimed ahead). */
  rate: boolean;
}

/**
 * The limits a claim of `queue` for `kinds` enforces: the kinds' own (a kind's limits hold in
 * whatever queue its jobs are) and the queue's. Undefined when there are none, so the queue keeps
 * the plain claim statement and pays nothing for flow control.
 */
export function limitPlan(kinds: readonly JobDefinition[], queueLimits: readonly ResolvedLimit[]): LimitPlan | undefined {
  const names = new Set<string>();
  let rate = queueLimits.some((l) => l.type === 'rate');
  const defaults: Record<string, string[]> = {};
  for (const def of kinds) {
    const limits = def.limits ?? [];
    if (limits.length === 0) continue;
    for (const l of limits) names.add(l.name);
    rate ||= limits.some((l) => l.type === 'rate');
    defaults[def.kind] = defaultKeys(limits);
  }
  for (const l of queueLimits) names.add(l.name);
  if (names.size === 0) return undefined;
  return { names: [...names].sort(), defaults, queueKeys: queueLimits.map((l) => l.name), rate };
}
