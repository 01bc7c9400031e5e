import { ConfigError, unknownKey, type Issue } from '../errors.js';
import { nameProblem } from '../jobs/names.js';
import { DEFAULT_MAX_PAYLOAD_BYTES } from '../jobs/payload.js';
import { isPayloadSchema, type PayloadSchema } from '../jobs/standard-schema.js';

/** The options of {@link defineStream}. */
export interface StreamOptions<S extends PayloadSchema> {
  /** The Redis key of the stream, e.g. `polymarket:order`: 1 to 128 characters of letters, digits, _ . : - */
  name: string;
  /** A Standard Schema (zod 4, valibot, …) for the `payload` field; publish validates against it, consumers parse with it. */
  payload: S;
  /** Largest payload, in bytes of JSON. Default 1 MiB (as for jobs). */
  maxPayloadBytes?: number;
  /**
   * Trims the stream to about this many entries on every publish (`XADD … MAXLEN ~ n`). Default: no
   * trimming. Trimming deletes the oldest entries whether or not every group has read them.
   */
  maxLength?: number;
}

/** A stream, as returned by {@link defineStream}: the contract shared by its producers and consumers. */
export interface StreamDefinition<S extends PayloadSchema = PayloadSchema> {
  readonly name: string;
  readonly schema: S;
  readonly maxPayloadBytes: number;
  readonly maxLength: number | undefined;
}

const KEYS = ['name', 'payload', 'maxPayloadBytes', 'maxLength'];

/**
 * Defines a stream: its Redis key and the schema of its `payload` field. Entries are written as
 * `XADD <name> * payload <json>` (plus trace fields), and read by field name, never by position.
 * Invalid options throw NS_CONFIG_INVALID listing every problem.
 */
export function defineStream<S extends PayloadSchema>(options: StreamOptions<S>): StreamDefinition<S> {
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  const issues: Issue[] = [];
  for (const key of Object.keys(o)) if (!KEYS.includes(key)) issues.push(unknownKey(key, KEYS));
  const p = nameProblem(o.name);
  if (p) issues.push({ path: 'name', message: p });
  if (!isPayloadSchema(o.payload)) issues.push({ path: 'payload', message: 'must be a Standard Schema such as z.object({...}) from zod 4' });
  if (o.maxPayloadBytes !== undefined && !isInt(o.maxPayloadBytes, 1, 512 * 1_048_576)) {
    issues.push({ path: 'maxPayloadBytes', message: 'must be an integer from 1 to 536870912 (Redis strings hold at most 512 MiB)' });
  }
  if (o.maxLength !== undefined && !isInt(o.maxLength, 1, Number.MAX_SAFE_INTEGER)) {
    issues.push({ path: 'maxLength', message: 'must be a positive integer (entries kept), or left out for no trimming' });
  }
  if (issues.length) throw new ConfigError(typeof o.name === 'string' ? `stream "${o.name}"` : 'stream definition', issues);
  return Object.freeze({
    name: options.name,
    schema: options.payload,
    maxPayloadBytes: options.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD_BYTES,
    maxLength: options.maxLength,
  });
}

/** Whether a value was made by {@link defineStream}. */
export function isStreamDefinition(value: unknown): value is StreamDefinition {
  const v = value as StreamDefinition | null;
  return typeof v === 'object' && v !== null && typeof v.name === 'string' && isPayloadSchema(v.schema) && typeof v.maxPayloadBytes === 'number';
}

/** Whether `v` is an integer from `min` to `max`. */
export function isInt(v: unknown, min: number, max: number): boolean {
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
}
