import pg from 'pg';
import type { EmbeddedPostgresHandle } from '../../../src/dev/embedded-postgres.js';
import { createNightshift, type EnqueueOptions, type JobDefinition } from '../../../src/index.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { effectJobs } from '../fixtures/effect-jobs.js';
import type { Random } from './random.js';
import { Recorder, type FaultKind } from './recorder.js';
import { ScenarioResources } from './resources.js';

/** What a scenario runs against: a fresh, migrated schema with the record's tables. */
export interface ScenarioContext {
  url: string;
  schema: string;
  /** A pool of the harness (application_name `faults-harness`, never a fault's target). */
  admin: pg.Pool;
  recorder: Recorder;
  /** The server, when this run owns it (scenarios that restart PostgreSQL need it). */
  server: EmbeddedPostgresHandle | undefined;
  random: Random;
  /** Where the run makes its processes, proxies and clients: the harness closes them all at its end. */
  resources: ScenarioResources;
  log(line: string): void;
}

/** One invariant and whether it held, with the evidence when it did not. */
export interface Invariant {
  name: string;
  holds: boolean;
  detail: string;
}

/** What a scenario reports: the row of the table, its invariants and extra figures. */
export interface ScenarioResult {
  id: string;
  title: string;
  faults: Partial<Record<FaultKind, number>>;
  /** Jobs (or ticks, terms, messages: the unit is in `unit`). */
  jobs: number;
  unit: string;
  lost: number;
  duplicates: { explained: number; unexplained: number };
  /** The longest recovery the run measured; `recovery` says what was measured. Never asserted. */
  maxRecoveryMs: number | null;
  recovery: string;
  invariants: Invariant[];
  figures: Record<string, string | number>;
  durationMs: number;
}

/** A scenario with a full size (`npm run faults`) and a short one (`npm test`). */
export interface Scenario<P> {
  id: string;
  title: string;
  /** Restarts PostgreSQL: needs a server of its own. */
  restartsServer: boolean;
  sizes: { full: P; short: P };
  run(ctx: ScenarioContext, params: P): Promise<ScenarioResult>;
}

/** Any scenario, whatever its parameters. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyScenario = Scenario<any>;

/** Creates and migrates `schema`, registers the effect kinds, and installs the record's tables. */
export async function prepareContext(base: { url: string; schema: string; server: EmbeddedPostgresHandle | undefined; random: Random; log(line: string): void }): Promise<ScenarioContext> {
  const jobs = effectJobs(base.schema);
  const ns = createNightshift({ databaseUrl: base.url, schema: base.schema, jobs: [jobs.atLeastOnce, jobs.atMostOnce, jobs.tick], logger: silentLogger() });
  try {
    await ns.migrate();
  } finally {
    await ns.stop();
  }
  const admin = new pg.Pool({ connectionString: base.url, max: 6, application_name: 'faults-harness' });
  // The server may restart under the harness: an idle client's error must not end the run.
  admin.on('error', () => undefined);
  const recorder = new Recorder(admin, base.schema);
  await recorder.install();
  return { ...base, admin, recorder, resources: new ScenarioResources(base.url, base.schema) };
}

/**
 * Runs one scenario at the given size against a fresh schema. The scenario's resources are closed
 * when it ends, however it ends, and then the harness's pool; a failure names the scenario and
 * carries the output of every process it started.
 */
export async function runScenario<P>(
  scenario: Scenario<P>,
  size: 'full' | 'short',
  base: { url: string; schema: string; server: EmbeddedPostgresHandle | undefined; random: Random; log(line: string): void },
  overrides: Partial<P> = {},
): Promise<ScenarioResult> {
  const ctx = await prepareContext(base);
  const started = Date.now();
  try {
    const result = await scenario.run(ctx, { ...scenario.sizes[size], ...overrides });
    result.durationMs = Date.now() - started;
    return result;
  } catch (err) {
    throw new Error(`${scenario.id} failed: ${String(err)}\n${ctx.resources.outputs()}`, { cause: err });
  } finally {
    try {
      await ctx.resources.closeAll();
    } finally {
      await ctx.admin.end();
    }
  }
}

/** Whether every invariant held. */
export function passed(result: ScenarioResult): boolean {
  return result.invariants.every((i) => i.holds);
}

/** Enqueues jobs of an effect kind from the harness (a client that only enqueues), in chunks. */
export async function enqueueJobs(ctx: ScenarioContext, def: JobDefinition, payloads: readonly object[], options: EnqueueOptions = {}): Promise<string[]> {
  const producer = createNightshift({ databaseUrl: ctx.url, schema: ctx.schema, jobs: [def], logger: silentLogger() });
  const ids: string[] = [];
  try {
    for (let start = 0; start < payloads.length; start += 5_000) {
      const chunk = payloads.slice(start, start + 5_000);
      ids.push(...(await producer.enqueueMany(def, chunk as never[], options)).map((r) => r.id));
    }
  } finally {
    await producer.stop();
  }
  return ids;
}
