import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { drain } from '../../src/testing/index.js';
import { report } from '../fixtures/pipelines-app/report.js';
import { useTestDatabase } from '../support/db.js';
import { cliInProcess } from './in-process.js';

const t = useTestDatabase('plcli');
t.migrateBeforeAll();
const APP = new URL('../fixtures/pipelines-app', import.meta.url).pathname;
const ARTIFACTS = mkdtempSync(join(tmpdir(), 'ns-cli-artifacts-'));
process.env.NIGHTSHIFT_ARTIFACTS_DIR = ARTIFACTS;
// The CLI in this process (runCli): the config reads NIGHTSHIFT_ARTIFACTS_DIR from process.env.
const run = (args: string[]) => cliInProcess(['--schema', t.schema, '--actor', 'ops@test', 'pipelines', ...args], { cwd: APP, env: { DATABASE_URL: t.url } });
const q = () => `"${t.schema}"`;

describe('nightshift pipelines', () => {
  it('starts a run (printing the existing one the second time), lists it and shows its steps, then verifies its artifacts', async () => {
    const started = await run(['start', 'report', '2026-11-29', '--input', '{"currency":"EUR"}', '--reason', 'first']);
    expect(started.code, started.stderr).toBe(0);
    expect(started.stdout).toMatch(/^started run \d+ of report for 2026-11-29: running/);
    const again = await run(['start', 'report', '2026-11-29', '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ created: false, run: { key: '2026-11-29' } });
    await drain(t.client({ pipelines: [report] }));
    const list = await run(['list', '--name', 'report', '--json']);
    expect(JSON.parse(list.stdout)).toMatchObject([{ pipeline: 'report', key: '2026-11-29', state: 'succeeded', steps: { done: 3, total: 3 } }]);
    const human = await run(['list']);
    expect(human.stdout).toMatch(/report\s+2026-11-29\s+succeeded\s+1\s+3\/3/);
    const show = await run(['show', 'report', '2026-11-29']);
    expect(show.code, show.stderr).toBe(0);
    for (const line of [
      /^state\s+succeeded$/m,
      /^load\s+succeeded\s+1\s+\d+ completed/m,
      /^total\s+load\s+succeeded/m,
      /^email\s+total\s+optional effect\s+succeeded/m,
      /rows\.json\s+load\s+\d+\s+[0-9a-f]{64}/,
      /total\.csv\s+total/,
    ]) {
      expect(show.stdout).toMatch(line);
    }
    const json = JSON.parse((await run(['show', 'report', '2026-11-29', '--json'])).stdout);
    expect(json.stepList.map((s: { name: string; outputBytes: number }) => [s.name, s.outputBytes > 0])).toEqual([
      ['load', true],
      ['total', true],
      ['email', true],
    ]);
    const ok = await run(['verify', 'report', '2026-11-29']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('all 2 artifact(s)');
    const audit = await t.sql.query(`SELECT actor, action, reason FROM ${q()}.audit_log WHERE target = 'pipeline:report:2026-11-29' ORDER BY id`);
    expect(audit.rows).toEqual([
      { actor: 'ops@test', action: 'pipeline-start', reason: 'first' },
      { actor: 'ops@test', action: 'pipeline-start', reason: null },
      { actor: 'ops@test', action: 'pipeline-verify', reason: null },
    ]);
  });

  it('verify names each changed and deleted file and exits 1', async () => {
    await run(['start', 'report', '2026-11-30']);
    await drain(t.client({ pipelines: [report] }));
    writeFileSync(join(ARTIFACTS, 'report', '2026-11-30', 'rows.json'), '{"tampered":true}\n');
    rmSync(join(ARTIFACTS, 'report', '2026-11-30', 'total.csv'));
    const r = await run(['verify', 'report', '2026-11-30']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/rows\.json\s+changed/);
    expect(r.stdout).toMatch(/total\.csv\s+missing/);
    expect(r.stdout).toContain('2 of 2 artifact(s) differ: rows.json (changed), total.csv (missing)');
    const j = await run(['verify', 'report', '2026-11-30', '--json']);
    expect(j.code).toBe(1);
    expect(JSON.parse(j.stdout)).toMatchObject({
      ok: false,
      artifacts: [
        { name: 'rows.json', status: 'changed' },
        { name: 'total.csv', status: 'missing' },
      ],
    });
  });

  it('reruns a failed run, restarts from a step, and cancels a running one', async () => {
    await run(['start', 'report', '2026-12-01']);
    // The steps read PL_FAIL where they run: in this process's drain.
    process.env.PL_FAIL = '2026-12-01';
    try {
      await drain(t.client({ pipelines: [report] }));
    } finally {
      delete process.env.PL_FAIL;
    }
    const failed = JSON.parse((await run(['show', 'report', '2026-12-01', '--json'])).stdout);
    expect(failed).toMatchObject({ state: 'failed', reason: 'step "load" failed: the source was empty' });
    const rerun = await run(['rerun', 'report', '2026-12-01', '--reason', 'source refilled']);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toMatch(/: running$/m);
    await drain(t.client({ pipelines: [report] }));
    const restart = await run(['restart', 'report', '2026-12-01', '--from', 'total']);
    expect(restart.code, restart.stderr).toBe(0);
    expect(restart.stdout).toMatch(/running, generation 2/);
    const cancel = await run(['cancel', 'report', '2026-12-01', '--reason', 'not today']);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toMatch(/: cancelled$/m);
    const refused = await run(['cancel', 'report', '2026-12-01']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/NS_PIPELINE_INVALID_STATE/);
    const noStep = await run(['restart', 'report', '2026-12-01', '--from', 'nope']);
    expect(noStep.code).toBe(2);
  });

  it('cleans up a dry run, and refuses a live run with exit 1', async () => {
    await run(['start', 'report', '2026-12-02']);
    const dry = await run(['start', 'report', '2026-12-02', '--dry-run', '--json']);
    const dryId = JSON.parse(dry.stdout).run.id as string;
    await drain(t.client({ pipelines: [report] }));
    const shown = JSON.parse((await run(['show', 'report', '2026-12-02', '--dry-run', '--json'])).stdout);
    expect(shown).toMatchObject({ id: dryId, dryRun: true, state: 'succeeded' });
    expect(shown.stepList.find((s: { name: string }) => s.name === 'email').state).toBe('skipped');
    const cleaned = await run(['cleanup', 'report', '2026-12-02']);
    expect(cleaned.code, cleaned.stderr).toBe(0);
    expect(cleaned.stdout).toBe(`removed 1 dry run(s) of report for 2026-12-02: ${dryId}\n`);
    const refused = await run(['cleanup', 'report', '2026-12-02']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error NS_PIPELINE_CLEANUP_REFUSED: cleanup of pipeline "report" refused: key "2026-12-02" has a live run/);
    expect((await run(['show', 'report', '2026-12-02', '--json'])).code).toBe(0);
  });

  it('gives usage errors exit 2 and a missing run exit 1', async () => {
    const unknown = await run(['start', 'reprot', '2026-12-03']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/NS_UNKNOWN_PIPELINE: unknown pipeline "reprot"[\s\S]*did you mean "report"/);
    const badKey = await run(['start', 'report', 'yesterday']);
    expect(badKey.code).toBe(2);
    expect(badKey.stderr).toMatch(/NS_OPTIONS_INVALID[\s\S]*key/);
    const badJson = await run(['start', 'report', '2026-12-03', '--input', '{nope']);
    expect(badJson.code).toBe(2);
    const missing = await run(['show', 'report', '1999-01-01']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/NS_PIPELINE_RUN_NOT_FOUND/);
  });
});
