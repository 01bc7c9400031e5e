import { UsageError } from './exit-codes.js';

/** Parses an integer flag value, or fails with a usage error naming the flag. */
export function intFlag(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value.trim())) throw new UsageError(`--${name} must be an integer, got "${value}"`);
  return Number(value);
}

/** Parses a JSON flag value (a payload), or fails with a usage error showing where. */
export function jsonFlag(name: string, value: string | undefined): unknown {
  if (value === undefined) return undefined;
  try {
    return JSON.parse(value) as unknown;
  } catch (err) {
    throw new UsageError(`--${name} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`, `quote it for the shell, e.g. --${name} '{"userId": 42}'`);
  }
}

/** Splits a comma-separated list flag. */
export function listFlag(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return items.length ? items : undefined;
}
