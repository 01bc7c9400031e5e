// What every system of the tour has: how it starts, what the dashboard shows of it, and the step
// of the scripted day it plays.
import type pg from 'pg';
import { toClientOptions } from '../../../src/config/define-config.js';
import type { NightshiftConfig } from '../../../src/index.js';
import type { DashboardSystem } from './dashboard.js';
import type { Fleet } from './fleet.js';

/** What a system gets to start with. */
export interface TourContext {
  fleet: Fleet;
  /** The one database; each system uses a schema of its own. */
  databaseUrl: string;
  /** An admin pool of the tour's own, for the checks of the script (the systems never use it). */
  sql: pg.Pool;
  /** redis-server's URL, when one is installed. */
  redisUrl: string | undefined;
}

/** The outcome of one scripted step: whether it turned out as expected, and what happened. */
export interface StepResult {
  ok: boolean;
  lines: string[];
}

/** A started system. */
export interface TourSystem {
  dashboard: DashboardSystem;
  /** Plays this system's part of the scripted day. */
  play(): Promise<StepResult>;
  /** Stops what the system runs in the tour's own process (fakes, clients); the fleet stops the children. */
  stop(): Promise<void>;
}

/**
 * A system's nightshift.config.ts as client options for the dashboard. The configs read their
 * environment (NS_SCHEMA, …) when first imported, so the environment the children get is set here
 * first; the systems start one after the other, each importing its own config once.
 */
export async function configOptions(path: string, env: Record<string, string>, databaseUrl: string) {
  Object.assign(process.env, env);
  const config = ((await import(path)) as { default: NightshiftConfig }).default;
  return toClientOptions(config, { databaseUrl });
}

/** A step that threw (a timeout, a failed command) did not turn out as expected. */
export async function guarded(play: () => Promise<StepResult>): Promise<StepResult> {
  try {
    return await play();
  } catch (err) {
    return { ok: false, lines: [`failed: ${(err as Error).message.split('\n').slice(0, 6).join('\n    ')}`] };
  }
}
