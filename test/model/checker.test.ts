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
    id: '1',
    kind: 'model-alo',
    queue: 'mq0',
    state: 'completed',
    attempt: 1,
    maxAttempts: 3,
    dedupeKey: null,
    runAt: T0,
    expiresAt: null,
    createdAt: T0,
    finishedAt: T0 + 100,
    reason: null,
    errors: [],
    leaseToken: '7',
    leaseOwner: null,
    leaseExpiresAt: null,
    step: 0,
    copy: 0,
    ...over,
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
    t0: T0,
    drainedAt: T0 + 30_000,
    drainTimedOut: false,
    instances: [instance()],
    faults: [],
    enqueues: [{ step: 0, copy: 0, at: T0, id: '1', deduped: false, error: undefined }],
    samples: samples(T0, T0 + 30_000),
    jobs: [job()],
    effects: [{ jobId: '1', attempt: 1, pid: 100, token: '7', note: 'ok', at: T0 + 11, endedAt: T0 + 60, outcome: 'ok' }],
    runs: [run()],
    harnessErrors: [],
    ...over,
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
      state: 'discarded',
      reason: 'attempts exhausted (last one lost its lease)',
      maxAttempts: 1,
      finishedAt: T0 + 5_000,
      errors: [{ attempt: 1, at: new Date(T0 + 5_000).toISOString(), kind: 'lease-expired', message: 'lease expired: worker vm:100 stopped renewing it (crashed, paused or cut off)' }],
    });
    const obs = observation({
      instances: [killed],
      faults: [{ kind: 'sigkill', targetPid: 100, backendPid: null, startedAt: T0 + 1_000, endedAt: T0 + 1_000, detail: 'w0.0', instance: 'w0.0' }],
      jobs: [discarded],
      runs: [],
      effects: [],
    });
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
    const hit = checkObservation(
      observation({
        jobs: [job({ leaseToken: '8', attempt: 2 })],
        runs: twice,
        faults: [{ kind: 'sigstop', targetPid: 100, backendPid: null, startedAt: T0 + 20, endedAt: T0 + 150, detail: 'w0.0', instance: 'w0.0' }],
      }),
    );
    expect(hit.violations).toEqual([]);
  });

  it('flags an expired lease left unrescued, as bug 2 when a pending job holds its dedupe key', () => {
    const stalled = samples(T0, T0 + 20_000).map((s) => ({ ...s, overdue: [{ id: '1', kind: 'model-alo', owner: 'vm:99', expiredMs: s.at - T0, keyTaken: true }] }));
    const v = checkObservation(observation({ samples: stalled }));
    expect(v.violations.map((x) => x.invariant)).toEqual(['rescue-progresses']);
    expect(suspectedBugs(v)).toEqual(['bug2']);
  });

  describe('fleet-wide limits', () => {
    // Two jobs of one key under a limit of 1 per key (and 2 in total) on the at-least-once kind.
    const limits = { alo: { total: 2, perKey: 1 } };
    const key = 'limit:model-alo-key#a';
    const steps = [
      { atMs: 0, count: 1, job: { kind: 'alo' as const, queue: 'mq0' as const, plan: ['ok' as const], workMs: 500, limitKey: 'a' } },
      { atMs: 0, count: 1, job: { kind: 'alo' as const, queue: 'mq0' as const, plan: ['ok' as const], workMs: 500, limitKey: 'a' } },
    ];
    const jobs = [job({ id: '1', step: 0 }), job({ id: '2', step: 1, leaseToken: '8', finishedAt: T0 + 1_000 })];
    const effects = [
      { jobId: '1', attempt: 1, pid: 100, token: '7', note: 'ok', at: T0 + 11, endedAt: T0 + 500, outcome: 'ok' },
      { jobId: '2', attempt: 1, pid: 101, token: '8', note: 'ok', at: T0 + 301, endedAt: T0 + 800, outcome: 'ok' },
    ];
    const limited = (over: Partial<Observation> = {}) => {
      const enqueues = [0, 1].map((step) => ({ step, copy: 0, at: T0, id: String(step + 1), deduped: false, error: undefined }));
      const base = observation({ instances: [instance(), instance({ name: 'w1.0', spec: 1, pid: 101 })], jobs, effects, enqueues, ...over });
      const workers = [base.scenario.workers[0]!, base.scenario.workers[0]!];
      return { ...base, scenario: { ...base.scenario, workers, steps, limits } };
    };
    const first = run({ jobId: '1', token: '7', startMs: T0 + 10, endMs: T0 + 500 });
    const second = (startMs: number) => run({ jobId: '2', pid: 101, token: '8', startMs, endMs: startMs + 500 });

    it('passes runs of one key one after the other', () => {
      expect(checkObservation(limited({ runs: [first, second(T0 + 500)] })).violations).toEqual([]);
    });

    it('flags two runs of a key with a limit of 1 that overlap, and a sample that saw two leases of it', () => {
      const v = checkObservation(limited({ runs: [first, second(T0 + 300)] }));
      expect(v.violations.map((x) => x.invariant)).toEqual(['limit-holds']);
      expect(v.violations[0]!.detail).toContain(key);
      const both = samples(T0, T0 + 30_000).map((x) =>
        x.at === T0 + 250
          ? {
              ...x,
              limited: [
                { id: '1', token: '7', keys: [key] },
                { id: '2', token: '8', keys: [key] },
              ],
            }
          : x,
      );
      // The runs one after the other, but a sample saw both leases held at once.
      const v2 = checkObservation(limited({ runs: [first, second(T0 + 500)], samples: both }));
      expect(v2.violations.map((x) => x.invariant)).toEqual(['limit-holds']);
      expect(v2.violations[0]!.detail).toContain('2 running jobs held');
    });

    it("counts a SIGKILLed worker's run until a sample last saw its lease, and a frozen one's only while it provably held it", () => {
      // Killed at +100: its lease was still seen running at +1000, when the second run had started.
      const killed = [instance({ exitAt: T0 + 100, killed: true, stop: undefined }), instance({ name: 'w1.0', spec: 1, pid: 101 })];
      const seen = samples(T0, T0 + 30_000).map((x) => (x.at <= T0 + 1_000 ? { ...x, limited: [{ id: '1', token: '7', keys: [key, 'limit:model-alo-total'] }] } : x));
      const crashed = [run({ jobId: '1', token: '7', startMs: T0 + 10, endMs: undefined, outcome: undefined }), second(T0 + 600)];
      const v = checkObservation(limited({ instances: killed, runs: crashed, samples: seen, jobs: [jobs[0]!, jobs[1]!] }));
      expect(v.violations.filter((x) => x.invariant === 'limit-holds').length).toBe(1);
      // Rescued before the second run started: no overlap of leases.
      expect(checkObservation(limited({ instances: killed, runs: [crashed[0]!, second(T0 + 1_100)], samples: seen })).violations.filter((x) => x.invariant === 'limit-holds')).toEqual([]);
      // Frozen from +100 to +2000 while its handler ran: after the freeze began, its run counts only while a sample saw its lease.
      const frozen = [{ kind: 'sigstop' as const, targetPid: 100, backendPid: null, startedAt: T0 + 100, endedAt: T0 + 2_000, detail: 'w0.0', instance: 'w0.0' }];
      const resumed = run({ jobId: '1', token: '7', startMs: T0 + 10, endMs: T0 + 2_100 });
      expect(checkObservation(limited({ faults: frozen, runs: [resumed, second(T0 + 600)] })).violations.filter((x) => x.invariant === 'limit-holds')).toEqual([]);
    });

    it('lets a limited job wait while its key is full, and flags it waiting while the key has room', () => {
      const waiting = { id: '2', queue: 'mq0', attempt: 0, runAt: T0, createdAt: T0 };
      const wait = samples(T0, T0 + 20_000, [waiting]);
      const pending = [jobs[0]!, job({ id: '2', step: 1, state: 'available', attempt: 0, leaseToken: null })];
      const full = wait.map((x) => ({ ...x, limited: [{ id: '1', token: '7', keys: [key] }] }));
      const long = run({ jobId: '1', token: '7', startMs: T0, endMs: T0 + 20_000 });
      const one = { instances: [instance()], effects: [effects[0]!] };
      expect(checkObservation(limited({ ...one, samples: full, jobs: pending, runs: [long] })).violations.filter((x) => x.invariant === 'starts-when-free')).toEqual([]);
      const room = checkObservation(limited({ ...one, samples: wait, jobs: pending, runs: [first] }));
      expect(room.violations.map((x) => x.invariant)).toContain('starts-when-free');
    });
  });
});
