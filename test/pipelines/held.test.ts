import { describe, expect, it } from 'vitest';
import { definePipeline, type NightshiftEvent } from '../../src/index.js';
import { drain } from '../../src/testing/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { tempStore } from './support.js';

const t = useTestDatabase('plh');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const { store } = tempStore();

// The same pipeline in two deploys: v2 dropped the step `notify`.
const v1 = definePipeline({ name: 'deploy', store })
  .step('settle', async () => 'settled')
  .step('notify', { needs: ['settle'] }, async () => 'notified');
const v2 = definePipeline({ name: 'deploy', store }).step('settle', async () => 'settled');

describe('a run whose graph names a step the deployed code no longer has', () => {
  it('is held with the reason when that step becomes due, not stuck; deploying it back and rerunning finishes it', async () => {
    const old = t.client({ pipelines: [v1] });
    const { run } = await old.pipelines.start(v1, 'k1');
    const deployed = t.client({ pipelines: [v2] });
    const events: NightshiftEvent[] = [];
    deployed.on((e) => events.push(e));
    await drain(deployed);
    const held = await deployed.pipelines.getRun('deploy', 'k1');
    expect(held.state).toBe('held');
    expect(held.reason).toMatch(/step "notify" is in run \d+'s graph but no deployed code has it \(kind pipeline:deploy:notify\)/);
    expect(held.stepList.map((s) => [s.name, s.state])).toEqual([
      ['settle', 'succeeded'],
      ['notify', 'blocked'],
    ]);
    expect(events.filter((e) => e.type === 'pipeline.held')).toMatchObject([{ pipeline: 'deploy', runId: run.id }]);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'pipeline:deploy:notify'`)).rows[0].n).toBe(0);
    // The step is back in the deployed code: a rerun finishes the run.
    await old.pipelines.rerun(v1, 'k1');
    await drain(old);
    expect((await old.pipelines.getRun('deploy', 'k1')).state).toBe('succeeded');
  });

  it('is not held while some live process hosts the step (a rolling deploy): the step job is enqueued for it', async () => {
    // The newer process hosts only notify (so the older one runs settle and schedules notify).
    const newer = t.client({ pipelines: [v1], pollIntervalMs: 20, roles: { notify: { jobs: ['pipeline:deploy:notify'] } }, activeRoles: ['notify'] });
    await newer.start(); // registers the kind it hosts in the process registry
    const older = t.client({ pipelines: [v2] });
    await older.pipelines.start(v1.name, 'k2');
    expect((await drain(older)).jobs.map((j) => j.kind)).toEqual(['pipeline:deploy:settle']);
    await waitFor('the newer process to run notify', async () => (await older.pipelines.getRun('deploy', 'k2')).state === 'succeeded');
  });

  it('is held by the sweep when a due step waits unclaimed for a kind no code has', async () => {
    const old = t.client({ pipelines: [v1] });
    const { run } = await old.pipelines.start(v1, 'k3');
    await drain(old, { kinds: ['pipeline:deploy:settle'] }); // notify's job is enqueued, then the deploy happens
    const deployed = t.client({ pipelines: [v2] });
    expect(await deployed.pipelines.sweep({ heldAfterMs: 0 })).toMatchObject({ held: 1 });
    const held = await deployed.pipelines.getRun('deploy', 'k3');
    expect(held.state).toBe('held');
    expect(held.stepList.find((s) => s.name === 'notify')!.state).toBe('blocked');
    const jobs = await t.sql.query(`SELECT state::text FROM ${q()}.jobs_all WHERE kind = 'pipeline:deploy:notify' AND payload->>'run' = $1`, [run.id]);
    expect(jobs.rows.map((r) => r.state)).toEqual(['cancelled']);
    await old.pipelines.rerun(v1, 'k3');
    await drain(old);
    expect((await old.pipelines.getRun('deploy', 'k3')).state).toBe('succeeded');
  });
});

describe('a step whose job ended without recording it', () => {
  it("fails for good with the job's reason when the sweep finds it (here: the rescuer discarded the job on its last attempt)", async () => {
    let started = false;
    const p = definePipeline({ name: 'lost', store, maxAttempts: 1 }).step('only', async () => {
      started = true;
      await new Promise(() => undefined); // never returns: its worker is gone
    });
    const worker = t.client({ pipelines: [p], pollIntervalMs: 20, shutdownGraceMs: 0 });
    await worker.start();
    await worker.pipelines.start(p, 'k');
    await waitFor('the step to start', () => started);
    await waitFor('its start to be recorded (after 100 ms of running)', async () => (await t.sql.query(`SELECT 1 FROM ${q()}.jobs WHERE kind = 'pipeline:lost:only' AND started_at IS NOT NULL`)).rowCount === 1);
    // The worker "dies" (its lease lapses); the rescuer discards the job: no attempt is left.
    await t.sql.query(`UPDATE ${q()}.jobs SET lease_expires_at = now() - interval '1 second' WHERE kind = 'pipeline:lost:only'`);
    const ops = t.client({ pipelines: [p] });
    await ops.runMaintenance();
    expect((await t.sql.query(`SELECT state::text FROM ${q()}.jobs_all WHERE kind = 'pipeline:lost:only'`)).rows[0].state).toBe('discarded');
    expect(await ops.pipelines.sweep()).toMatchObject({ reconciled: 1 });
    const run = await ops.pipelines.getRun('lost', 'k');
    expect(run.state).toBe('failed');
    expect(run.reason).toMatch(/ended discarded without recording the step: attempts exhausted \(last one lost its lease\)/);
  });
});

describe('deadlines', () => {
  it('raises pipeline.deadline-missed once for a run still open past its deadline; the run keeps running', async () => {
    const p = definePipeline({ name: 'late', store, deadline: '1s' }).step('a', async () => 1);
    const ns = t.client({ pipelines: [p] });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    const { run } = await ns.pipelines.start(p, 'k');
    await waitFor('the deadline to pass on the database clock', async () => (await t.sql.query(`SELECT deadline_at < now() AS past FROM ${q()}.pipeline_runs WHERE id = $1`, [run.id])).rows[0].past);
    expect(await ns.pipelines.sweep()).toMatchObject({ deadlinesMissed: 1 });
    expect(await ns.pipelines.sweep()).toMatchObject({ deadlinesMissed: 0 });
    expect(events.filter((e) => e.type === 'pipeline.deadline-missed')).toMatchObject([{ pipeline: 'late', runId: run.id }]);
    const detail = await ns.pipelines.getRun('late', 'k');
    expect(detail.state).toBe('running');
    expect(detail.deadlineMissedAt).not.toBeNull();
  });
});
