import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { UNSTARTED_RESCUES } from '../../src/db/jobs-maintenance.js';
import { defineJob } from '../../src/index.js';
import type { Enqueuer } from '../../src/jobs/enqueuer.js';
import { JobRegistry } from '../../src/jobs/job-registry.js';
import { systemClock } from '../../src/lifecycle/clock.js';
import { EventBus } from '../../src/telemetry/events.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { ActiveJobs } from '../../src/worker/active-jobs.js';
import { Completer } from '../../src/worker/completer.js';
import { JobRunner } from '../../src/worker/job-runner.js';
import { Outcomes } from '../../src/worker/outcomes.js';
import { StartMarks } from '../../src/worker/start-marks.js';
import { useTestDatabase } from '../support/db.js';
import { observedDatabase } from '../support/observed-database.js';
import { waitFor } from '../support/wait.js';

// A suspect (a job lost unstarted UNSTARTED_RESCUES times: its handler may kill the process the
// moment it starts) must not start while the outcome of a job whose handler returned before it is
// still being written: a process it takes down then loses that write, and the job — which ran and
// succeeded — is rescued as lost, charged its attempt, and on its last one discarded (found by the
// poison-pill test: an innocent that ran just before the pill was discarded).

const t = useTestDatabase();
t.migrateBeforeAll();
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Lets every queued promise callback and immediate run, then one round trip to the database. */
const settle = async () => {
  for (let i = 0; i < 3; i++) await new Promise<void>((r) => setImmediate(r));
  await t.sql.query('SELECT 1');
};

describe('JobRunner: a suspect’s start', () => {
  it('waits until the outcome of a job whose handler returned before it is written', async () => {
    const db = observedDatabase(t.url, t.schema);
    cleanups.push(() => db.close());
    const calls: string[] = [];
    const payload = z.object({});
    const quick = defineJob({ kind: 'jr-quick', queue: 'jr', payload, priority: -1, run: () => void calls.push('quick') });
    const suspect = defineJob({ kind: 'jr-suspect', queue: 'jr', payload, run: () => void calls.push('suspect') });
    const producer = t.client({ jobs: [quick, suspect] });
    const a = await producer.enqueue(quick, {});
    const s = await producer.enqueue(suspect, {});
    const unstarted = Array.from({ length: UNSTARTED_RESCUES }, () => ({ kind: 'lease-expired', unstarted: true }));
    await t.sql.query(`UPDATE "${t.schema}".jobs SET errors = $2::jsonb WHERE id = $1`, [s.id, JSON.stringify(unstarted)]);

    const events = new EventBus();
    const logger = silentLogger();
    const errors: unknown[] = [];
    const onError = (_where: string, err: unknown) => void errors.push(err);
    const active = new ActiveJobs();
    const completer = new Completer({ database: db.db, maxBatch: 100, retryForMs: 1_000, onError: (err) => onError('complete', err) });
    const outcomes = new Outcomes({ database: db.db, active, completer, events, logger, owner: 'unit-runner', clock: systemClock, onError });
    const runner = new JobRunner({
      database: db.db,
      registry: new JobRegistry([quick, suspect]),
      outcomes,
      enqueuer: undefined as unknown as Enqueuer, // no handler here enqueues
      events,
      logger,
      leaseMs: 60_000,
      marks: new StartMarks(db.db, (err) => onError('record start', err)),
    });
    const rows = await db.db.jobs.claim({ queue: 'jr', kinds: ['jr-quick', 'jr-suspect'], limit: 2, owner: 'unit-runner', leaseMs: 60_000 });
    expect(rows.map((r) => [r.id, r.start_first])).toEqual([
      [a.id, false],
      [s.id, true],
    ]);
    const [quickJob, suspectJob] = rows.map((r) => active.add(r));

    // The quick job's completion is held on its way to the server; its slot goes to the suspect
    // the moment its handler returns, as in the worker.
    const release = db.hold('job_complete');
    let suspectRun: Promise<unknown> | undefined;
    const quickRun = runner.run(quickJob!, () => void (suspectRun = runner.run(suspectJob!)));
    await waitFor('the quick job’s completion to be sent', () => db.names().includes('job_complete'));
    await settle();
    expect(calls).toEqual(['quick']);
    expect(db.names()).not.toContain('job_start');

    release();
    await quickRun;
    await waitFor('the suspect’s handler to be called', () => calls.includes('suspect'));
    await suspectRun;
    const names = db.names();
    expect(names.indexOf('job_start')).toBeGreaterThan(names.indexOf('job_complete'));
    const state = await t.sql.query(`SELECT id::text, state::text FROM "${t.schema}".jobs_all WHERE id = ANY($1::bigint[]) ORDER BY id`, [[a.id, s.id]]);
    expect(state.rows).toEqual([
      { id: a.id, state: 'completed' },
      { id: s.id, state: 'completed' },
    ]);
    expect(errors).toEqual([]);
  });
});
