import { JOB_STATES, OptionsInvalidError, type JobState, type SearchJobsOptions } from '../../index.js';

/** The jobs page's filter, parsed from its query string (so a link to a search can be shared). */
export interface JobsFilter {
  search: SearchJobsOptions;
  /** The query string's own words, to fill the form again. */
  text: { state: string; queue: string; kind: string; q: string; since: string };
}

const SINCE: Record<string, number> = { '15m': 900_000, '1h': 3_600_000, '6h': 21_600_000, '1d': 86_400_000, '7d': 604_800_000 };

/** The choices of the time filter. */
export const SINCE_CHOICES = Object.keys(SINCE);

function value(text: string): unknown {
  if (/^".*"$/.test(text)) return text.slice(1, -1);
  if (text === 'true' || text === 'false') return text === 'true';
  if (text === 'null') return null;
  if (/^-?\d+(\.\d+)?$/.test(text) && text.length < 16) return Number(text);
  return text;
}

/**
 * Parses `payload.orderId:o-1 payload.customer.id:c-9` into the JSON a payload must contain
 * (`{ orderId: 'o-1', customer: { id: 'c-9' } }`). Numbers, true, false and null match as such;
 * quote a value to match it as text (`payload.code:"42"`).
 */
export function parsePayloadQuery(q: string): Record<string, unknown> | undefined {
  const tokens = q.trim().split(/\s+/).filter(Boolean);
  if (tokens.length === 0) return undefined;
  const out: Record<string, unknown> = {};
  for (const token of tokens) {
    const m = /^payload\.([A-Za-z0-9_$-]+(?:\.[A-Za-z0-9_$-]+)*):(.+)$/.exec(token);
    if (!m) {
      throw new OptionsInvalidError('job search', [{ path: 'q', message: `"${token.slice(0, 60)}" is not a payload filter; write payload.<field>:<value>, e.g. payload.orderId:o-1` }]);
    }
    const path = m[1]!.split('.');
    // Plain data only: a key that names an object's prototype is refused, never followed.
    if (path.some((k) => k === '__proto__' || k === 'constructor' || k === 'prototype')) {
      throw new OptionsInvalidError('job search', [{ path: 'q', message: `"${m[1]!.slice(0, 60)}" is not a field name a search can use` }]);
    }
    let at = out;
    for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[path.at(-1)!] = value(m[2]!);
  }
  return out;
}

/** The filter of a jobs page's query string. */
export function jobsFilter(query: URLSearchParams, now = Date.now()): JobsFilter {
  const text = { state: query.get('state') ?? '', queue: query.get('queue') ?? '', kind: query.get('kind') ?? '', q: query.get('q') ?? '', since: query.get('since') ?? '' };
  const states = text.state ? (text.state.split(',') as JobState[]) : undefined;
  if (states?.some((s) => !JOB_STATES.includes(s))) throw new OptionsInvalidError('job search', [{ path: 'state', message: `states are ${JOB_STATES.join(', ')}` }]);
  if (text.since && !SINCE[text.since]) throw new OptionsInvalidError('job search', [{ path: 'since', message: `must be one of ${SINCE_CHOICES.join(', ')}` }]);
  const payload = parsePayloadQuery(text.q);
  const search: SearchJobsOptions = {
    ...(states ? { state: states } : {}),
    ...(text.queue ? { queue: text.queue } : {}),
    ...(text.kind ? { kind: text.kind } : {}),
    ...(payload ? { payload } : {}),
    ...(text.since ? { createdAfter: new Date(now - SINCE[text.since]!) } : {}),
  };
  return { search, text };
}
