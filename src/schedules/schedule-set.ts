import type { Executor } from '../db/executor.js';
import type { ScheduleRegistration } from '../db/schedules.js';
import { DuplicateScheduleError, ScheduleNotFoundError } from '../errors.js';
import type { JobDefinition } from '../jobs/define-job.js';
import type { EnqueueResult } from '../jobs/enqueue-options.js';
import type { Enqueuer } from '../jobs/enqueuer.js';
import type { JobRegistry } from '../jobs/job-registry.js';
import type { ScheduleDefinition, ScheduleTick } from './define-schedule.js';
import { localParts } from './time-zone.js';

/** A schedule with its job resolved. */
export interface ScheduleEntry {
  readonly def: ScheduleDefinition;
  readonly job: JobDefinition;
}

/**
 * The schedules of one client, by name, with their jobs resolved against the client's registry.
 * Construction fails on a duplicate name (NS_DUPLICATE_SCHEDULE) or a job kind given by name that
 * the client does not define (NS_UNKNOWN_KIND).
 */
export class ScheduleSet {
  private readonly byName = new Map<string, ScheduleEntry>();

  constructor(schedules: readonly ScheduleDefinition[], registry: JobRegistry) {
    for (const def of schedules) {
      const existing = this.byName.get(def.name);
      if (existing && existing.def !== def) throw new DuplicateScheduleError(def.name);
      this.byName.set(def.name, Object.freeze({ def, job: registry.resolve(def.job as JobDefinition | string) }));
    }
  }

  /** The schedule of that name, or NS_SCHEDULE_NOT_FOUND with a did-you-mean. */
  require(name: string): ScheduleEntry {
    const entry = this.byName.get(name);
    if (!entry) throw new ScheduleNotFoundError(String(name), this.names());
    return entry;
  }

  get(name: string): ScheduleEntry | undefined {
    return this.byName.get(name);
  }

  names(): string[] {
    return [...this.byName.keys()];
  }

  all(): ScheduleEntry[] {
    return [...this.byName.values()];
  }

  get size(): number {
    return this.byName.size;
  }

  /** Rows for the schedules table. */
  registrations(): ScheduleRegistration[] {
    return this.all().map(({ def }) => ({ name: def.name, spec: def.spec, kind: def.kind }));
  }
}

/** The tick a payload function receives. */
export function scheduleTick(def: ScheduleDefinition, at: Date, manual: boolean): ScheduleTick {
  return Object.freeze({ name: def.name, at, tz: def.tz, local: Object.freeze(localParts(def.tz, at.getTime())), manual });
}

/**
 * Enqueues the job of one tick inside the caller's transaction: the payload is the one given, or
 * built by the schedule's payload function (default `{}`), and the schedule's enqueue options
 * apply. Throws what the payload function or the enqueue throws.
 */
export async function enqueueTickJob(enqueuer: Enqueuer, entry: ScheduleEntry, tx: Executor, tick: ScheduleTick, payload?: { value: unknown }): Promise<EnqueueResult> {
  const value = payload ? payload.value : entry.def.payload ? await entry.def.payload(tick) : {};
  return enqueuer.enqueue(entry.job, value, { ...entry.def.enqueue, db: tx });
}
