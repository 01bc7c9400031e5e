/**
 * A worker process of the model-based test (run with `node --import tsx`, started by the fault
 * harness's Fleet). It runs the model kinds (model-jobs.ts) as its spec says, keeps a run log of
 * every handler call, and prints what the checker reads from its output: `ready`, every
 * `worker.error` as `error <where>: <message>`, `stopped`. Configured by environment:
 *   DATABASE_URL, NS_SCHEMA   where
 *   MODEL_WORKER              the WorkerSpec, as JSON
 *   MODEL_RUN_LOG             the file of its run log
 *   MODEL_LIMITS              the scenario's fleet-wide limits on the kinds, as JSON (optional)
 *   MODEL_DEBUG=1             print every event too
 */
import { createNightshift } from '../../src/index.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { modelJobs, RunLog } from './model-jobs.js';
import { MODEL_SETTINGS, type ModelLimits, type WorkerSpec } from './scenario.js';

const env = process.env;
const schema = env.NS_SCHEMA!;
const spec = JSON.parse(env.MODEL_WORKER!) as WorkerSpec;
const log = new RunLog(env.MODEL_RUN_LOG!);
const limits = env.MODEL_LIMITS ? (JSON.parse(env.MODEL_LIMITS) as ModelLimits) : undefined;
const jobs = modelJobs(schema, log, limits);

const ns = createNightshift({
  databaseUrl: env.DATABASE_URL!,
  schema,
  jobs: [jobs.alo, jobs.amo],
  concurrency: spec.concurrency,
  // A role claims the spec's queues, in its order (each queue's claim loop starts in that order);
  // `queues` only gives some of them a limit of their own.
  roles: { model: { queues: spec.queues.map((q) => q.name) } },
  activeRoles: ['model'],
  queues: Object.fromEntries(spec.queues.filter((q) => q.limit !== undefined).map((q) => [q.name, { concurrency: q.limit }])),
  prefetch: spec.prefetch,
  pollIntervalMs: spec.pollMs,
  leaseMs: MODEL_SETTINGS.leaseMs,
  heartbeatMs: MODEL_SETTINGS.heartbeatMs,
  maintenanceIntervalMs: MODEL_SETTINGS.maintenanceMs,
  shutdownGraceMs: MODEL_SETTINGS.shutdownGraceMs,
  logger: silentLogger(),
});

const say = (line: string) => process.stdout.write(`${line}\n`);

ns.on((e) => {
  if (e.type === 'worker.error') say(`error ${e.where}: ${e.error.replace(/\s+/g, ' ')}`);
  // MODEL_DEBUG=1: every event, for a scenario being looked into (the output is kept with the run).
  else if (env.MODEL_DEBUG === '1' && e.type !== 'worker.claimed') say(`event ${Date.now()} ${JSON.stringify(e)}`);
});

let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  void ns.stop().then(
    () => {
      log.close();
      say('stopped');
      process.exit(0);
    },
    (err: unknown) => {
      say(`stop failed: ${String(err)}`);
      process.exit(1);
    },
  );
});

await ns.start();
say('ready');
