import { randomBytes } from 'node:crypto';
/**
 * `npm run faults`: runs every fault scenario at full size against a PostgreSQL of its own
 * (embedded, on loopback; it is restarted by some scenarios) and prints the table of figures.
 *   --short            the sizes `npm test` uses (seconds each)
 *   --only 1,3         only the scenarios whose id starts with these
 *   --json <file>      also write the results as JSON
 *   FAULTS_SEED=<n>    replay the random choices of an earlier run
 *   --model            run the model-based test instead (test/model/): generated scenarios, shrunk when one fails
 *     --runs <n>       how many scenarios (default 20); with --short, the sizes npm test uses
 *     --no-shrink      report the first failing scenario as it is
 *     MODEL_SEED=<n> MODEL_PATH=<p>, MODEL_SCENARIO=<file>   replay (see docs/reliability.md)
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';
import { runModel } from '../model/run-model.js';
import { Random, runSeed } from './harness/random.js';
import { resultDetail, resultTable } from './harness/report.js';
import { passed, runScenario, type ScenarioResult } from './harness/scenario.js';
import { SCENARIOS } from './scenarios/index.js';

const args = process.argv.slice(2);
const size = args.includes('--short') ? 'short' : 'full';
const onlyArg = args[args.indexOf('--only') + 1];
const only = args.includes('--only') && onlyArg ? onlyArg.split(',') : undefined;
const jsonArg = args.includes('--json') ? args[args.indexOf('--json') + 1] : undefined;
const seed = runSeed();
const log = (line: string) => process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);

if (args.includes('--model')) {
  const runsArg = args.includes('--runs') ? Number(args[args.indexOf('--runs') + 1]) : 20;
  process.exitCode = await runModel({ profile: size === 'short' ? 'short' : 'long', runs: runsArg, shrink: !args.includes('--no-shrink'), json: jsonArg, log });
  process.exit();
}

log(
  `fault scenarios, ${size} size, seed ${seed} (FAULTS_SEED=${seed} replays it); ${cpus().length} cores, load ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
const server = await startEmbeddedPostgres({ flags: ['-c', 'fsync=off', '-c', 'full_page_writes=off'] });
const results: ScenarioResult[] = [];
try {
  for (const scenario of SCENARIOS) {
    if (only && !only.some((o) => scenario.id.startsWith(o))) continue;
    const schema = `faults_${scenario.id.split('-')[0]}_${randomBytes(3).toString('hex')}`;
    log(`scenario ${scenario.id}: ${scenario.title}`);
    let result: ScenarioResult;
    const started = Date.now();
    try {
      result = await runScenario(scenario, size, { url: server.url, schema, server, random: new Random(seed), log });
    } catch (err) {
      // One broken scenario must not hide the figures of the others.
      log(String(err instanceof Error ? (err.stack ?? err.message) : err));
      result = {
        id: scenario.id,
        title: scenario.title,
        faults: {},
        jobs: 0,
        unit: '',
        lost: 0,
        duplicates: { explained: 0, unexplained: 0 },
        maxRecoveryMs: null,
        recovery: '—',
        invariants: [{ name: 'the scenario ran to the end', holds: false, detail: String(err).split('\n')[0]! }],
        figures: {},
        durationMs: Date.now() - started,
      };
    }
    results.push(result);
    log(`scenario ${scenario.id}: ${passed(result) ? 'invariants hold' : 'INVARIANTS FAILED'} (${(result.durationMs / 1000).toFixed(1)} s)`);
  }
} finally {
  await server.destroy();
}
console.log(resultTable(results));
console.log('');
for (const r of results) console.log(`${resultDetail(r)}\n`);
console.log(
  `seed ${seed}; ${cpus().length} cores; load average at the end ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
if (jsonArg) writeFileSync(jsonArg, JSON.stringify({ seed, size, cores: cpus().length, results }, null, 2));
process.exitCode = results.every(passed) ? 0 : 1;
