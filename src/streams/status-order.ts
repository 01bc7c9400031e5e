import { ConfigError, unknownKey, UnknownStatusError, type Issue } from '../errors.js';

/** The options of {@link defineStatusOrder}. */
export interface StatusOrderOptions<S extends string> {
  /** Every status, in the order a row moves through them; the first is the initial one. */
  order: readonly S[];
  /** Statuses after which nothing applies (filled, killed, rejected, …). */
  terminal: readonly NoInfer<S>[];
  /** The status new rows start in; must be the first of `order` (stated here for readers). Default `order[0]`. */
  initial?: NoInfer<S>;
}

/**
 * The monotonic status rule of a consumer that receives updates at least once and out of order: an
 * update applies only to a row in an earlier status, and never to a row in a terminal status. A
 * late or repeated update therefore changes nothing, and a status never moves backwards.
 */
export interface StatusOrder<S extends string> {
  readonly statuses: readonly S[];
  readonly initial: S;
  readonly terminal: readonly S[];
  /** Whether a row in `from` may move to `to`. Throws NS_UNKNOWN_STATUS for a status not in the order. */
  canApply(from: S, to: S): boolean;
  /**
   * The statuses a row may be in for `to` to apply — for a guarded write such as
   * `UPDATE … SET status = $to WHERE id = $id AND status = ANY($allowed)`, which makes the rule hold
   * under concurrent updates too. Throws NS_UNKNOWN_STATUS for a status not in the order.
   */
  allowedFrom(to: S): S[];
  isTerminal(status: S): boolean;
  /** Whether a value is one of the statuses (e.g. to check an update read from a stream). */
  isStatus(value: unknown): value is S;
}

/**
 * Defines a status order. Seed 004's bet orders are
 * `defineStatusOrder({ order: ['queued', 'open', 'filled', 'killed', 'rejected'], terminal: ['filled', 'killed', 'rejected'] })`:
 * `open` applies only to a `queued` row, and any other status only to a row that is not terminal.
 * Invalid options throw NS_CONFIG_INVALID listing every problem.
 */
export function defineStatusOrder<const S extends string>(options: StatusOrderOptions<S>): StatusOrder<S> {
  const issues: Issue[] = [];
  const o = (options ?? {}) as unknown as Record<string, unknown>;
  const keys = ['order', 'terminal', 'initial'];
  for (const key of Object.keys(o)) if (!keys.includes(key)) issues.push(unknownKey(key, keys));
  const order = Array.isArray(o.order) ? (o.order as unknown[]) : [];
  if (!Array.isArray(o.order) || order.length < 2) issues.push({ path: 'order', message: 'must list at least two statuses, initial first' });
  order.forEach((s, i) => {
    if (typeof s !== 'string' || s === '') issues.push({ path: `order.${i}`, message: 'must be a non-empty string' });
    else if (order.indexOf(s) !== i) issues.push({ path: `order.${i}`, message: `"${s}" is listed twice` });
  });
  const terminal = Array.isArray(o.terminal) ? (o.terminal as unknown[]) : [];
  if (!Array.isArray(o.terminal) || terminal.length === 0) issues.push({ path: 'terminal', message: 'must list at least one status of order' });
  terminal.forEach((s, i) => {
    if (!order.includes(s)) issues.push({ path: `terminal.${i}`, message: `"${String(s)}" is not in order` });
    if (s === order[0]) issues.push({ path: `terminal.${i}`, message: 'the initial status cannot be terminal' });
  });
  if (o.initial !== undefined && o.initial !== order[0]) issues.push({ path: 'initial', message: `must be the first status of order ("${String(order[0])}")` });
  if (issues.length) throw new ConfigError('status order', issues);

  const statuses = Object.freeze([...(order as S[])]);
  const rank = new Map(statuses.map((s, i) => [s, i]));
  const terminalSet = new Set(terminal as S[]);
  const rankOf = (s: S): number => {
    const r = rank.get(s);
    if (r === undefined) throw new UnknownStatusError(String(s), statuses);
    return r;
  };
  return Object.freeze({
    statuses,
    initial: statuses[0]!,
    terminal: Object.freeze([...terminalSet]),
    canApply(from: S, to: S): boolean {
      return !terminalSet.has(from) && rankOf(to) > rankOf(from);
    },
    allowedFrom(to: S): S[] {
      const r = rankOf(to);
      return statuses.filter((s) => !terminalSet.has(s) && rank.get(s)! < r);
    },
    isTerminal(status: S): boolean {
      rankOf(status);
      return terminalSet.has(status);
    },
    isStatus(value: unknown): value is S {
      return typeof value === 'string' && rank.has(value as S);
    },
  });
}
