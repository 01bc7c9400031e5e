import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../../src/dev/embedded-postgres.js';
import { Random, runSeed } from './harness/random.js';
import { resultDetail, resultTable } from './harness/report.js';
import { runScenario, type AnyScenario } from './harness/scenario.js';

/**
 * Runs scenarios at their short size as tests: each invariant is asserted; the figures (recovery
 * times included) are printed, never asserted. A scenario that restarts PostgreSQL gets a server
 * of its own for the file; the others work in a schema of the suite's server.
 */
export function faultTests(scenarios: AnyScenario[], options: { timeoutMs?: number } = {}): void {
  let server: EmbeddedPostgresHandle | undefined;
  const ownServer = scenarios.some((s) => s.restartsServer);
  if (ownServer) {
    beforeAll(async () => {
      server = await startEmbeddedPostgres({ flags: ['-c', 'fsync=off', '-c', 'full_page_writes=off'] });
    });
    afterAll(async () => {
      await server?.destroy();
    });
  }
  for (const scenario of scenarios) {
    it(`${scenario.id}: ${scenario.title}`, { timeout: options.timeoutMs ?? 300_000 }, async () => {
      const seed = runSeed();
      const url = server?.url ?? inject('databaseUrl');
      const schema = `faults_${scenario.id.split('-')[0]}_${randomBytes(4).toString('hex')}`;
      const lines: string[] = [];
      const result = await runScenario(scenario, 'short', { url, schema, server, random: new Random(seed), log: (l) => lines.push(l) });
      const report = `${resultTable([result])}\n${resultDetail(result)}\n(seed ${seed}: FAULTS_SEED=${seed} npm run faults -- --short --only ${scenario.id.split('-')[0]} replays it)`;
      console.log(report);
      for (const i of result.invariants) expect(i.holds, `${i.name}: ${i.detail}\n${report}`).toBe(true);
    });
  }
}
