import type { Database } from '../db/database.js';
import { ConfigError } from '../errors.js';
import type { RolePlan } from '../roles/role-plan.js';
import type { CheckHosting } from '../roles/role-plan.js';
import type { StreamsDiagnosis } from '../streams/diagnose-streams.js';
import type { EventBus } from '../telemetry/events.js';
import { checkKind, WATCHDOG_QUEUE } from '../watchdog/define-check.js';
import { NOTIFY_KIND } from '../watchdog/notify-job.js';
import { Watchdog } from '../watchdog/watchdog.js';
import { connectionBudget, poolSize } from './budget.js';
import type { ResolvedOptions } from './client-options.js';

/** What the watchdog asks of its client after construction. */
export interface WatchdogClient {
  diagnoseStreams(options: { stalledAfterMs?: number }): Promise<StreamsDiagnosis>;
}

/**
 * Builds the client's watchdog when it is on (`checks` or `watchdog` given), and the options the
 * client runs with: its own jobs and schedules plus those of the checks and of notification
 * delivery, so the registry, the ticker, roles and nightshift/testing see them like any other.
 * With the watchdog off the options are returned as they are.
 */
export function withWatchdog(
  resolved: Readonly<ResolvedOptions>,
  d: { database: Database; events: EventBus; client: () => WatchdogClient | undefined },
): { options: Readonly<ResolvedOptions>; watchdog: Watchdog | undefined } {
  if (!resolved.watchdog) return { options: resolved, watchdog: undefined };
  let all: readonly ResolvedOptions['schedules'][number][] = resolved.schedules;
  const usesStreams = resolved.redisUrl !== undefined && (resolved.streams.length > 0 || resolved.consumers.length > 0);
  const watchdog = new Watchdog({
    database: d.database,
    events: d.events,
    actor: resolved.actor,
    checks: resolved.checks,
    settings: resolved.watchdog,
    env: {
      database: d.database,
      daemons: () => resolved.daemons.map((x) => x.name),
      schedules: () => all,
      diagnoseStreams: usesStreams ? (o) => d.client()!.diagnoseStreams(o) : undefined,
      connectionBudget: async () => {
        const r = await connectionBudget(d.database, { pool: poolSize(resolved), listener: resolved.listen, replicas: 1 });
        return { perProcess: r.perProcess.total, maxConnections: r.server.maxConnections, available: r.server.available, inUse: r.server.inUse };
      },
    },
  });
  const options = Object.freeze({ ...resolved, jobs: [...resolved.jobs, ...watchdog.jobs], schedules: [...resolved.schedules, ...watchdog.schedules] });
  all = options.schedules;
  return { options, watchdog };
}

/** What hosting each check takes, for role planning. */
export function checkHosting(watchdog: Watchdog | undefined): CheckHosting[] {
  return [...(watchdog?.checks.values() ?? [])].map((c) => ({
    name: c.name,
    builtin: c.builtin,
    schedule: c.schedule.name,
    kinds: [checkKind(c.name), NOTIFY_KIND],
    queue: WATCHDOG_QUEUE,
  }));
}

/**
 * A process that delivers notifications refuses to start with an incomplete notifier (a secret
 * left unset): it would fail every delivery. Other processes load the same config and run.
 */
export function assertNotifiersComplete(watchdog: Watchdog | undefined, plan: RolePlan): void {
  if (!watchdog || !plan.kinds.includes(NOTIFY_KIND)) return;
  const incomplete = watchdog.incompleteNotifiers();
  if (incomplete.length === 0) return;
  throw new ConfigError(
    'watchdog notifiers',
    incomplete.map((n) => ({
      path: `watchdog.notifiers.${n.name}`,
      message: `${n.type} notifier "${n.name}" lacks ${n.missing.join(', ')} (an unset environment variable?): this process delivers notifications and would fail every one`,
    })),
  );
}
