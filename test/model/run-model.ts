/**
 * The long run of the model-based test (`npm run faults -- --model --runs 50`): a PostgreSQL of its
 * own, `runs` generated scenarios, the first failing one shrunk, then a table of every scenario and
 * of the known bugs each run found evidence of, with the line that replays it.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { startEmbeddedPostgres } from '../../src/dev/embedded-postgres.js';
import { markdownTable } from '../faults/harness/report.js';
import { suspectedBugs } from './checker.js';
import { BUGS, openBugs, type BugId } from './known-open.js';
import { checkModel, modelSeed, outcomeText } from './property.js';

export interface RunModelOptions {
  profile: 'short' | 'long';
  runs: number;
  shrink: boolean;
  json: string | undefined;
  log(line: string): void;
}

/** Runs the model-based test; returns the exit code (1 when a violation no open bug explains was found). */
export async function runModel(o: RunModelOptions): Promise<number> {
  const seed = modelSeed();
  const load = () =>
    loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
  o.log(`model-based test, ${o.profile} scenarios, ${o.runs} runs, seed ${seed} (MODEL_SEED=${seed} replays it); ${cpus().length} cores, load ${load()}`);
  const server = await startEmbeddedPostgres({ flags: ['-c', 'fsync=off', '-c', 'full_page_writes=off'] });
  let result;
  try {
    result = await checkModel({ url: server.url, profile: o.profile, runs: o.runs, seed, path: process.env.MODEL_PATH, shrink: o.shrink, maxShrinks: 12, log: o.log });
  } finally {
    await server.destroy();
  }
  const rows = result.outcomes.map((x) => {
    const bugs = suspectedBugs(x.verdict);
    const unexplained = x.verdict.violations.filter((v) => v.suspects.length === 0).length;
    const limits = x.verdict.figures['limit keys, most held at once / limit'];
    return [
      x.path,
      `${x.scenario.workers.length} / ${x.scenario.steps.reduce((n, s) => n + s.count, 0)} / ${x.scenario.faults.length}`,
      x.scenario.limits ? String(limits ?? 'declared, no limited run') : '—',
      String(x.verdict.violations.length),
      bugs.join(', ') || '—',
      String(unexplained),
      x.passes ? 'passes' : 'FAILS',
      `${(x.durationMs / 1000).toFixed(0)} s`,
    ];
  });
  console.log(markdownTable(['scenario', 'workers / jobs / faults', 'limit keys: most held at once / limit', 'violations', 'suspected bugs', 'matching no bug', 'verdict', 'time'], rows));
  const found = new Map<BugId, string>();
  for (const x of result.outcomes) for (const b of suspectedBugs(x.verdict)) if (!found.has(b)) found.set(b, x.path);
  console.log('');
  console.log(
    markdownTable(
      ['bug', 'found', 'first scenario showing it'],
      (Object.keys(BUGS) as BugId[]).map((b) => [b, found.has(b) ? 'yes' : 'no', found.has(b) ? `MODEL_SEED=${seed} MODEL_PATH=${found.get(b)}` : '—']),
    ),
  );
  for (const x of result.outcomes) if (x.verdict.violations.length) console.log(`\n${outcomeText(seed, x)}`);
  if (result.counterexample) console.log(`\n## smallest failing scenario found${o.shrink ? ' (shrunk)' : ''}\n${outcomeText(seed, result.counterexample)}`);
  console.log(
    `\nseed ${seed}; known open: ${
      Object.entries(openBugs())
        .filter(([, v]) => v)
        .map(([k]) => k)
        .join(', ') || 'none'
    }; load at the end ${load()}`,
  );
  if (o.json) writeFileSync(o.json, JSON.stringify({ seed, profile: o.profile, outcomes: result.outcomes, counterexample: result.counterexample }, null, 2));
  return result.outcomes.every((x) => x.passes) ? 0 : 1;
}
