import { OptionsInvalidError, ScheduleNotFoundError } from '../errors.js';
import type { Nightshift } from '../runtime/nightshift.js';
import { ScheduleTicker, type TickerReport } from '../schedules/schedule-ticker.js';
import { withTestKit } from './test-kit.js';

/** Options of {@link tick}. */
export interface TickOptions {
  /** Only these schedules. Default: every schedule of the client. */
  schedules?: string[];
}

function toInstant(at: Date | string): Date {
  const d = at instanceof Date ? at : typeof at === 'string' && /(Z|[+-]\d{2}:\d{2})$/.test(at) ? new Date(at) : new Date(NaN);
  if (Number.isNaN(d.getTime())) {
    throw new OptionsInvalidError('tick', [{ path: 'at', message: `${JSON.stringify(String(at))} is not an instant: give a Date or an ISO-8601 string with a zone (Z or +02:00)` }]);
  }
  return d;
}

/**
 * Runs the schedule ticker's materialisation once as if the time were `at` — the clock a test
 * controls — and returns what it decided: the ticks fired (their jobs enqueued, in the same
 * transaction as each tick's unique row), skipped by the overlap or catch-up policy, queued, or
 * failed. It is the production pass, with `at` standing for the database clock.
 *
 * The clock starts where a fleet would: a schedule that `tick` (or a running client) has not seen
 * before is registered as first seen at `at`, so nothing is due at the first call. Each later call
 * decides every tick in (previous `at`, this `at`], so a jump of three days is three days of
 * downtime, and the schedule's catch-up policy decides which missed ticks run. The clock cannot go
 * back: an `at` before a schedule's last decided tick throws NS_OPTIONS_INVALID. Run the enqueued
 * jobs with {@link drain}.
 */
export async function tick(ns: Nightshift, at: Date | string, options: TickOptions = {}): Promise<TickerReport> {
  const when = toInstant(at);
  const all = ns.options.schedules;
  const names = options.schedules ?? all.map((s) => s.name);
  for (const n of names)
    if (!all.some((s) => s.name === n))
      throw new ScheduleNotFoundError(
        n,
        all.map((s) => s.name),
      );
  const schedules = all.filter((s) => names.includes(s.name));
  return withTestKit(ns, async (kit) => {
    const ticker = new ScheduleTicker({ database: kit.database, enqueuer: kit.enqueuer, registry: kit.registry, schedules, events: ns.events, logger: ns.logger });
    await ticker.register({ at: when });
    const rows = await kit.database.schedules.overview(names);
    const ahead = rows.filter((r) => r.last_tick_at.getTime() > when.getTime());
    if (ahead.length > 0) {
      throw new OptionsInvalidError('tick', [
        ...ahead.map((r) => ({
          path: 'at',
          message: `schedule "${r.name}" has decided its ticks up to ${r.last_tick_at.toISOString()}, after ${when.toISOString()}: the test clock cannot go back (use a later time, or a fresh schema)`,
        })),
      ]);
    }
    const report: TickerReport = { fired: [], skipped: [], queued: [], failed: [], duplicates: 0, busy: 0, errors: [], more: false, waiting: false, nextDueAt: null };
    for (;;) {
      const r = await ticker.runOnce({ at: when });
      report.fired.push(...r.fired);
      report.skipped.push(...r.skipped);
      report.queued.push(...r.queued);
      report.failed.push(...r.failed);
      report.duplicates += r.duplicates;
      report.busy += r.busy;
      report.waiting = r.waiting;
      report.nextDueAt = r.nextDueAt;
      if (r.errors.length > 0) throw r.errors[0]!.error;
      if (!r.more) return report;
    }
  });
}
