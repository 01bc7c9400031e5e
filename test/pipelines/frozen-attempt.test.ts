import { readFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { freezePipeline } from '../fixtures/freeze-pipeline/pipeline.js';
import { useTestDatabase } from '../support/db.js';
import { startScript, type Proc } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

// A step's handler frozen (SIGSTOP) the moment it started leaves no start recorded: the rescuer
// gives the attempt back, so the next claim runs the step under the same attempt number. The
// frozen handler, once continued, still stages what it was writing: that must not land where the
// attempt that holds the lease staged its own artifact (issue 11, bug 3 made attempt numbers
// repeat for runs whose handler did start).

const t = useTestDatabase('plf');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

function stateOf(pid: number): string {
  // The third field of /proc/<pid>/stat (after the command in parentheses): T when stopped.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]!;
}

const logged = async (what: string) => (await t.sql.query(`SELECT 1 FROM ${q()}.freeze_log WHERE what = $1`, [what])).rowCount! > 0;

describe('a step attempt frozen before its start was recorded', () => {
  it('stages nothing over the artifact of the attempt that took the step over: the run publishes the latter', { timeout: 120_000 }, async () => {
    await t.sql.query(`CREATE TABLE ${q()}.freeze_log (what text, pid int, at timestamptz DEFAULT clock_timestamp())`);
    const root = mkdtempSync(join(tmpdir(), 'ns-freeze-'));
    const p = freezePipeline({ root, schema: t.schema, freeze: false });
    const ns = t.client({ pipelines: [p], maintenance: false });
    const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_ROOT: root, NS_LEASE_MS: '1500', NS_HEARTBEAT_MS: '400' };
    const procs: Proc[] = [];
    try {
      await ns.pipelines.start(p, 'k');
      const frozen = startScript('test/fixtures/freeze-pipeline/worker.ts', { ...env, NS_FREEZE: '1' });
      procs.push(frozen);
      await waitFor('the first attempt’s handler to stop its process', () => stateOf(frozen.pid) === 'T', { timeoutMs: 60_000 });
      await waitFor('its lease to lapse and the job to be given back', async () => {
        await ns.runMaintenance();
        const r = await t.sql.query(`SELECT state::text, attempt FROM ${q()}.jobs WHERE kind = 'pipeline:freeze:write'`);
        return r.rows[0]?.state === 'available';
      });
      const second = startScript('test/fixtures/freeze-pipeline/worker.ts', env);
      procs.push(second);
      await waitFor('the second attempt to stage its artifact', () => logged('staged'), { timeoutMs: 60_000 });
      const attempts = await t.sql.query(`SELECT attempt FROM ${q()}.jobs WHERE kind = 'pipeline:freeze:write'`);
      // The scenario: the same attempt number as the frozen one's.
      expect(attempts.rows[0].attempt).toBe(1);
      frozen.kill('SIGCONT');
      await waitFor('the frozen attempt, continued, to stage its artifact', () => logged('frozen-staged'), { timeoutMs: 30_000 });
      await t.sql.query(`INSERT INTO ${q()}.freeze_log (what) VALUES ('gate')`);
      await waitFor('the run to publish its artifacts', async () => (await ns.pipelines.getRun('freeze', 'k')).artifactsPublishedAt !== null, { timeoutMs: 30_000 });
      const run = await ns.pipelines.getRun('freeze', 'k');
      expect(run.state).toBe('succeeded');
      expect(readFileSync(join(root, 'freeze', 'k', 'out.txt'), 'utf8')).toBe('from the attempt that holds the lease\n');
      expect((await ns.pipelines.verify(p, 'k')).ok).toBe(true);
    } finally {
      for (const proc of procs) {
        proc.kill('SIGCONT');
        proc.kill('SIGKILL');
      }
      await Promise.all(procs.map((proc) => proc.exited));
    }
  });
});
