import { createTransport } from 'nodemailer';
import { ConfigError, NotifierError, unknownKey, type Issue } from '../../errors.js';
import { notificationText, notificationTitle, type AlertNotification } from '../notification.js';
import { commonOptions, knownKeys, secretOption, type Notifier } from './notifier.js';

/** The SMTP server of {@link emailNotifier}. */
export interface SmtpOptions {
  host: string | undefined;
  /** Default 587 (465 with `secure`). */
  port?: number;
  /** TLS from the first byte (port 465). Default: true on port 465, else STARTTLS when the server offers it. */
  secure?: boolean;
  /** SMTP login; give both or neither. */
  user?: string | undefined;
  password?: string | undefined;
}

/** Options of {@link emailNotifier}. */
export interface EmailNotifierOptions {
  smtp: SmtpOptions;
  /** The sender address. */
  from: string | undefined;
  /** One or more recipients. */
  to: string | string[] | undefined;
  /** Default `'email'`. */
  name?: string;
  /** Bound on connecting, the greeting and each command. Default 10 000 ms. */
  timeoutMs?: number;
}

const KEYS = ['smtp', 'from', 'to', 'name', 'timeoutMs'];
const SMTP_KEYS = ['host', 'port', 'secure', 'user', 'password'];

/**
 * E-mail over SMTP through nodemailer: one plain-text mail per notification, the title as its
 * subject, `Message-ID: <id@nightshift>` so mail clients fold a repeat delivery into one. A
 * connection per notification, closed after it: notifications are rare, and no pool is left open.
 */
export function emailNotifier(options: EmailNotifierOptions): Notifier {
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  const issues: Issue[] = [];
  knownKeys(o, KEYS, issues, unknownKey);
  const { name, timeoutMs } = commonOptions(o, 'email', issues);
  const missing: string[] = [];
  const smtp = (typeof o.smtp === 'object' && o.smtp !== null ? o.smtp : {}) as Record<string, unknown>;
  if (typeof o.smtp !== 'object' || o.smtp === null) issues.push({ path: 'smtp', message: 'must be { host, port?, secure?, user?, password? }' });
  for (const k of Object.keys(smtp))
    if (!SMTP_KEYS.includes(k))
      issues.push(
        unknownKey(
          `smtp.${k}`,
          SMTP_KEYS.map((x) => `smtp.${x}`),
        ),
      );
  const smtpMissing: string[] = [];
  const host = secretOption(smtp, 'host', smtpMissing, issues);
  let port = smtp.secure === true ? 465 : 587;
  if (smtp.port !== undefined) {
    if (typeof smtp.port === 'number' && Number.isInteger(smtp.port) && smtp.port >= 1 && smtp.port <= 65_535) port = smtp.port;
    else issues.push({ path: 'smtp.port', message: 'must be a port number, 1 to 65535' });
  }
  if (smtp.secure !== undefined && typeof smtp.secure !== 'boolean') issues.push({ path: 'smtp.secure', message: 'must be true or false' });
  const secure = (smtp.secure as boolean | undefined) ?? port === 465;
  // A login is optional; when one half is named, the other is required (an unset variable).
  let auth: { user: string; pass: string } | undefined;
  if (Object.hasOwn(smtp, 'user') || Object.hasOwn(smtp, 'password')) {
    const user = secretOption(smtp, 'user', smtpMissing, issues);
    const pass = secretOption(smtp, 'password', smtpMissing, issues);
    if (user !== undefined && pass !== undefined) auth = { user, pass };
  }
  missing.push(...smtpMissing.map((k) => `smtp.${k}`));
  const from = secretOption(o, 'from', missing, issues);
  let to: string[] = [];
  if (o.to === undefined || (typeof o.to === 'string' && o.to.trim() === '') || (Array.isArray(o.to) && o.to.length === 0)) missing.push('to');
  else if (typeof o.to === 'string') to = [o.to];
  else if (Array.isArray(o.to) && o.to.every((a) => typeof a === 'string' && a.includes('@'))) to = [...(o.to as string[])];
  else issues.push({ path: 'to', message: 'must be an address or a list of addresses' });
  if (to.some((a) => !a.includes('@'))) issues.push({ path: 'to', message: 'must be e-mail addresses' });
  if (issues.length) throw new ConfigError(`email notifier "${name}"`, issues);
  return Object.freeze({
    type: 'email',
    name,
    missing: Object.freeze(missing),
    send: async (n: AlertNotification, signal: AbortSignal) => {
      const transport = createTransport({
        host: host!,
        port,
        secure,
        ...(auth ? { auth } : {}),
        connectionTimeout: timeoutMs,
        greetingTimeout: timeoutMs,
        socketTimeout: timeoutMs,
      });
      const abort = () => transport.close();
      signal.addEventListener('abort', abort, { once: true });
      try {
        await transport.sendMail({
          from: from!,
          to,
          subject: notificationTitle(n),
          text: `${notificationText(n, 100_000)}\n${n.alert.details ? `\ndetails: ${JSON.stringify(n.alert.details, null, 2)}\n` : ''}`,
          messageId: `<${n.id}@nightshift>`,
          headers: { 'X-Nightshift-Notification-Id': n.id },
        });
      } catch (err) {
        // nodemailer's codes (ECONNECTION, EAUTH, EENVELOPE, …) and the server's reply code say
        // what failed; its messages quote the server, never the password.
        const e = err as { code?: unknown; responseCode?: unknown; message?: unknown };
        const what = [typeof e.code === 'string' ? e.code : undefined, typeof e.responseCode === 'number' ? `SMTP ${e.responseCode}` : undefined].filter(Boolean).join(', ');
        const message = typeof e.message === 'string' ? e.message.replace(/[^\x20-\x7e]+/g, ' ').slice(0, 300) : 'sending failed';
        throw new NotifierError(name, `email "${name}" via ${host}:${port} failed${what ? ` (${what})` : ''}: ${message}`);
      } finally {
        signal.removeEventListener('abort', abort);
        transport.close();
      }
    },
    toJSON: () => ({ type: 'email', name }),
  });
}
