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
  if (text === 'true' || text === 'false') return text === 'true';
  if (text === 'null') return null;
  if (/^-?\d+(\.\d+)?$/.test(text) && text.length < 16) return Number(text);
  return text;
}

function refuse(message: string): never {
  throw new OptionsInvalidError('job search', [{ path: 'q', message }]);
}

const FIELD = /payload\.([A-Za-z0-9_$-]+(?:\.[A-Za-z0-9_$-]+)*):/y;

/**
 * Splits a search into its terms: `payload.<path>:<value>`, the value up to the next space, or
 * in double quotes with its spaces (`\"` and `\\` inside stand for `"` and `\`).
 */
function terms(q: string): { path: string; value: unknown }[] {
  const out: { path: string; value: unknown }[] = [];
  let i = 0;
  for (;;) {
    while (i < q.length && /\s/.test(q[i]!)) i++;
    if (i >= q.length) return out;
    FIELD.lastIndex = i;
    const m = FIELD.exec(q);
    if (!m) {
      const word = q.slice(i).split(/\s/, 1)[0]!;
      refuse(`"${word.slice(0, 60)}" is not a payload filter; write payload.<field>:<value>, e.g. payload.orderId:o-1 (quote a value with spaces: payload.name:"two words")`);
    }
    i = FIELD.lastIndex;
    if (q[i] === '"') {
      let text = '';
      let j = i + 1;
      for (; j < q.length && q[j] !== '"'; j++) text += q[j] === '\\' && j + 1 < q.length ? q[++j] : q[j];
      if (j >= q.length) refuse(`the value of payload.${m[1]!.slice(0, 60)} opens a quote that is not closed; close it: payload.${m[1]!.slice(0, 60)}:"${text.slice(0, 60)}"`);
      i = j + 1;
      if (i < q.length && !/\s/.test(q[i]!)) refuse(`the quoted value of payload.${m[1]!.slice(0, 60)} is followed by "${q.slice(i, i + 20)}"; put a space between terms`);
      out.push({ path: m[1]!, value: text });
    } else {
      let j = i;
      while (j < q.length && !/\s/.test(q[j]!)) j++;
      if (j === i) refuse(`payload.${m[1]!.slice(0, 60)}: has no value; write payload.${m[1]!.slice(0, 60)}:<value>`);
      out.push({ path: m[1]!, value: value(q.slice(i, j)) });
      i = j;
    }
  }
}

/**
 * Parses `payload.orderId:o-1 payload.customer.id:c-9` into the JSON a payload must contain
 * (`{ orderId: 'o-1', customer: { id: 'c-9' } }`): every term must match. Numbers, true, false
 * and null match as such; a value in double quotes matches as text, spaces included
 * (`payload.code:"42"`, `payload.name:"two words"`). A quote left open, a field given twice or
 * given both a value and fields of its own is refused (NS_OPTIONS_INVALID), never searched for.
 */
export function parsePayloadQuery(q: string): Record<string, unknown> | undefined {
  const given = terms(q);
  if (given.length === 0) return undefined;
  const out: Record<string, unknown> = {};
  const seen: string[] = [];
  for (const { path: dotted, value: v } of given) {
    const path = dotted.split('.');
    // Plain data only: a key that names an object's prototype is refused, never followed.
    if (path.some((k) => k === '__proto__' || k === 'constructor' || k === 'prototype')) refuse(`"${dotted.slice(0, 60)}" is not a field name a search can use`);
    // One value per field: a payload field holds one value, so a second one could only match nothing.
    if (seen.includes(dotted)) refuse(`payload.${dotted.slice(0, 60)} is given twice; a search matches one value per field`);
    const clash = seen.find((other) => other.startsWith(`${dotted}.`) || dotted.startsWith(`${other}.`));
    if (clash !== undefined) refuse(`payload.${clash.slice(0, 60)} and payload.${dotted.slice(0, 60)} clash: a field cannot be both a value and hold fields`);
    seen.push(dotted);
    let at = out;
    for (const key of path.slice(0, -1)) at = (at[key] ??= {}) as Record<string, unknown>;
    at[path.at(-1)!] = v;
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
