/**
 * The benchmark: nightshift against graphile-worker and pg-boss on one embedded PostgreSQL.
 *
 *   npm run bench                 full run (median of 3 runs, 100k-job workloads), bench/results/latest.md
 *   npm run bench -- --quick      under 2 minutes, smaller workloads, bench/results/quick.md
 *   npm run bench -- --scale      the scale curves (bench/scale/), bench/results/scale.md and one SVG per curve;
 *                                 with --quick a smoke run of a few minutes (scale-quick.md)
 *
 * Options: --runs N, --systems a,b, --only bulk,single,drain,latency,ceiling,streams, --no-pgbench, --out FILE,
 * --merge (replace only the measured figures in the existing results file, noting when and how),
 * --note TEXT (added to the results' notes; with --merge --only none, only adds the note),
 * --profile (CPU profiles of every child and the top statements from pg_stat_statements of every
 * run, in bench/.profile/<time>/; figures taken while profiling are not for the table).
 * Every run is bounded: each step has a timeout, the whole run a deadline; children are killed and
 * PostgreSQL removed on the way out, also on Ctrl-C.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { buildChild, streamsChildScript } from './build-child.js';
import { killAllChildren, withTimeout } from './children.js';
import { measureCeiling, type CeilingFigure } from './raw-ceiling.js';
import { renderMarkdown, type BenchResults } from './report.js';
import { CURVE_KEYS, runScale, SCALE_SYSTEMS } from './scale/main.js';
import { bulkEnqueue, drain, latency, singleEnqueue, type DrainShape, type ScenarioContext, type Sizes } from './scenarios.js';
import { BenchServer } from './server.js';
import { killRedis } from './streams/redis-server.js';
import { measureStreams, type StreamSizes } from './streams/scenario.js';
import { systemById, SYSTEMS } from './systems/index.js';
import type { SystemAdapter } from './systems/system.js';

const here = dirname(fileURLToPath(import.meta.url));

const FULL: Sizes = { runs: 3, bulk: 100_000, single: 10_000, producers: 16, drain: 100_000, latencyPerSecond: 100, latencySeconds: 10, rawSeconds: 5, rawClaimRows: 100_000 };
const QUICK: Sizes = { runs: 1, bulk: 20_000, single: 2_000, producers: 16, drain: 10_000, latencyPerSecond: 100, latencySeconds: 3, rawSeconds: 2, rawClaimRows: 20_000 };

const STREAMS_FULL: StreamSizes = { runs: 3, consume: 200_000, publish: 100_000, callers: 16 };
const STREAMS_QUICK: StreamSizes = { runs: 1, consume: 20_000, publish: 10_000, callers: 16 };

const DRAINS: Record<string, DrainShape> = {
  'drain-1x10': { processes: 1, concurrency: 10 },
  'drain-1x50': { processes: 1, concurrency: 50 },
  'drain-2x10': { processes: 2, concurrency: 10 },
};

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    runs: { type: 'string' },
    systems: { type: 'string' },
    only: { type: 'string' },
    'no-pgbench': { type: 'boolean', default: false },
    out: { type: 'string' },
    profile: { type: 'boolean', default: false },
    merge: { type: 'boolean', default: false },
    note: { type: 'string', multiple: true, default: [] },
    scale: { type: 'boolean', default: false },
  },
});

const mode = args.quick ? 'quick' : 'full';
const sizes: Sizes = { ...(args.quick ? QUICK : FULL) };
if (args.runs) sizes.runs = Math.max(1, Number(args.runs));
const systems: SystemAdapter[] = args.systems ? args.systems.split(',').map(systemById) : args.scale ? SCALE_SYSTEMS.map(systemById) : [...SYSTEMS];
const only = new Set((args.only ?? (args.scale ? CURVE_KEYS.join(',') : 'ceiling,bulk,single,drain,latency,streams')).split(','));
// The whole run stops by itself: a quick run within 2.5 minutes, a full one within 50; the scale
// curves (10 M rows of history among them) within 8 minutes quick and 8 hours full.
const deadline = Date.now() + (args.scale ? (args.quick ? 8 * 60_000 : 8 * 3_600_000) : args.quick ? 150_000 : 50 * 60_000);
const started = Date.now();
const log = (line: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${line}\n`);

let server: BenchServer | undefined;
let cleaning: Promise<void> | undefined;
function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    killAllChildren();
    killRedis();
    await server?.stop().catch(() => undefined);
  })();
  return cleaning;
}
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    interrupted = true;
    log(`${sig}: stopping`);
    void cleanup().finally(() => process.exit(130));
  });
}
process.on('exit', () => {
  killAllChildren();
  killRedis();
});

async function main(): Promise<void> {
  const loadBefore = loadavg();
  if (args.scale) {
    const bad = systems.filter((s) => !SCALE_SYSTEMS.includes(s.id)).map((s) => s.id);
    const unknown = [...only].filter((k) => !CURVE_KEYS.includes(k));
    if (bad.length || unknown.length)
      throw new Error(
        `--scale: ${bad.length ? `systems ${bad.join(', ')} are not on the scale curves (${SCALE_SYSTEMS.join(', ')}); ` : ''}${unknown.length ? `unknown curves ${unknown.join(', ')} (known: ${CURVE_KEYS.join(', ')})` : ''}`,
      );
  }
  log(`${args.scale ? 'scale ' : ''}${mode} run: ${systems.map((s) => s.id).join(', ')}${args.scale ? `; curves ${[...only].join(', ')}` : `; ${sizes.runs} run(s) per figure`}`);
  const script = await buildChild();
  const profileDir = args.profile ? join(here, '.profile', new Date().toISOString().replace(/[:.]/g, '-')) : undefined;
  server = await BenchServer.start(profileDir ? ['-c', 'shared_preload_libraries=pg_stat_statements', '-c', 'pg_stat_statements.track=all'] : []);
  if (profileDir) {
    mkdirSync(profileDir, { recursive: true });
    await server.admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    log(`profiling into ${profileDir}`);
  }
  const serverInfo = await server.describe();
  log(`PostgreSQL ${serverInfo.server_version} on port ${server.port}`);

  const results: BenchResults = {
    mode,
    startedAt: new Date(started).toISOString(),
    durationSeconds: 0,
    machine: {
      cpus: cpus().length,
      model: cpus()[0]?.model.trim() ?? 'unknown CPU',
      memoryGb: Math.round(totalmem() / 2 ** 30),
      node: process.versions.node,
      platform: `${process.platform}-${process.arch}`,
      loadBefore,
      loadAfter: [],
    },
    server: serverInfo,
    sizes,
    systems: systems.map((s) => ({
      id: s.id,
      label: s.label,
      settings: Object.fromEntries(Object.entries(DRAINS).map(([k, d]) => [`${k.replace('drain-', '')} (processes × concurrency)`, s.settings(d.concurrency)])),
    })),
    figures: {},
    ceiling: { method: null, values: {} },
    notes: [...(args.note ?? [])],
  };
  const record = (key: string, id: SystemAdapter['id'], value: number) => {
    const byKey = (results.figures[key] ??= {});
    (byKey[id] ??= []).push(value);
  };
  // BENCH_CHILD_FLAGS: extra node flags for every child (diagnostics such as --trace-gc).
  const childFlags = (process.env.BENCH_CHILD_FLAGS ?? '').split(' ').filter(Boolean);
  const ctx: ScenarioContext = { server, script, sizes, log, execArgv: childFlags };

  // Templates: each system migrated once; every run clones a fresh database from its template.
  for (const s of systems) {
    const url = await server.createDatabase(template(s));
    await withTimeout(s.migrate(url), 60_000, `${s.id} migrate`);
  }

  if (args.scale) {
    const out = args.out ?? join(here, 'results', mode === 'full' ? 'scale.md' : 'scale-quick.md');
    await runScale(ctx, { quick: args.quick, ...(args.runs ? { runs: Number(args.runs) } : {}), systems, only, out, deadline, template, serverInfo, interrupted: () => interrupted });
    return;
  }

  /** Runs one bounded unit of work; a failure or timeout is noted and the run goes on. */
  const unit = async (what: string, fn: () => Promise<void>, maxMs: number) => {
    const left = deadline - Date.now();
    if (left < 5_000) {
      results.notes.push(`skipped (time limit): ${what}`);
      return;
    }
    try {
      await withTimeout(fn(), Math.min(maxMs, left), what);
    } catch (err) {
      killAllChildren();
      const msg = err instanceof Error ? err.message.split('\n')[0]! : String(err);
      log(`FAILED ${what}: ${msg}`);
      results.notes.push(`failed: ${what}: ${msg}`);
    }
  };

  if (only.has('ceiling')) {
    for (let r = 1; r <= sizes.runs; r++) {
      await unit(
        `raw ceiling run ${r}`,
        async () => {
          const c = await measureCeiling(server!, 'raw_ceiling', sizes.rawSeconds, sizes.rawClaimRows, !args['no-pgbench']);
          results.ceiling.method = c.method;
          for (const f of c.figures) (results.ceiling.values[f.key as CeilingFigure['key']] ??= []).push(f.jobsPerSecond);
          log(`ceiling run ${r}: ${c.figures.map((f) => `${f.key} ${Math.round(f.jobsPerSecond)}/s`).join(', ')}`);
        },
        120_000,
      );
    }
  }

  // Runs interleave the systems, so a change in the machine's background load hits all of them alike.
  const each = async (key: string, maxMs: number, fn: (s: SystemAdapter, url: string, run: number) => Promise<void>) => {
    for (let r = 1; r <= sizes.runs; r++) {
      for (const s of systems) {
        const db = `run_${s.id.replace(/-/g, '_')}_${key.replace(/-/g, '_')}_${r}`;
        await unit(
          `${s.id} ${key} run ${r}`,
          async () => {
            const url = await server!.createDatabase(db, template(s));
            if (profileDir) {
              ctx.execArgv = [...childFlags, '--cpu-prof', `--cpu-prof-dir=${join(profileDir, db)}`];
              await server!.admin.query('SELECT pg_stat_statements_reset()');
            }
            try {
              await fn(s, url, r);
              if (profileDir) await dumpStatements(server!.admin, db, join(profileDir, `${db}.statements.txt`));
            } finally {
              await server!.dropDatabase(db);
            }
          },
          maxMs,
        );
      }
    }
  };

  if (only.has('bulk')) {
    await each('bulk', 180_000, async (s, url) => {
      await server!.settle(url);
      const v = await bulkEnqueue(ctx, s, url);
      record('bulk', s.id, v);
      log(`${s.id} bulk: ${Math.round(v)} jobs/s`);
    });
  }
  if (only.has('single')) {
    await each('single', 180_000, async (s, url) => {
      await server!.settle(url);
      const v = await singleEnqueue(ctx, s, url);
      record('single', s.id, v);
      log(`${s.id} single: ${Math.round(v)} jobs/s`);
    });
  }
  if (only.has('drain')) {
    for (const [key, shape] of Object.entries(DRAINS)) {
      await each(key, 300_000, async (s, url, run) => {
        const d = await drain(ctx, s, url, shape);
        record(key, s.id, d.jobsPerSecond);
        const runs = ((results.drainRuns ??= {})[key] ??= {});
        const mine = (runs[s.id] ??= []);
        while (mine.length < run - 1) mine.push(null);
        mine[run - 1] = d.jobsPerSecond;
        record(`rss-${key.replace('drain-', '')}`, s.id, Math.max(...d.peakRss) / 2 ** 20);
        record(`cpu-${key.replace('drain-', '')}`, s.id, d.cpuPerJob.workers + d.cpuPerJob.database);
        log(
          `${s.id} ${key}: ${Math.round(d.jobsPerSecond)} jobs/s, peak RSS ${d.peakRss.map((b) => `${(b / 2 ** 20).toFixed(0)} MB`).join(', ')} (V8 heap ${d.peakHeap.map((b) => `${(b / 2 ** 20).toFixed(0)} MB`).join(', ')}), ` +
            `CPU ${d.cpuPerJob.workers.toFixed(1)} µs a job in the workers, ${d.cpuPerJob.database.toFixed(1)} in the database`,
        );
      });
    }
  }
  if (only.has('latency')) {
    await each('latency', 120_000, async (s, url) => {
      const l = await latency(ctx, s, url);
      record('latency-p50', s.id, l.p50);
      record('latency-p95', s.id, l.p95);
      record('latency-p99', s.id, l.p99);
      log(`${s.id} latency: p50 ${l.p50.toFixed(2)} ms, p95 ${l.p95.toFixed(2)} ms, p99 ${l.p99.toFixed(2)} ms (${l.samples} jobs)`);
    });
  }

  if (only.has('streams')) {
    try {
      const streamSizes = { ...(args.quick ? STREAMS_QUICK : STREAMS_FULL), runs: sizes.runs };
      results.streams = await measureStreams(streamsChildScript(script), streamSizes, log, unit);
    } catch (err) {
      const msg = err instanceof Error ? err.message.split('\n')[0]! : String(err);
      log(`streams skipped: ${msg}`);
      results.notes.push(`streams not measured: ${msg}`);
    }
  }

  results.machine.loadAfter = loadavg();
  results.durationSeconds = (Date.now() - started) / 1000;
  const out = args.out ?? join(here, 'results', mode === 'full' ? 'latest.md' : 'quick.md');
  const json = out.replace(/\.md$/, '.json');
  const final = args.merge && existsSync(json) ? merge(JSON.parse(readFileSync(json, 'utf8')) as BenchResults, results) : results;
  const md = renderMarkdown(final);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${md}\n`);
  writeFileSync(json, `${JSON.stringify(final, null, 2)}\n`);
  process.stdout.write(`${md}\n`);
  log(`written to ${out}`);
}

/** The earlier results with the figures just measured replacing theirs, and a note saying so. */
function merge(earlier: BenchResults, now: BenchResults): BenchResults {
  const figures = { ...earlier.figures };
  for (const [key, bySystem] of Object.entries(now.figures)) figures[key] = { ...figures[key], ...bySystem };
  const keys = Object.keys(now.figures).concat(now.ceiling.method ? ['raw ceiling'] : [], now.streams ? ['streams'] : []);
  if (keys.length === 0) return { ...earlier, notes: [...earlier.notes, ...now.notes] };
  const note =
    `re-measured at ${now.startedAt} (${now.sizes.runs} runs, load average before/after ` +
    `${now.machine.loadBefore.map((x) => x.toFixed(2)).join(' ')} / ${now.machine.loadAfter.map((x) => x.toFixed(2)).join(' ')}): ${keys.join(', ')}`;
  return {
    ...earlier,
    figures,
    ceiling: now.ceiling.method ? now.ceiling : earlier.ceiling,
    ...((now.streams ?? earlier.streams) ? { streams: now.streams ?? earlier.streams } : {}),
    notes: [...earlier.notes, ...now.notes, note],
  };
}

/** Writes the run's statements by total time, with calls, mean time, rows and buffers. */
async function dumpStatements(admin: pg.Pool, db: string, file: string): Promise<void> {
  const { rows } = await admin.query(
    `SELECT round(s.total_exec_time::numeric, 1) AS total_ms, s.calls, round(s.mean_exec_time::numeric, 3) AS mean_ms, s.rows,
            s.shared_blks_hit AS hit, s.shared_blks_read AS read, s.shared_blks_dirtied AS dirtied, s.wal_bytes,
            regexp_replace(s.query, '\\s+', ' ', 'g') AS query
     FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
     WHERE d.datname = $1 ORDER BY s.total_exec_time DESC LIMIT 25`,
    [db],
  );
  writeFileSync(
    file,
    rows
      .map(
        (r) => `${r.total_ms} ms total | ${r.calls} calls | ${r.mean_ms} ms mean | ${r.rows} rows | hit ${r.hit} read ${r.read} dirtied ${r.dirtied} | wal ${r.wal_bytes} B\n  ${String(r.query).slice(0, 600)}`,
      )
      .join('\n\n') + '\n',
  );
}

function template(s: SystemAdapter): string {
  return `tpl_${s.id.replace(/-/g, '_')}`;
}

const hardStop = setTimeout(
  () => {
    log('deadline passed: stopping');
    void cleanup().finally(() => process.exit(1));
  },
  deadline - Date.now() + 15_000,
);
hardStop.unref();

main()
  .then(() => cleanup())
  .catch(async (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    await cleanup();
    process.exitCode = 1;
  });
