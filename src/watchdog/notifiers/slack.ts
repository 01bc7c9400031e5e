import { ConfigError, unknownKey, type Issue } from '../../errors.js';
import { notificationText, type AlertNotification } from '../notification.js';
import { commonOptions, knownKeys, post, urlOption, type Notifier } from './notifier.js';

/** Options of {@link slackNotifier}. */
export interface SlackNotifierOptions {
  /** The incoming webhook's URL (it is the secret: keep it in the environment). Undefined: incomplete. */
  url: string | undefined;
  /** Default `'slack'`. */
  name?: string;
  /** Default 10 000 ms. */
  timeoutMs?: number;
}

const KEYS = ['url', 'name', 'timeoutMs'];

/** Slack's three characters with a meaning in message text. */
function escapeSlack(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/**
 * A Slack incoming webhook, or any Slack-compatible one (Mattermost, Rocket.Chat): each
 * notification is POSTed as `{ text }`, the title in bold.
 */
export function slackNotifier(options: SlackNotifierOptions): Notifier {
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  const issues: Issue[] = [];
  knownKeys(o, KEYS, issues, unknownKey);
  const { name, timeoutMs } = commonOptions(o, 'slack', issues);
  const missing: string[] = [];
  const url = urlOption(o, 'url', missing, issues);
  if (issues.length) throw new ConfigError(`slack notifier "${name}"`, issues);
  return Object.freeze({
    type: 'slack',
    name,
    missing: Object.freeze(missing),
    send: (n: AlertNotification, signal: AbortSignal) => {
      const [title, ...rest] = escapeSlack(notificationText(n, 3_900)).split('\n');
      const footer = rest.pop();
      const text = `*${title}*\n${rest.join('\n')}\n_${footer}_`;
      return post({ type: 'slack', name }, url!, JSON.stringify({ text }), { 'content-type': 'application/json' }, timeoutMs, signal);
    },
    toJSON: () => ({ type: 'slack', name }),
  });
}
