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
