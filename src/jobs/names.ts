/** Names of kinds and queues: 1 to 128 characters of letters, digits, _ . : - */
export const NAME_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;
const NAME_RULE = 'use 1 to 128 characters of letters, digits, _ . : -';

/** Checks a name (kind, queue); returns the problem or undefined. */
export function nameProblem(value: unknown): string | undefined {
  if (typeof value !== 'string') return `must be a string, got ${typeof value}`;
  if (!NAME_PATTERN.test(value)) return `"${value.length > 60 ? `${value.slice(0, 60)}…` : value}" is not allowed: ${NAME_RULE}`;
  return undefined;
}
