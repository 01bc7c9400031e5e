import { describe, expect, inject, it } from 'vitest';
import { openBugs } from './known-open.js';
import { checkModel, modelSeed, outcomeText } from './property.js';

// The model-based test, short: a few generated scenarios (1–2 worker processes, a 6 s timeline of
// enqueues and faults, a bounded drain), each run for real and judged against the reference model.
// A violation fails the test unless it matches a bug listed open in known-open.ts. The seed is
// fresh each run and printed; MODEL_SEED=<n> (and MODEL_PATH=<path>) replays, MODEL_RUNS=<n> sets
// how many scenarios run. The long run: `npm run faults -- --model --runs 50`.
describe('model-based test of the job core', () => {
  const runs = Number(process.env.MODEL_RUNS ?? 3);
  it(`${runs} random scenarios keep every invariant, but for known open bugs`, { timeout: 600_000 }, async () => {
    const seed = modelSeed();
    const lines: string[] = [];
    const result = await checkModel({
      url: inject('databaseUrl'),
      profile: 'short',
      runs,
      seed,
      path: process.env.MODEL_PATH,
      shrink: false,
      maxShrinks: 0,
      log: (l) => lines.push(l),
    });
    const report = [
      `model-based test, seed ${seed} (MODEL_SEED=${seed} replays it); known open: ${
        Object.entries(openBugs())
          .filter(([, o]) => o)
          .map(([b]) => b)
          .join(', ') || 'none'
      }`,
      ...result.outcomes.map((x) => outcomeText(seed, x)),
    ].join('\n\n');
    console.log(report);
    const failing = result.outcomes.filter((x) => !x.passes).map((x) => `scenario ${x.path}: MODEL_SEED=${seed} MODEL_PATH=${x.path}`);
    expect(failing, `violations no open bug explains:\n${report}`).toEqual([]);
  });
});
