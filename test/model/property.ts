/**
 * Drives the model-based test with fast-check: generates scenarios from a seed, runs each for real,
 * judges it, and — when asked — shrinks a failing scenario, spending at most `maxShrinks` more real
 * runs on it. Every scenario is replayable: `MODEL_SEED=<seed> MODEL_PATH=<path>` regenerates it
 * (run `i` of a seed has path `i`; a shrunk one has the path fast-check reports), and
 * `MODEL_SCENARIO=<file.json>` runs a saved scenario as it is. A failing run keeps what it observed
 * in a file (every run with `MODEL_KEEP=1`); `MODEL_OBSERVATION=<file>` judges it again, running nothing.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { checkObservation, verdictPasses, verdictText, type Verdict } from './checker.js';
import { PROFILES, scenarioArbitrary } from './generator.js';
import { openBugs, type BugId } from './known-open.js';
import type { Observation } from './observation.js';
import { runModelScenario } from './runner.js';
import { describeScenario, type ModelScenario } from './scenario.js';

export interface ModelCheckOptions {
  url: string;
  profile: 'short' | 'long';
  runs: number;
  seed: number;
  /** Start from this fast-check path (replays one scenario of the seed). */
  path?: string;
  shrink: boolean;
  /** Real runs spent on shrinking, at most. */
  maxShrinks: number;
  open?: Record<BugId, boolean>;
  log(line: string): void;
}

/** One scenario that ran, with its verdict. */
export interface ScenarioOutcome {
  /** fast-check's path of this scenario (for `MODEL_PATH`), or `file` for a saved one. */
  path: string;
  scenario: ModelScenario;
  verdict: Verdict;
  passes: boolean;
  durationMs: number;
}

export interface ModelCheckResult {
  seed: number;
  outcomes: ScenarioOutcome[];
  /** The smallest failing scenario found (the first failing one when not shrinking). */
  counterexample: ScenarioOutcome | undefined;
}

/** The seed of this run: `MODEL_SEED` when set, else a fresh one. */
export function modelSeed(): number {
  const fromEnv = Number(process.env.MODEL_SEED);
  return Number.isInteger(fromEnv) && fromEnv !== 0 ? fromEnv : randomBytes(4).readUInt32BE(0) >>> 1 || 1;
}

/** Runs one scenario for real and judges it; a harness failure is a failing verdict, never an excuse. */
export async function runAndJudge(scenario: ModelScenario, o: Pick<ModelCheckOptions, 'url' | 'profile' | 'open' | 'log'>, path: string): Promise<ScenarioOutcome> {
  const started = Date.now();
  const schema = `model_${randomBytes(4).toString('hex')}`;
  let verdict: Verdict;
  try {
    const obs = await runModelScenario(scenario, { url: o.url, schema, drainMs: PROFILES[o.profile].drainMs, log: o.log });
    verdict = checkObservation(obs);
    if (!verdictPasses(verdict, o.open ?? openBugs()) || process.env.MODEL_KEEP === '1') {
      // Everything observed, to judge again without running (MODEL_OBSERVATION=<file>), e.g. after a change to the checker.
      const file = join(tmpdir(), `nightshift-${schema}.json`);
      writeFileSync(file, JSON.stringify(obs));
      o.log(`scenario ${path}: observation kept in ${file}`);
    }
  } catch (err) {
    verdict = { violations: [{ invariant: 'nothing-lost', detail: `the scenario did not run to the end: ${String(err).slice(0, 2_000)}`, suspects: [] }], figures: {} };
  }
  const outcome = { path, scenario, verdict, passes: verdictPasses(verdict, o.open ?? openBugs()), durationMs: Date.now() - started };
  o.log(`scenario ${path} (schema ${schema}, ${(outcome.durationMs / 1000).toFixed(1)} s): ${outcome.passes ? 'passes' : 'FAILS'}`);
  return outcome;
}

/** A scenario and its verdict, readable, with the line that replays it. */
export function outcomeText(seed: number, x: ScenarioOutcome, open: Record<BugId, boolean> = openBugs()): string {
  const replay = x.path === 'file' ? 'a saved scenario (MODEL_SCENARIO)' : `replay: MODEL_SEED=${seed} MODEL_PATH=${x.path}`;
  return [
    `### scenario ${x.path}: ${x.passes ? 'passes' : 'FAILS'} (${(x.durationMs / 1000).toFixed(1)} s; ${replay})`,
    describeScenario(x.scenario),
    verdictText(x.verdict, open),
    `  as JSON: ${JSON.stringify(x.scenario)}`,
  ].join('\n');
}

/** Generates and runs scenarios; shrinks the first failing one when asked. */
export async function checkModel(o: ModelCheckOptions): Promise<ModelCheckResult> {
  const saved = process.env.MODEL_OBSERVATION;
  if (saved) {
    const obs = JSON.parse(readFileSync(saved, 'utf8')) as Observation;
    const verdict = checkObservation(obs);
    const outcome = { path: 'file', scenario: obs.scenario, verdict, passes: verdictPasses(verdict, o.open ?? openBugs()), durationMs: 0 };
    return { seed: o.seed, outcomes: [outcome], counterexample: outcome.passes ? undefined : outcome };
  }
  const file = process.env.MODEL_SCENARIO;
  if (file) {
    const outcome = await runAndJudge(JSON.parse(readFileSync(file, 'utf8')) as ModelScenario, o, 'file');
    return { seed: o.seed, outcomes: [outcome], counterexample: outcome.passes ? undefined : outcome };
  }
  const outcomes: ScenarioOutcome[] = [];
  let index = o.path === undefined ? 0 : Number(o.path.split(':')[0]);
  let failed = false;
  let shrinkRuns = 0;
  let smallest: ScenarioOutcome | undefined;
  const property = fc.asyncProperty(scenarioArbitrary(PROFILES[o.profile]), async (scenario) => {
    if (!failed) {
      const path = o.path !== undefined && outcomes.length === 0 ? o.path : String(index);
      index++;
      const outcome = await runAndJudge(scenario, o, path);
      outcomes.push(outcome);
      if (!outcome.passes) {
        failed = true;
        smallest = outcome;
      }
      return outcome.passes;
    }
    // Shrinking: a candidate beyond the budget counts as passing, which ends the search quickly.
    if (shrinkRuns >= o.maxShrinks) return true;
    shrinkRuns++;
    const outcome = await runAndJudge(scenario, o, `shrink ${shrinkRuns}`);
    if (!outcome.passes) smallest = outcome;
    return outcome.passes;
  });
  const details = await fc.check(property, {
    seed: o.seed,
    numRuns: o.path === undefined ? o.runs : 1,
    ...(o.path !== undefined ? { path: o.path } : {}),
    endOnFailure: !o.shrink,
  });
  if (smallest && details.counterexamplePath) smallest = { ...smallest, path: details.counterexamplePath };
  return { seed: o.seed, outcomes, counterexample: smallest };
}
