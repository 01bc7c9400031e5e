import { context, propagation, ROOT_CONTEXT, type Context } from '@opentelemetry/api';

/** The field holding an entry's JSON payload (the seed's layout: `XADD key * payload <json>`). */
export const PAYLOAD_FIELD = 'payload';

/** One entry as read from a stream: its id and its fields by name (null fields: the entry was deleted). */
export interface StreamEntry {
  readonly id: string;
  readonly fields: ReadonlyMap<string, string> | null;
}

/** The Unix ms part of an entry id `<unix-ms>-<seq>`: when Redis added the entry (for ids it generated). */
export function entryTimeMs(id: string): number {
  const dash = id.indexOf('-');
  return Number(dash < 0 ? id : id.slice(0, dash));
}

/** Builds the XADD field list: the payload, then the trace context fields of the active span (if any). */
export function entryFields(json: string): string[] {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  const fields = [PAYLOAD_FIELD, json];
  for (const [k, v] of Object.entries(carrier)) {
    // The payload field is ours; a propagator never legitimately names a field that way.
    if (k !== PAYLOAD_FIELD && typeof v === 'string') fields.push(k, v);
  }
  return fields;
}

/** The trace context an entry carries in its own fields (W3C `traceparent`/`tracestate` by default). */
export function entryContext(entry: StreamEntry): Context {
  if (!entry.fields || entry.fields.size <= 1) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, entry.fields, {
    get: (carrier, key) => carrier.get(key),
    keys: (carrier) => [...carrier.keys()].filter((k) => k !== PAYLOAD_FIELD),
  });
}

/** Parses the reply of XREADGROUP / XRANGE / XAUTOCLAIM entry lists: `[[id, [f, v, …] | null], …]`. */
export function parseEntries(raw: unknown): StreamEntry[] {
  if (!Array.isArray(raw)) return [];
  const out: StreamEntry[] = [];
  for (const item of raw) {
    if (!Array.isArray(item) || typeof item[0] !== 'string') continue;
    const list = item[1];
    if (!Array.isArray(list)) {
      out.push({ id: item[0], fields: null });
      continue;
    }
    const fields = new Map<string, string>();
    // Fields are read by name: the first occurrence of a name wins, position does not matter.
    for (let i = 0; i + 1 < list.length; i += 2) {
      const k = String(list[i]);
      if (!fields.has(k)) fields.set(k, String(list[i + 1]));
    }
    out.push({ id: item[0], fields });
  }
  return out;
}

/** Parses an XREADGROUP reply for one stream (null on timeout). */
export function parseReadReply(raw: unknown): StreamEntry[] {
  if (!Array.isArray(raw) || raw.length === 0) return [];
  const first = raw[0] as unknown[];
  return parseEntries(first?.[1]);
}
