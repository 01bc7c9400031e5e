import { ConfigError, type Issue } from '../errors.js';
import type { Backoff } from '../jobs/retry-policy.js';
import { resolveBuiltins, type BuiltinsOptions, type ResolvedBuiltin } from './builtins/index.js';
import type { Notifier } from './notifiers/notifier.js';
import { DEFAULT_DELIVERY_ATTEMPTS, DEFAULT_DELIVERY_BACKOFF, notifyJob, type DeliveryOptions } from './notify-job.js';

/** `watchdog` in the config (the client's `watchdog` option): where alerts go, and the built-in checks. */
export interface WatchdogOptions {
  /** Where alert notifications go (webhookNotifier, slackNotifier, telegramNotifier, emailNotifier). Default: none (alerts are recorded only). */
  notifiers?: Notifier[];
  /** The built-in checks' settings, or `false` to turn them all off. Default: all on, with their defaults. */
  builtins?: BuiltinsOptions | false;
  /** How notifications are retried. Default 25 attempts, from 5 s doubling to 15 min. */
  delivery?: DeliveryOptions;
}

/** The resolved, validated watchdog settings. */
export interface WatchdogSettings {
  readonly notifiers: ReadonlyMap<string, Notifier>;
  readonly builtins: readonly ResolvedBuiltin[];
  readonly delivery: { readonly maxAttempts: number; readonly backoff: Backoff };
}

const KEYS = ['notifiers', 'builtins', 'delivery'];

/** Whether a value looks like a notifier (from the factories, or your own). */
export function isNotifier(v: unknown): v is Notifier {
  const n = v as Notifier | null;
  return typeof n === 'object' && n !== null && typeof n.name === 'string' && typeof n.type === 'string' && typeof n.send === 'function' && Array.isArray(n.missing);
}

/** Validates the watchdog settings, pushing every problem (paths under `watchdog.`-less keys: `notifiers.0`, `builtins.queueLag.warningMs`). */
export function resolveWatchdogSettings(input: WatchdogOptions | undefined, issues: Issue[]): WatchdogSettings {
  const o = (input ?? {}) as Record<string, unknown>;
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input))) {
    issues.push({ path: '', message: 'must be an object: { notifiers?, builtins?, delivery? }' });
  }
  for (const k of Object.keys(o)) {
    if (!KEYS.includes(k)) issues.push({ path: k, message: `unknown key; known keys: ${KEYS.join(', ')}` });
  }
  const notifiers = new Map<string, Notifier>();
  if (o.notifiers !== undefined && !Array.isArray(o.notifiers)) issues.push({ path: 'notifiers', message: 'must be a list of notifiers (webhookNotifier(…), slackNotifier(…), …)' });
  for (const [i, n] of (Array.isArray(o.notifiers) ? o.notifiers : []).entries()) {
    if (!isNotifier(n)) issues.push({ path: `notifiers.${i}`, message: 'must be a notifier: webhookNotifier, slackNotifier, telegramNotifier or emailNotifier (or { type, name, missing, send })' });
    else if (notifiers.has(n.name)) issues.push({ path: `notifiers.${i}`, message: `two notifiers are named "${n.name}": give one a name of its own (name: '…')` });
    else notifiers.set(n.name, n);
  }
  const builtins = resolveBuiltins(o.builtins as BuiltinsOptions | false | undefined, issues);
  const d = (o.delivery ?? {}) as Record<string, unknown>;
  if (o.delivery !== undefined && (typeof o.delivery !== 'object' || o.delivery === null)) issues.push({ path: 'delivery', message: 'must be { maxAttempts?, backoff? }' });
  for (const k of Object.keys(d)) if (k !== 'maxAttempts' && k !== 'backoff') issues.push({ path: `delivery.${k}`, message: 'unknown key; known keys: maxAttempts, backoff' });
  const delivery = { maxAttempts: (d.maxAttempts as number | undefined) ?? DEFAULT_DELIVERY_ATTEMPTS, backoff: (d.backoff as Backoff | undefined) ?? DEFAULT_DELIVERY_BACKOFF };
  try {
    // defineJob's own rules for attempts and back-off.
    notifyJob(notifiers, delivery);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    for (const i of err.issues) issues.push({ ...i, path: `delivery.${i.path}` });
  }
  return Object.freeze({ notifiers, builtins, delivery: Object.freeze(delivery) });
}
