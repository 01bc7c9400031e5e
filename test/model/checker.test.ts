import { describe, expect, it } from 'vitest';
import { checkObservation, suspectedBugs, verdictPasses } from './checker.js';
import type { InstanceRecord, JobRow, Observation, RunEntry } from './observation.js';
import type { Sample } from './sampler.js';
import type { WorkerSpec } from './scenario.js';

// The checker on hand-made observations (no processes, no database): it must flag what the model
// forbids, name the bug whose signature matches, and pass what the model allows.
const T0 = 1_000_000;

function instance(over: Partial<InstanceRecord> = {}): InstanceRecord {
  return { name: 'w0.0', spec: 0, pid: 100, startedAt: T0 - 2_000, readyAt: T0 - 1_000, exitAt: T0 + 60_000, killed: false, stop: { ms: 500, code: 0, signal: null }, output: '', logPath: '', ...over };
}

function job(over: Partial<JobRow> = {}): JobRow {
  return {
    id: '1', kind: 'model-alo', queue: 'mq0', state: 'completed', attempt: 1, maxAttempts: 3, dedupeKey: null, runAt: T0, expiresAt: null,
    createdAt: T0, finishedAt: T0 + 100, reason: null, errors: [], leaseToken: '7', leaseOwner: null, leaseExpiresAt: null, step: 0, copy: 0, ...over,
  };
}

function run(over: Partial<RunEntry> = {}): RunEntry {
  return { pid: 100, jobId: '1', attempt: 1, queue: 'mq0', token: '7', startMs: T0 + 10, endMs: T0 + 60, outcome: 'ok', ...over };
}

/** Samples every 250 ms from `from` to `to` in which `due` jobs wait. */
function samples(from: number, to: number, due: Sample['due'] = []): Sample[] {
  const out: Sample[] = [];
  for (let t = from; t <= to; t += 250) out.push({ at: t, due, overdue: [], duplicateKeys: [] });
  return out;
}

function observation(over: Partial<Observation> & { workers?: WorkerSpec[] } = {}): Observation {
  const workers = over.workers ?? [{ concurrency: 2, queues: [{ name: 'mq0' }], prefetch: 0, pollMs: 1_000 }];
  return {
    scenario: { workers, steps: [{ atMs: 0, count: 1, job: { kind: 'alo', queue: 'mq0', plan: ['ok'], workMs: 50 } }], faults: [] },
    t0: T0, drainedAt: T0 + 30_000, drainTimedOut: false, instances: [instance()], faults: [],
    enqueues: [{ step: 0, copy: 0, at: T0, id: '1', deduped: false, error: undefined }],
    samples: samples(T0, T0 + 30_000), jobs: [job()], effects: [{ jobId: '1', attempt: 1, pid: 100, token: '7', note: 'ok', at: T0 + 11, endedAt: T0 + 60, outcome: 'ok' }],
    runs: [run()], harnessErrors: [], ...over,
  };
}

describe('model checker', () => {
  it('passes a run the model allows', () => {
    const v = checkObservation(observation());
    expect(v.violations).toEqual([]);
  });

  it('flags a due job left waiting while a slot was free, as bug 1 when other queues can hold every slot', () => {
    const waiting = { id: '1', queue: 'mq1', attempt: 0, runAt: T0, createdAt: T0 };
    const workers: WorkerSpec[] = [{ concurrency: 2, queues: [{ name: 'mq0' }, { name: 'mq1' }], prefetch: 0, pollMs: 1_000 }];
    const obs = observation({ workers, samples: samples(T0, T0 + 20_000, [waiting]), jobs: [job({ queue: 'mq1', state: 'available', attempt: 0, leaseToken: null })], runs: [], effects: [] });
    const v = checkObservation(obs);
    expect(v.violations.map((x) => x.invariant)).toEqual(['starts-when-free', 'nothing-lost']);
    expect(suspectedBugs(v)).toEqual(['bug1']);
    expect(verdictPasses(v, { bug1: false, bug2: false, bug3: false, bug4: false, bug5: false, listenerStopHang: false })).toBe(false);
    // With a limit on the other queue, the signature no longer matches: the violation stands alone.
    const limited = checkObservation({ ...obs, scenario: { ...obs.scenario, workers: [{ ...workers[0]!, queues: [{ name: 'mq0', limit: 1 }, { name: 'mq1' }] }] } });
    expect(limited.violations.length).toBeGreaterThan(0);
    expect(suspectedBugs(limited)).toEqual([]);
  });

  it('blames bug 4 when the only free slot is one a timed-out handler still holds', () => {
    const waiting = { id: '2', queue: 'mq0', attempt: 0, runAt: T0 + 4_000, createdAt: T0 + 4_000 };
    const workers: WorkerSpec[] = [{ concurrency: 1, queues: [{ name: 'mq0' }], prefetch: 0, pollMs: 1_000 }];
    const deaf = run({ token: '7', startMs: T0, endMs: T0 + 15_000, outcome: 'ok' });
    const obs = observation({ workers, samples: samples(T0 + 4_000, T0 + 15_000, [waiting]), runs: [deaf], jobs: [job({ state: 'discarded', reason: 'attempts exhausted (1 of 1)' })] });
    obs.effects[0]!.note = 'deaf';
    const v = checkObservation(obs);
    expect(v.violations.map((x) => x.invariant)).toEqual(['starts-when-free']);
    expect(suspectedBugs(v)).toEqual(['bug4']);
  });

  it('flags a job the rescuer discarded although no handler ran its last attempt, as bug 3 when its holder was SIGKILLed', () => {
    const killed = instance({ exitAt: T0 + 1_000, killed: true, stop: undefined });
    const discarded = job({
      state: 'discarded', reason: 'attempts exhausted (last one lost its lease)', maxAttempts: 1, finishedAt: T0 + 5_000,
      errors: [{ attempt: 1, at: new Date(T0 + 5_000).toISOString(), kind: 'lease-expired', message: 'lease expired: worker vm:100 stopped renewing it (crashed, paused or cut off)' }],
    });
    const obs = observation({ instances: [killed], faults: [{ kind: 'sigkill', targetPid: 100, backendPid: null, startedAt: T0 + 1_000, endedAt: T0 + 1_000, detail: 'w0.0', instance: 'w0.0' }], jobs: [discarded], runs: [], effects: [] });
    const v = checkObservation(obs);
    expect(v.violations.map((x) => x.invariant)).toEqual(['finished-with-cause']);
    expect(suspectedBugs(v)).toEqual(['bug3']);
  });

  it('flags an at-most-once job run twice, and an at-least-once rerun no fault or failure explains', () => {
    const twice = [run({ token: '7' }), run({ token: '8', attempt: 2, startMs: T0 + 200, endMs: T0 + 250 })];
    const amo = checkObservation(observation({ jobs: [job({ kind: 'model-amo', leaseToken: '8', attempt: 2 })], runs: twice }));
    expect(amo.violations.map((x) => x.invariant)).toEqual(['no-unexplained-rerun']);
    const alo = checkObservation(observation({ jobs: [job({ leaseToken: '8', attempt: 2 })], runs: twice }));
    expect(alo.violations.map((x) => x.invariant)).toEqual(['no-unexplained-rerun']);
    // A fault on the first run's process explains the second run.
    const hit = checkObservation(observation({ jobs: [job({ leaseToken: '8', attempt: 2 })], runs: twice, faults: [{ kind: 'sigstop', targetPid: 100, backendPid: null, startedAt: T0 + 20, endedAt: T0 + 150, detail: 'w0.0', instance: 'w0.0' }] }));
    expect(hit.violations).toEqual([]);
  });

  it('flags an expired lease left unrescued, as bug 2 when a pending job holds its dedupe key', () => {
    const stalled = samples(T0, T0 + 20_000).map((s) => ({ ...s, overdue: [{ id: '1', kind: 'model-alo', owner: 'vm:99', expiredMs: s.at - T0, keyTaken: true }] }));
    const v = checkObservation(observation({ samples: stalled }));
    expect(v.violations.map((x) => x.invariant)).toEqual(['rescue-progresses']);
    expect(suspectedBugs(v)).toEqual(['bug2']);
  });
});
