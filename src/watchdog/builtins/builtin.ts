import type { Database } from '../../db/database.js';
import type { ScheduleDefinition } from '../../schedules/define-schedule.js';
import type { StreamsDiagnosis } from '../../streams/diagnose-streams.js';
import type { CheckContext, CheckOutcome } from '../define-check.js';

/** The connections one process of this shape needs, against the server. */
export interface ConnectionNeeds {
  /** The shared pool plus the listener's connection. */
  perProcess: number;
  maxConnections: number;
  /** `max_connections` minus the reserved slots. */
  available: number;
  /** Client connections open on the server now (every database and user). */
  inUse: number;
}

/**
 * What the built-in checks look at, given by the client that hosts them: the database, the
 * config's daemons and schedules, and — from the runtime, which the watchdog may not import —
 * the streams' diagnosis and the connection budget.
 */
export interface WatchdogEnv {
  readonly database: Database;
  /** The daemons the config defines. */
  daemons(): readonly string[];
  /** Every schedule the client defines, those of checks included. */
  schedules(): readonly ScheduleDefinition[];
  /** The streams' diagnosis; undefined when Redis is not configured or nothing uses it. */
  readonly diagnoseStreams: ((options: { stalledAfterMs: number }) => Promise<StreamsDiagnosis>) | undefined;
  connectionBudget(): Promise<ConnectionNeeds>;
}

/** One threshold of a built-in: its default, and whether it is a duration (ms, or a string like '2m'). */
export interface Threshold {
  default: number;
  duration?: boolean;
  /** Smallest value allowed (default 0). */
  min?: number;
  max?: number;
}

/** A built-in check: its name, its key under `watchdog.builtins`, its thresholds, and what it does. */
export interface BuiltinSpec {
  readonly key: string;
  readonly name: string;
  readonly description: string;
  readonly thresholds: Readonly<Record<string, Threshold>>;
  /** Whether it runs at all with this environment (the streams check needs Redis). Default: always. */
  applies?(env: WatchdogEnv): boolean;
  run(env: WatchdogEnv, t: Readonly<Record<string, number>>, ctx: CheckContext): Promise<CheckOutcome>;
}
