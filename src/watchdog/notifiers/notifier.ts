import { NotifierError, type Issue } from '../../errors.js';
import { retryAfter } from '../../jobs/job-control.js';
import type { AlertNotification } from '../notification.js';

/** Where alert notifications go: a webhook, Slack, Telegram, e-mail (see docs/watchdog.md). */
export interface Notifier {
  /** `webhook`, `slack`, `telegram`, `email`, or your own. */
  readonly type: string;
  /** Unique among the config's notifiers; checks name it in `notify`. */
  readonly name: string;
  /**
   * Settings that were not given (an unset environment variable): the notifier is incomplete and a
   * process that delivers notifications refuses to start. Empty when complete.
   */
  readonly missing: readonly string[];
  /** Delivers one notification; throws (or returns a `retryAfter`) to have it retried. Never quotes a secret in what it throws. */
  send(notification: AlertNotification, signal: AbortSignal): Promise<unknown>;
  /** Type and name only: a notifier never prints its secrets. */
  toJSON(): { type: string; name: string };
}

/** Default time a delivery may take before it is abandoned (and retried). */
export const DEFAULT_NOTIFIER_TIMEOUT_MS = 10_000;
const NAME = /^[A-Za-z0-9_.:-]{1,64}$/;

/** Reads the common options (`name`, `timeoutMs`) and reports bad ones. */
export function commonOptions(o: Record<string, unknown>, type: string, issues: Issue[]): { name: string; timeoutMs: number } {
  let name = type;
  if (o.name !== undefined) {
    if (typeof o.name === 'string' && NAME.test(o.name)) name = o.name;
    else issues.push({ path: 'name', message: 'must be 1 to 64 letters, digits, _ . : -' });
  }
  let timeoutMs = DEFAULT_NOTIFIER_TIMEOUT_MS;
  if (o.timeoutMs !== undefined) {
    if (typeof o.timeoutMs === 'number' && Number.isInteger(o.timeoutMs) && o.timeoutMs >= 100 && o.timeoutMs <= 300_000) timeoutMs = o.timeoutMs;
    else issues.push({ path: 'timeoutMs', message: 'must be an integer from 100 to 300000 ms' });
  }
  return { name, timeoutMs };
}

/**
 * A setting that may come from an unset environment variable: undefined (or blank) is *missing* —
 * recorded, so the config loads but a delivering process refuses to start — anything else but a
 * non-blank string is an issue.
 */
export function secretOption(o: Record<string, unknown>, key: string, missing: string[], issues: Issue[]): string | undefined {
  const v = o[key];
  if (v === undefined || (typeof v === 'string' && v.trim() === '')) {
    missing.push(key);
    return undefined;
  }
  if (typeof v !== 'string') {
    issues.push({ path: key, message: `must be a string (from the environment, e.g. process.env.X), got ${typeof v}` });
    return undefined;
  }
  return v;
}

/** A URL setting: missing when unset; an issue when it is not http(s). Never quoted (a webhook URL is a secret). */
export function urlOption(o: Record<string, unknown>, key: string, missing: string[], issues: Issue[]): URL | undefined {
  const v = secretOption(o, key, missing, issues);
  if (v === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    issues.push({ path: key, message: 'is not a valid URL' });
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    issues.push({ path: key, message: `must be an http:// or https:// URL, got ${url.protocol}` });
    return undefined;
  }
  return url;
}

/** Rejects unknown option keys. */
export function knownKeys(o: Record<string, unknown>, keys: readonly string[], issues: Issue[], unknownKey: (k: string, known: readonly string[]) => Issue): void {
  for (const k of Object.keys(o)) if (!keys.includes(k)) issues.push(unknownKey(k, keys));
}

/**
 * POSTs a body and accepts any 2xx. A refusal, a timeout or another status throws NotifierError
 * naming the notifier and the host only (the URL may be the secret, as Slack's are); a 429 with
 * `Retry-After` becomes a `retryAfter` for that long (at most an hour).
 */
export async function post(
  who: { type: string; name: string },
  url: URL,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  signal: AbortSignal,
  describe?: (status: number, text: string) => string | undefined,
): Promise<unknown> {
  const label = `${who.type} "${who.name}"`;
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', body, headers, signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]), redirect: 'error' });
  } catch (err) {
    const cause = (err as { cause?: { code?: unknown } } | null)?.cause?.code;
    const why = (err as { name?: string } | null)?.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : typeof cause === 'string' ? cause : 'the request failed';
    throw new NotifierError(who.name, `${label} could not be reached at host ${url.host}: ${why}`);
  }
  const text = (await res.text().catch(() => '')).slice(0, 2_000);
  if (res.ok) return undefined;
  const detail =
    describe?.(res.status, text) ??
    text
      .replace(/[^\x20-\x7e]+/g, ' ')
      .trim()
      .slice(0, 200);
  if (res.status === 429) {
    const seconds = retryAfterSeconds(res.headers.get('retry-after'), text);
    if (seconds !== undefined) return retryAfter(Math.min(3_600_000, seconds * 1_000), `${label} asked to retry in ${seconds} s (429)`);
  }
  throw new NotifierError(who.name, `${label} at host ${url.host} answered ${res.status}${detail ? `: ${detail}` : ''}`);
}

/** Seconds to wait from a 429: the `Retry-After` header, or the Telegram Bot API's `parameters.retry_after`. */
function retryAfterSeconds(header: string | null, body: string): number | undefined {
  const fromHeader = Number(header);
  if (header !== null && Number.isFinite(fromHeader) && fromHeader > 0) return fromHeader;
  try {
    const v = (JSON.parse(body) as { parameters?: { retry_after?: unknown } }).parameters?.retry_after;
    return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : undefined;
  } catch {
    return undefined;
  }
}
