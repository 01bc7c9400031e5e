import { unknownKey, type Issue } from '../errors.js';

/** The finished states a retention names (held and abandoned jobs wait for an operator and are never pruned). */
export const RETENTION_STATES: readonly string[] = Object.freeze(['completed', 'discarded', 'cancelled', 'expired']);

/** The longest retention accepted: 100 years, in ms. */
export const MAX_RETENTION_MS = 100 * 365 * 86_400_000;

function given(value: unknown): string {
  if (typeof value === 'string') return `"${value.slice(0, 40)}"`;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}

/**
 * What is wrong with a retention (the client's `retention`, defineJob's, `prune()`'s argument): an
 * object of finished states, each a whole number of ms ≥ 0 (up to 100 years) or false (kept for
 * ever). Each issue's path starts with `path` (`retention.completed`), and says what was given.
 * One rule for the three, so a value the client accepts is one its pruning can apply.
 */
export function retentionIssues(value: unknown, path: string): Issue[] {
  const at = (state: string) => (path ? `${path}.${state}` : state);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [{ path: path || 'retention', message: `must be an object of finished states (${RETENTION_STATES.join(', ')}), each ms to keep them or false, e.g. { completed: 86_400_000 }; got ${given(value)}` }];
  }
  const issues: Issue[] = [];
  for (const [state, ms] of Object.entries(value)) {
    if (!RETENTION_STATES.includes(state)) issues.push(unknownKey(at(state), RETENTION_STATES.map(at)));
    else if (ms !== false && ms !== undefined && !(Number.isInteger(ms) && (ms as number) >= 0 && (ms as number) <= MAX_RETENTION_MS)) {
      issues.push({ path: at(state), message: `must be a whole number of milliseconds ≥ 0 (up to 100 years), or false to keep them; got ${given(ms)}` });
    }
  }
  return issues;
}
