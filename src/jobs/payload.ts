import { PayloadInvalidError, PayloadTooLargeError, type Issue } from '../errors.js';
import { issuePath, type PayloadSchema } from './standard-schema.js';

/** Default payload size limit: 1 MiB of JSON. */
export const DEFAULT_MAX_PAYLOAD_BYTES = 1_048_576;

/**
 * Validates a payload against its schema and serialises it to JSON for storage. Rejects what
 * PostgreSQL's jsonb could not store faithfully (NUL characters, lone surrogates), values JSON
 * would silently change (NaN, Infinity, undefined in arrays, Map, Set, functions, bigint), and
 * payloads over the size limit. The stored value is the validated input, so the worker can run
 * it through the same schema again.
 */
export async function serialisePayload(kind: string, schema: PayloadSchema, value: unknown, maxBytes: number): Promise<string> {
  await validated(kind, schema, value);
  return toJson(kind, value, maxBytes);
}

/** As {@link serialisePayload}, also returning the schema's output (what a limit's key function reads). */
export async function serialiseWithOutput(kind: string, schema: PayloadSchema, value: unknown, maxBytes: number): Promise<{ json: string; output: unknown }> {
  const output = await validated(kind, schema, value);
  return { json: toJson(kind, value, maxBytes), output };
}

/** Runs the schema; the output value, or NS_PAYLOAD_INVALID with a path per issue. */
async function validated(kind: string, schema: PayloadSchema, value: unknown): Promise<unknown> {
  let result = schema['~standard'].validate(value);
  if (result instanceof Promise) result = await result;
  if (result.issues) {
    throw new PayloadInvalidError(
      kind,
      result.issues.map((i) => ({ path: `payload${issuePath(i.path) ? `.${issuePath(i.path)}` : ''}`, message: i.message })),
    );
  }
  return result.value;
}

/** Serialises a value to JSON, rejecting what would not round-trip through jsonb. */
export function toJson(kind: string, value: unknown, maxBytes: number): string {
  const issues: Issue[] = [];
  let json: string | undefined;
  try {
    json = JSON.stringify(value, function replacer(this: unknown, key: string, v: unknown) {
      const original = (this as Record<string, unknown>)[key];
      const path = key === '' ? 'payload' : `payload…${key}`;
      if (typeof key === 'string' && key !== '' && !wellFormed(key)) issues.push({ path, message: 'property name has a NUL character or a lone surrogate' });
      switch (typeof v) {
        case 'string':
          if (!wellFormed(v)) issues.push({ path, message: 'string has a NUL character (\\u0000) or a lone surrogate, which PostgreSQL cannot store' });
          return v;
        case 'number':
          if (!Number.isFinite(v)) issues.push({ path, message: `${v} is not representable in JSON` });
          return v;
        case 'function':
        case 'symbol':
          issues.push({ path, message: `a ${typeof v} is not JSON` });
          return undefined;
        case 'undefined':
          if (Array.isArray(this)) issues.push({ path, message: 'undefined inside an array would become null' });
          return v;
        case 'object':
          if (v instanceof Map || v instanceof Set) issues.push({ path, message: `a ${v.constructor.name} would be stored as {}` });
          if (original instanceof Date && Number.isNaN(original.getTime())) issues.push({ path, message: 'invalid Date' });
          return v;
        default:
          return v;
      }
    });
  } catch (err) {
    issues.push({ path: 'payload', message: `cannot be serialised to JSON: ${err instanceof Error ? err.message : String(err)}` });
  }
  if (json === undefined && issues.length === 0) issues.push({ path: 'payload', message: 'is not a JSON value (undefined or a function)' });
  if (issues.length) throw new PayloadInvalidError(kind, issues.slice(0, 20));
  const text = json as string;
  // Byte length is at most 3 × UTF-16 length; only count precisely when it could matter.
  if (text.length * 3 > maxBytes) {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes > maxBytes) throw new PayloadTooLargeError(kind, bytes, maxBytes);
  }
  return text;
}

function wellFormed(s: string): boolean {
  return !s.includes('\u0000') && s.isWellFormed();
}

/** Parses a stored payload through the kind's schema before a run (jobs enqueued from SQL were never validated). */
export function parsePayload(kind: string, schema: PayloadSchema, stored: unknown): Promise<unknown> {
  return validated(kind, schema, stored);
}
