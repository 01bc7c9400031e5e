import { ConfigError, unknownKey, type Issue } from '../../errors.js';
import { notificationText, type AlertNotification } from '../notification.js';
import { commonOptions, knownKeys, post, secretOption, type Notifier } from './notifier.js';

/** Options of {@link telegramNotifier}. */
export interface TelegramNotifierOptions {
  /** The bot's token (from BotFather; keep it in the environment). Undefined: incomplete. */
  token: string | undefined;
  /** The chat (a user, group or channel id, or `@channelname`). */
  chatId: string | number | undefined;
  /** Default `'telegram'`. */
  name?: string;
  /** The Bot API's address. Default `https://api.telegram.org` (a test points it at a fake on loopback). */
  baseUrl?: string;
  /** Default 10 000 ms. */
  timeoutMs?: number;
}

const KEYS = ['token', 'chatId', 'name', 'baseUrl', 'timeoutMs'];
/** Telegram's limit on a message's text. */
const MAX_TEXT = 4_096;

/**
 * The Telegram Bot API (seed 000's alerts): `sendMessage` to `chatId`, plain text. An answer of
 * `ok: false` is retried; a 429 waits the `retry_after` Telegram asks for. The token is part of
 * the request path, so it never appears in what this notifier throws.
 */
export function telegramNotifier(options: TelegramNotifierOptions): Notifier {
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  const issues: Issue[] = [];
  knownKeys(o, KEYS, issues, unknownKey);
  const { name, timeoutMs } = commonOptions(o, 'telegram', issues);
  const missing: string[] = [];
  const token = secretOption(o, 'token', missing, issues);
  if (token !== undefined && !/^[A-Za-z0-9:_-]+$/.test(token)) issues.push({ path: 'token', message: 'is not a bot token (digits, a colon, then letters, digits, _ and -)' });
  let chatId: string | number | undefined;
  if (o.chatId === undefined || (typeof o.chatId === 'string' && o.chatId.trim() === '')) missing.push('chatId');
  else if (typeof o.chatId === 'number' ? Number.isSafeInteger(o.chatId) : typeof o.chatId === 'string') chatId = o.chatId as string | number;
  else issues.push({ path: 'chatId', message: 'must be a chat id (a number, or a string such as "-100123" or "@channel")' });
  let base = new URL('https://api.telegram.org');
  if (o.baseUrl !== undefined) {
    try {
      base = new URL(String(o.baseUrl));
      if (base.protocol !== 'https:' && base.protocol !== 'http:') throw new Error('protocol');
    } catch {
      issues.push({ path: 'baseUrl', message: 'must be an http:// or https:// URL' });
    }
  }
  if (issues.length) throw new ConfigError(`telegram notifier "${name}"`, issues);
  return Object.freeze({
    type: 'telegram',
    name,
    missing: Object.freeze(missing),
    send: (n: AlertNotification, signal: AbortSignal) => {
      const url = new URL(`${base.pathname.replace(/\/$/, '')}/bot${token!}/sendMessage`, base);
      const body = JSON.stringify({ chat_id: chatId, text: notificationText(n, MAX_TEXT), disable_web_page_preview: true });
      return post({ type: 'telegram', name }, url, body, { 'content-type': 'application/json' }, timeoutMs, signal, (status, text) => {
        // The Bot API explains itself: { ok: false, error_code, description, parameters: { retry_after } }.
        try {
          const answer = JSON.parse(text) as { description?: unknown };
          return typeof answer.description === 'string' ? answer.description.slice(0, 200) : undefined;
        } catch {
          return status >= 500 ? 'the Bot API failed' : undefined;
        }
      });
    },
    toJSON: () => ({ type: 'telegram', name }),
  });
}
