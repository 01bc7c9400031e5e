import { createHmac, timingSafeEqual } from 'node:crypto';
import { ConfigError, unknownKey, type Issue } from '../../errors.js';
import type { AlertNotification } from '../notification.js';
import { commonOptions, knownKeys, post, secretOption, urlOption, type Notifier } from './notifier.js';

/** Options of {@link webhookNotifier}. */
export interface WebhookNotifierOptions {
  /** Where to POST (keep it in the environment). Undefined: the notifier is incomplete (see docs/watchdog.md). */
  url: string | undefined;
  /** The HMAC-SHA256 key the receiver verifies the `nightshift-signature` header with. */
  secret: string | undefined;
  /** Default `'webhook'`. */
  name?: string;
  /** More request headers (an API key of the receiver's). */
  headers?: Record<string, string>;
  /** Default 10 000 ms. */
  timeoutMs?: number;
}

/** The header carrying the signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const SIGNATURE_HEADER = 'nightshift-signature';
/** The header carrying the notification's stable id. */
export const NOTIFICATION_ID_HEADER = 'nightshift-notification-id';

/** The signature header's value for `body` at `unixSeconds`. */
export function signWebhook(secret: string, body: string, unixSeconds: number): string {
  const t = String(Math.floor(unixSeconds));
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

/**
 * Whether a webhook request is nightshift's: `header` (the `nightshift-signature` header) signs
 * `body` (the raw request body, as received) with `secret`, and was made within `toleranceMs`
 * (default 5 minutes) of `now`, so a recorded request cannot be replayed later.
 */
export function verifyWebhookSignature(o: { secret: string; body: string; header: string | undefined | null; toleranceMs?: number; now?: number }): boolean {
  if (typeof o.header !== 'string') return false;
  const parts = new Map(o.header.split(',').map((p) => [p.slice(0, p.indexOf('=')).trim(), p.slice(p.indexOf('=') + 1).trim()] as const));
  const t = parts.get('t') ?? '';
  if (!/^\d{1,12}$/.test(t) || Math.abs((o.now ?? Date.now()) - Number(t) * 1000) > (o.toleranceMs ?? 300_000)) return false;
  const expected = createHmac('sha256', o.secret).update(`${t}.${o.body}`).digest();
  const given = Buffer.from(parts.get('v1') ?? '', 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const KEYS = ['url', 'secret', 'name', 'headers', 'timeoutMs'];

/**
 * A webhook: each notification is POSTed as JSON (the {@link AlertNotification}), signed with
 * HMAC-SHA256 (`nightshift-signature`), its stable id in `nightshift-notification-id`. Any 2xx is
 * delivered; anything else is retried with back-off.
 */
export function webhookNotifier(options: WebhookNotifierOptions): Notifier {
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  const issues: Issue[] = [];
  knownKeys(o, KEYS, issues, unknownKey);
  const { name, timeoutMs } = commonOptions(o, 'webhook', issues);
  const missing: string[] = [];
  const url = urlOption(o, 'url', missing, issues);
  const secret = secretOption(o, 'secret', missing, issues);
  const headers: Record<string, string> = {};
  if (o.headers !== undefined) {
    if (typeof o.headers !== 'object' || o.headers === null || Object.values(o.headers).some((v) => typeof v !== 'string')) {
      issues.push({ path: 'headers', message: 'must be an object of header names to string values' });
    } else Object.assign(headers, o.headers);
  }
  if (issues.length) throw new ConfigError(`webhook notifier "${name}"`, issues);
  return Object.freeze({
    type: 'webhook',
    name,
    missing: Object.freeze(missing),
    send: (n: AlertNotification, signal: AbortSignal) => {
      const body = JSON.stringify(n);
      return post(
        { type: 'webhook', name },
        url!,
        body,
        {
          ...headers,
          'content-type': 'application/json',
          [NOTIFICATION_ID_HEADER]: n.id,
          [SIGNATURE_HEADER]: signWebhook(secret!, body, Date.now() / 1000),
        },
        timeoutMs,
        signal,
      );
    },
    toJSON: () => ({ type: 'webhook', name }),
  });
}
