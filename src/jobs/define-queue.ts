import { ConfigError, unknownKey, type Issue } from '../errors.js';
import { resolveLimits, type ResolvedLimit } from './limits.js';
import { nameProblem } from './names.js';

/** The options of {@link defineQueue}. */
export interface QueueOptions {
  /** The queue's name (as in defineJob's `queue`). */
  name: string;
  /**
   * At most `limit` jobs of the queue running at once across the whole fleet, whatever their kind.
   * Not the per-process `worker.queues` concurrency, which bounds one process only. Default: none.
   */
  concurrency?: { limit: number };
  /** At most `limit` starts of the queue's jobs per `per` ms across the fleet. Default: none. */
  rateLimit?: { limit: number; per: number };
}

/** A queue's fleet-wide limits, as returned by {@link defineQueue}; listed in the config's `queues`. */
export interface QueueDefinition {
  readonly name: string;
  /** Its limits, with their stable names (`queue:<name>:c`, `queue:<name>:r`). */
  readonly limits: readonly ResolvedLimit[];
}

const KEYS = ['name', 'concurrency', 'rateLimit'];

/**
 * Declares a queue's fleet-wide limits: `defineQueue({ name: 'push', concurrency: { limit: 5 },
 * rateLimit: { limit: 600, per: 60_000 } })`. Every process that claims the queue must list it
 * (the config's `queues`). Invalid options throw NS_CONFIG_INVALID listing every problem.
 */
export function defineQueue(options: QueueOptions): QueueDefinition {
  const issues: Issue[] = [];
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  for (const key of Object.keys(o)) if (!KEYS.includes(key)) issues.push(unknownKey(key, KEYS));
  const p = nameProblem(o.name);
  if (p) issues.push({ path: 'name', message: p });
  for (const field of ['concurrency', 'rateLimit']) {
    if (Array.isArray(o[field])) issues.push({ path: field, message: 'a queue takes one limit of each type, not a list (put several limits on a job kind)' });
  }
  const limits = issues.length ? [] : resolveLimits(`queue:${String(o.name)}`, o, issues, false);
  if (limits.some((l) => l.name.startsWith('limit:'))) issues.push({ path: 'concurrency', message: "a queue's limits are named after the queue; drop name" });
  if (issues.length) throw new ConfigError(typeof o.name === 'string' ? `queue "${o.name}"` : 'queue definition', issues);
  return Object.freeze({ name: options.name, limits: Object.freeze(limits) });
}

/** Whether a value was made by {@link defineQueue}. */
export function isQueueDefinition(v: unknown): v is QueueDefinition {
  return typeof v === 'object' && v !== null && typeof (v as QueueDefinition).name === 'string' && Array.isArray((v as QueueDefinition).limits);
}
