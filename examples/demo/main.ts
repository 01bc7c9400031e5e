// `npm start`: the tour. The four seed systems (examples/bo-engine, payment-manager,
// operations-worker, bets) run as a small fleet of real processes on one embedded PostgreSQL, each
// system in a schema of its own, and a scripted day is played through them:
//   1. bo-engine: a settlement whose pool 3 fails (injected), then its rerun, which repeats only that pool;
//   2. payment-manager: a payment held for review (an orphan rqUID), resolved by an operator;
//   3. operations-worker: a burst of pack changes debounced into one job;
//   4. bets: a bet whose intent expired before the operator came up (needs redis-server).
// Then the dashboard stays up on 127.0.0.1 until Ctrl-C. `npm start -- --once` plays the script,
// prints a report of each step and exits: 0 when every step turned out as expected, 1 otherwise.
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/dev/embedded-postgres.js';
import { startBets } from './tour/bets.js';
import { startBoEngine } from './tour/bo-engine.js';
import { serveTourDashboard, type TourDashboard } from './tour/dashboard.js';
import { Fleet } from './tour/fleet.js';
import { startOperationsWorker } from './tour/operations-worker.js';
import { startPaymentManager } from './tour/payment-manager.js';
import { redisServerPath, startTourRedis, type TourRedis } from './tour/redis.js';
import { guarded, type StepResult, type TourContext, type TourSystem } from './tour/system.js';

const once = process.argv.includes('--once');
const log = (line = '') => process.stdout.write(`${line}\n`);

/** Prints one step's outcome: a status word, the step's name, then what happened, indented. */
function report(name: string, r: StepResult | 'skipped', why = ''): void {
  if (r === 'skipped') {
    log(`[skip] ${name}: ${why}`);
    return;
  }
  log(`[${r.ok ? 'ok' : 'FAIL'}]   ${name}`);
  for (const line of r.lines) log(`       ${line}`);
}

/** Every system's dashboard page answers (the once-mode's check that what `npm start` serves works). */
async function checkDashboard(dashboard: TourDashboard, ids: string[]): Promise<StepResult> {
  const statuses = await Promise.all(ids.map(async (id) => `${id} ${(await fetch(dashboard.urlOf(id))).status}`));
  return { ok: statuses.every((s) => s.endsWith(' 200')), lines: [`pages: ${statuses.join(', ')}`] };
}

async function main(): Promise<number> {
  const fleet = new Fleet();
  const systems: TourSystem[] = [];
  let pgServer: EmbeddedPostgresHandle | undefined;
  let sql: pg.Pool | undefined;
  let redis: TourRedis | undefined;
  let dashboard: TourDashboard | undefined;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await dashboard?.close().catch(() => undefined);
    // The children first (each drains its running work), then what they depend on.
    await fleet.stopAll();
    for (const s of systems) await s.stop().catch(() => undefined);
    await sql?.end().catch(() => undefined);
    await redis?.stop().catch(() => undefined);
    await pgServer?.destroy().catch(() => undefined);
  };
  // Ctrl-C (or a SIGTERM) while starting or playing: stop everything cleanly, then exit.
  const interrupted = new Promise<number>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const)
      process.once(signal, () => {
        log(`\n${signal}: stopping the fleet and PostgreSQL…`);
        void stop().then(() => {
          log('stopped: every process of the fleet, and PostgreSQL');
          resolve(once ? 1 : 0);
        });
      });
  });

  const tour = async (): Promise<number> => {
    log('nightshift tour: four seed systems on one PostgreSQL, a scripted day, and the dashboard');
    log('starting an embedded PostgreSQL (the first run unpacks it, a few seconds)…');
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    const ours = new Map(signals.map((sig) => [sig, new Set(process.listeners(sig))]));
    pgServer = await startEmbeddedPostgres();
    // embedded-postgres stops its server on SIGINT/SIGTERM itself (async-exit-hook), at once —
    // while the fleet is still draining against it. The tour stops the server last, so those
    // signal listeners go (its exit hooks stay: the server still stops if the tour dies).
    for (const sig of signals) for (const l of process.listeners(sig)) if (!ours.get(sig)!.has(l)) process.removeListener(sig, l as () => void);
    log(`PostgreSQL on 127.0.0.1:${pgServer.port}`);
    sql = new pg.Pool({ connectionString: pgServer.url, max: 3 });
    sql.on('error', () => undefined); // an idle connection cut at the end: nothing to do
    if (redisServerPath) redis = await startTourRedis();
    else log('redis-server is not installed: the bets system (seed 004, Redis Streams) is skipped. Get it with `apt-get install redis-server` (macOS: `brew install redis`).');
    for (const schema of ['bo_engine', 'payment_manager', 'operations_worker', 'bets']) await sql.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    const ctx: TourContext = { fleet, databaseUrl: pgServer.url, sql, redisUrl: redis?.url };
    log('starting the fleet: bo-engine ×2, payment-manager pods ×2, operations-worker ×2' + (redis ? ', bets-backend (+ the operator later)' : '') + '…');
    systems.push(await startBoEngine(ctx), await startPaymentManager(ctx), await startOperationsWorker(ctx));
    if (redis) systems.push(await startBets(ctx, redis.url));
    dashboard = await serveTourDashboard(systems.map((s) => s.dashboard));
    log(`dashboard: ${dashboard.url}`);
    log();
    log('the scripted day:');
    const names = [
      'bo-engine: the settlement, a failed pool and its rerun',
      'payment-manager: a payment held for review, resolved',
      'operations-worker: a debounced pack change',
      'bets: an intent that expired',
    ];
    const results: boolean[] = [];
    for (const [i, system] of systems.entries()) {
      const r = await system.play();
      report(names[i]!, r);
      results.push(r.ok);
    }
    if (!redis) report(names[3]!, 'skipped', 'redis-server is not installed (apt-get install redis-server)');
    const pages = await guarded(() =>
      checkDashboard(
        dashboard!,
        systems.map((s) => s.dashboard.id),
      ),
    );
    report('dashboard: every system’s page answers', pages);
    results.push(pages.ok);
    const passed = results.filter(Boolean).length;
    log();
    log(`${passed} of ${results.length} steps turned out as expected`);
    if (passed < results.length) for (const c of fleet.children) log(`--- ${c.name} (pid ${c.pid}), last output:\n${c.output().slice(-1_500)}`);
    if (once) {
      await stop();
      return passed === results.length ? 0 : 1;
    }
    log();
    log(`the fleet keeps running: ${fleet.children.map((c) => `${c.name} (pid ${c.pid})`).join(', ')}`);
    log(`the dashboard is on ${dashboard.url} — Ctrl-C stops everything`);
    return interrupted;
  };

  try {
    return await Promise.race([tour(), interrupted]);
  } catch (err) {
    console.error(err);
    for (const c of fleet.children) console.error(`--- ${c.name} (pid ${c.pid}), last output:\n${c.output().slice(-1_500)}`);
    await stop();
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
