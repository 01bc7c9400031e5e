import { ConfigError, unknownKey, type Issue } from '../../errors.js';
import { parseDuration } from '../../schedules/duration.js';
import { buildCheck, type CheckDefinition } from '../define-check.js';
import type { BuiltinSpec, WatchdogEnv } from './builtin.js';
import { connectionBudget, leaderlessDaemons, overdueSchedules, streamGroups } from './fleet-checks.js';
import { discardedJobs, expiredLeases, queueLag, unrunnableKinds, waitingForOperator } from './job-checks.js';

/**
 * Every built-in check, in the order `checks list` shows them. The pipelines check (failed runs,
 * runs past their deadline) joins this list when pipelines land: a spec with its thresholds and
 * an `applies` that asks whether the config defines pipelines.
 */
export const BUILTINS: readonly BuiltinSpec[] = [queueLag, unrunnableKinds, expiredLeases, discardedJobs, waitingForOperator, overdueSchedules, leaderlessDaemons, streamGroups, connectionBudget];

/** The built-in checks' names. */
export const BUILTIN_CHECK_NAMES: readonly string[] = BUILTINS.map((b) => b.name);

/** What every built-in takes besides its thresholds, as your own checks do. */
export interface BuiltinCheckOptions {
  /** Default `builtins.every`, itself default `'1m'`. */
  every?: number | string;
  failAfter?: number;
  renotify?: number | string;
  notify?: string[];
}

type Ms = number | string;

/** `watchdog.builtins`: each built-in's thresholds (docs/watchdog.md states the defaults), or `false` to turn it off. */
export interface BuiltinsOptions {
  /** How often the built-ins run unless one says otherwise. Default `'1m'`. */
  every?: number | string;
  queueLag?: false | (BuiltinCheckOptions & { warningMs?: Ms; criticalMs?: Ms });
  unrunnableKinds?: false | (BuiltinCheckOptions & { graceMs?: Ms; liveWithinMs?: Ms });
  expiredLeases?: false | (BuiltinCheckOptions & { graceMs?: Ms });
  discardedJobs?: false | (BuiltinCheckOptions & { windowMs?: Ms; warningCount?: number; criticalCount?: number });
  waitingForOperator?: false | (BuiltinCheckOptions & { warningCount?: number; criticalAfterMs?: Ms });
  overdueSchedules?: false | (BuiltinCheckOptions & { graceMs?: Ms });
  leaderlessDaemons?: false | (BuiltinCheckOptions & { graceMs?: Ms; liveWithinMs?: Ms });
  streams?: false | (BuiltinCheckOptions & { stalledAfterMs?: Ms; maxPending?: number });
  connectionBudget?: false | (BuiltinCheckOptions & { warningPercent?: number; criticalPercent?: number; liveWithinMs?: Ms });
}

/** A built-in that is on, with its settings resolved. */
export interface ResolvedBuiltin {
  spec: BuiltinSpec;
  thresholds: Readonly<Record<string, number>>;
  options: { every: number | string; failAfter?: number; renotify?: number | string; notify?: string[] };
}

const COMMON = ['every', 'failAfter', 'renotify', 'notify'];

/**
 * Validates `watchdog.builtins` (issues under `builtins.<key>.<field>`) into the built-ins that
 * are on. `false` turns all off; a built-in left out runs with its defaults.
 */
export function resolveBuiltins(input: BuiltinsOptions | false | undefined, issues: Issue[]): ResolvedBuiltin[] {
  if (input === false) return [];
  if (input !== undefined && (typeof input !== 'object' || input === null || Array.isArray(input))) {
    issues.push({ path: 'builtins', message: 'must be an object of built-in settings, or false to turn them all off' });
    return [];
  }
  const o = (input ?? {}) as Record<string, unknown>;
  const keys = ['every', ...BUILTINS.map((b) => b.key)];
  for (const k of Object.keys(o))
    if (!keys.includes(k))
      issues.push(
        unknownKey(
          `builtins.${k}`,
          keys.map((x) => `builtins.${x}`),
        ),
      );
  const every = o.every ?? '1m';
  const out: ResolvedBuiltin[] = [];
  for (const spec of BUILTINS) {
    const v = o[spec.key];
    if (v === false) continue;
    const path = `builtins.${spec.key}`;
    if (v !== undefined && (typeof v !== 'object' || v === null || Array.isArray(v))) {
      issues.push({ path, message: 'must be an object of settings, or false to turn it off' });
      continue;
    }
    const given = (v ?? {}) as Record<string, unknown>;
    const known = [...COMMON, ...Object.keys(spec.thresholds)];
    for (const k of Object.keys(given))
      if (!known.includes(k))
        issues.push(
          unknownKey(
            `${path}.${k}`,
            known.map((x) => `${path}.${x}`),
          ),
        );
    const thresholds: Record<string, number> = {};
    for (const [name, t] of Object.entries(spec.thresholds)) {
      const raw = given[name];
      if (raw === undefined) {
        thresholds[name] = t.default;
        continue;
      }
      const parsed = t.duration ? parseDuration(raw) : typeof raw === 'number' && Number.isFinite(raw) ? { ms: raw } : { problem: `must be a number, got ${JSON.stringify(raw)}` };
      if ('problem' in parsed) issues.push({ path: `${path}.${name}`, message: parsed.problem });
      else if (parsed.ms < (t.min ?? 0) || parsed.ms > (t.max ?? Number.MAX_SAFE_INTEGER)) {
        issues.push({ path: `${path}.${name}`, message: `must be ${t.max === undefined ? `at least ${t.min ?? 0}` : `from ${t.min ?? 0} to ${t.max}`}${t.duration ? ' ms' : ''}` });
      } else thresholds[name] = parsed.ms;
    }
    out.push({
      spec,
      thresholds: Object.freeze(thresholds),
      options: {
        every: (given.every as number | string | undefined) ?? (every as number | string),
        ...(given.failAfter !== undefined ? { failAfter: given.failAfter as number } : {}),
        ...(given.renotify !== undefined ? { renotify: given.renotify as number | string } : {}),
        ...(given.notify !== undefined ? { notify: given.notify as string[] } : {}),
      },
    });
  }
  // The timing and alert options are checked as any check's are (defineCheck's rules).
  for (const b of out) {
    try {
      buildCheck({ name: b.spec.name, ...b.options, run: () => ({ status: 'ok', message: '' }) }, true);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      for (const i of err.issues) {
        const path = i.path === 'every' && (o[b.spec.key] as { every?: unknown } | undefined)?.every === undefined ? 'builtins.every' : `builtins.${b.spec.key}.${i.path}`;
        // A bad builtins.every is one problem, not one per built-in.
        if (!issues.some((known) => known.path === path)) issues.push({ ...i, path });
      }
    }
  }
  return out;
}

/** The built-in checks that are on and apply to this environment, as check definitions. */
export function builtinChecks(builtins: readonly ResolvedBuiltin[], env: WatchdogEnv): CheckDefinition[] {
  return builtins
    .filter((b) => b.spec.applies?.(env) ?? true)
    .map((b) => buildCheck({ name: b.spec.name, description: b.spec.description, ...b.options, run: (ctx) => b.spec.run(env, b.thresholds, ctx) }, true));
}

export type { BuiltinSpec, WatchdogEnv, ConnectionNeeds } from './builtin.js';
