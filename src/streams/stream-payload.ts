import { PayloadInvalidError, PayloadTooLargeError } from '../errors.js';
import { parsePayload, serialisePayload } from '../jobs/payload.js';
import type { StreamDefinition } from './define-stream.js';

// Streams share the jobs' payload rules (schema, JSON that round-trips, a size limit), and so
// their errors; these say "stream", defineStream and publish, not "kind", defineJob and PostgreSQL.

/** The same error, worded for a stream: `invalid payload for stream "x"`, a hint about defineStream. */
export function asStreamPayloadError(err: unknown, stream: string): unknown {
  if (err instanceof PayloadInvalidError) {
    const issues = err.issues.map((i) => ({ ...i, message: i.message.replace(/, which PostgreSQL cannot store$/, '') }));
    return new PayloadInvalidError(stream, issues, 'stream');
  }
  if (err instanceof PayloadTooLargeError) return new PayloadTooLargeError(stream, err.bytes, err.limit, 'stream');
  return err;
}

/** Validates a payload against the stream's schema and serialises it (NS_PAYLOAD_INVALID / NS_PAYLOAD_TOO_LARGE for the stream). */
export async function serialiseStreamPayload(stream: StreamDefinition, payload: unknown): Promise<string> {
  try {
    return await serialisePayload(stream.name, stream.schema, payload, stream.maxPayloadBytes);
  } catch (err) {
    throw asStreamPayloadError(err, stream.name);
  }
}

/** Runs a read entry's payload through the stream's schema (NS_PAYLOAD_INVALID for the stream). */
export async function parseStreamPayload(stream: StreamDefinition, value: unknown): Promise<unknown> {
  try {
    return await parsePayload(stream.name, stream.schema, value);
  } catch (err) {
    throw asStreamPayloadError(err, stream.name);
  }
}
