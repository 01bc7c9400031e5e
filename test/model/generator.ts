/**
 * fast-check arbitraries of model scenarios. Plain records and arrays (no `chain`), so a failing
 * scenario shrinks well: queues and victims are indices mapped onto what the scenario has. Some
 * step shapes are weighted in because the bugs of issue 11 live in their combinations — bursts of
 * short single-attempt jobs (a crash among prefetched jobs), a keyed job followed by a delayed
 * repeat of its key while it runs (a dedupe follow-up), handlers deaf to their timeout filling a
 * process's slots.
 */
import fc from 'fast-check';
import {
  MODEL_LIMIT_KEYS,
  MODEL_QUEUES,
  type Behaviour,
  type EnqueueStep,
  type FaultStep,
  type JobSpec,
  type KindLimits,
  type ModelLimits,
  type ModelQueue,
  type ModelScenario,
  type WorkerSpec,
} from './scenario.js';

/** The size of generated scenarios. */
export interface Profile {
  maxWorkers: number;
  /** Steps and faults happen within this many ms. */
  horizonMs: number;
  maxGroups: number;
  maxFaults: number;
  maxDelayMs: number;
  maxBurst: number;
  /** The drain after the timeline waits at most this long. */
  drainMs: number;
}

export const PROFILES: Record<'short' | 'long', Profile> = {
  short: { maxWorkers: 2, horizonMs: 6_000, maxGroups: 6, maxFaults: 2, maxDelayMs: 5_000, maxBurst: 40, drainMs: 12_000 },
  long: { maxWorkers: 3, horizonMs: 20_000, maxGroups: 14, maxFaults: 5, maxDelayMs: 15_000, maxBurst: 80, drainMs: 30_000 },
};

const weighted = <T>(...pairs: [fc.Arbitrary<T>, number][]) => fc.oneof(...pairs.map(([arbitrary, weight]) => ({ arbitrary, weight })));
const maybe = <T>(arb: fc.Arbitrary<T>, weight: number) => weighted<T | undefined>([fc.constant(undefined), 10 - weight], [arb, weight]);

const behaviour: fc.Arbitrary<Behaviour> = weighted<Behaviour>([fc.constant('ok'), 13], [fc.constant('fail'), 4], [fc.constant('hang'), 1], [fc.constant('deaf'), 2]);
const workMs = weighted([fc.integer({ min: 0, max: 20 }), 5], [fc.integer({ min: 50, max: 500 }), 3], [fc.integer({ min: 1_000, max: 2_500 }), 2]);

const worker: fc.Arbitrary<WorkerSpec> = fc
  .record({
    concurrency: fc.integer({ min: 1, max: 4 }),
    queues: fc.shuffledSubarray([...MODEL_QUEUES], { minLength: 1 }),
    limits: fc.array(maybe(fc.integer({ min: 1, max: 4 }), 4), { minLength: 3, maxLength: 3 }),
    prefetch: fc.constantFrom(0, 8, 64),
    pollMs: weighted([fc.constant(1_000), 5], [fc.constant(2_000), 1], [fc.constant(30_000), 4]),
  })
  .map(({ concurrency, queues, limits, prefetch, pollMs }) => ({
    concurrency,
    queues: queues.map((name, i) => (limits[i] === undefined ? { name } : { name, limit: Math.min(limits[i]!, concurrency) })),
    prefetch,
    pollMs,
  }));

/** A job whose queue is an index into the queues the workers claim (mapped later). */
type RawJob = Omit<JobSpec, 'queue'> & { queue: number };

function job(p: Profile): fc.Arbitrary<RawJob> {
  return fc
    .record({
      kind: weighted<'alo' | 'amo'>([fc.constant('alo'), 7], [fc.constant('amo'), 3]),
      queue: fc.nat(2),
      plan: fc.array(behaviour, { minLength: 1, maxLength: 3 }),
      workMs,
      maxAttempts: maybe(fc.integer({ min: 1, max: 3 }), 4),
      dedupeKey: maybe(fc.constantFrom('k0', 'k1', 'k2'), 3),
      debounceMs: maybe(fc.integer({ min: 300, max: 3_000 }), 3),
      delay: maybe(fc.record({ ms: fc.integer({ min: 200, max: p.maxDelayMs }), as: fc.constantFrom<'delayMs' | 'runAt'>('delayMs', 'runAt') }), 4),
      deadline: maybe(fc.record({ afterDueMs: fc.integer({ min: 100, max: 8_000 }), as: fc.constantFrom<'maxAgeMs' | 'expiresAt'>('maxAgeMs', 'expiresAt') }), 2),
      limitKey: maybe(fc.constantFrom(...MODEL_LIMIT_KEYS), 7),
    })
    .map((j) => {
      // Debounce needs a key and sets the run time itself.
      const debounceMs = j.dedupeKey === undefined ? undefined : j.debounceMs;
      return strip({ ...j, debounceMs, delay: debounceMs === undefined ? j.delay : undefined });
    });
}

/** Drops undefined fields, so a printed scenario shows only what was chosen. */
function strip<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

type RawStep = Omit<EnqueueStep, 'job'> & { job: RawJob };

/** A fault whose victim may be named by a queue (an index, as for jobs): a process claiming it. */
type RawFault = FaultStep & { victimOf?: number };

/** Steps that belong together, and the faults that make them interesting. */
interface Group {
  steps: RawStep[];
  faults: RawFault[];
}

/** A SIGKILL (the victim replaced) `afterMs` after `atMs`, maybe. */
const crash = (p: Profile, afterMs: fc.Arbitrary<number>, weight: number) => maybe(fc.record({ afterMs, worker: fc.nat(p.maxWorkers - 1) }), weight);

function group(p: Profile): fc.Arbitrary<Group> {
  const at = fc.integer({ min: 0, max: p.horizonMs });
  const single: fc.Arbitrary<Group> = fc.record({ atMs: at, job: job(p), count: fc.constant(1) }).map((s) => ({ steps: [s], faults: [] }));
  // Many short jobs at once: the fetchers claim ahead of their slots; a crash may hit while they hold some.
  const burst: fc.Arbitrary<Group> = fc
    .record({
      atMs: at,
      queue: fc.nat(2),
      maxAttempts: weighted([fc.constant(1), 4], [fc.constant(2), 1]),
      workMs: fc.integer({ min: 0, max: 10 }),
      count: fc.integer({ min: 10, max: p.maxBurst }),
      crash: crash(p, fc.integer({ min: 50, max: 250 }), 6),
    })
    .map(({ atMs, queue, maxAttempts, workMs, count, crash: c }) => ({
      steps: [{ atMs, count, job: { kind: 'alo' as const, queue, plan: ['ok' as const], workMs, maxAttempts } }],
      faults: c ? [{ atMs: atMs + c.afterMs, worker: c.worker, kind: 'kill' as const, restart: true, victimOf: queue }] : [],
    }));
  // A keyed job that runs for a while, and a delayed repeat of its key while it runs (a follow-up);
  // the first one fails, or its process may crash, while the follow-up holds the key.
  const followUp: fc.Arbitrary<Group> = fc
    .record({
      atMs: at,
      queue: fc.nat(2),
      key: fc.constantFrom('k0', 'k1', 'k2'),
      first: fc.constantFrom<Behaviour>('ok', 'fail'),
      workMs: fc.integer({ min: 1_500, max: 2_500 }),
      gapMs: fc.integer({ min: 300, max: 1_200 }),
      delayMs: fc.integer({ min: 2_000, max: p.maxDelayMs + 3_000 }),
      crash: crash(p, fc.integer({ min: 1_300, max: 1_500 }), 4),
    })
    .map(({ atMs, queue, key, first, workMs, gapMs, delayMs, crash: c }) => ({
      steps: [
        { atMs, count: 1, job: { kind: 'alo' as const, queue, plan: [first, 'ok' as const], workMs, dedupeKey: key } },
        { atMs: atMs + gapMs, count: 1, job: { kind: 'alo' as const, queue, plan: ['ok' as const], workMs: 10, dedupeKey: key, delay: { ms: delayMs, as: 'delayMs' as const } } },
      ],
      faults: c ? [{ atMs: atMs + c.afterMs, worker: c.worker, kind: 'kill' as const, restart: true, victimOf: queue }] : [],
    }));
  // Handlers deaf to their timeout, as many as a process may have slots, then a job that waits for one.
  const deafCrowd: fc.Arbitrary<Group> = fc
    .record({ atMs: at, queue: fc.nat(2), count: fc.integer({ min: 1, max: 4 }), laterMs: fc.integer({ min: 3_500, max: 6_000 }) })
    .map(({ atMs, queue, count, laterMs }) => ({
      steps: [
        { atMs, count, job: { kind: 'alo' as const, queue, plan: ['deaf' as const], workMs: 0, maxAttempts: 1 } },
        { atMs: atMs + laterMs, count: 1, job: { kind: 'alo' as const, queue, plan: ['ok' as const], workMs: 10 } },
      ],
      faults: [],
    }));
  // Jobs of one limit key at once, longer than a claim: under a limit they queue for its slots; a
  // process claiming them may crash while it holds some (its slots free only at the rescue).
  const limitCrowd: fc.Arbitrary<Group> = fc
    .record({
      atMs: at,
      queue: fc.nat(2),
      kind: weighted<'alo' | 'amo'>([fc.constant('alo'), 3], [fc.constant('amo'), 1]),
      key: fc.constantFrom(...MODEL_LIMIT_KEYS),
      count: fc.integer({ min: 2, max: 6 }),
      workMs: fc.integer({ min: 100, max: 800 }),
      crash: crash(p, fc.integer({ min: 150, max: 1_000 }), 3),
    })
    .map(({ atMs, queue, kind, key, count, workMs, crash: c }) => ({
      steps: [{ atMs, count, job: { kind, queue, plan: ['ok' as const], workMs, limitKey: key } }],
      faults: c ? [{ atMs: atMs + c.afterMs, worker: c.worker, kind: 'kill' as const, restart: true, victimOf: queue }] : [],
    }));
  return weighted([single, 6], [burst, 2], [followUp, 2], [deafCrowd, 1], [limitCrowd, 2]);
}

function fault(p: Profile): fc.Arbitrary<FaultStep> {
  const at = fc.integer({ min: 500, max: p.horizonMs });
  const w = fc.nat(p.maxWorkers - 1);
  return weighted<FaultStep>(
    [fc.record({ atMs: at, worker: w, kind: fc.constant('kill' as const), restart: weighted([fc.constant(true), 8], [fc.constant(false), 2]) }), 4],
    [fc.record({ atMs: at, worker: w, kind: fc.constant('pause' as const), pauseMs: fc.integer({ min: 1_000, max: 6_000 }) }), 2],
    [fc.record({ atMs: at, worker: w, kind: fc.constant('conn-kill' as const) }), 2],
    [fc.record({ atMs: at, worker: w, kind: fc.constant('listen-cut' as const) }), 1],
  );
}

/**
 * Fleet-wide limits of one kind: in total, per key, or both. Mostly small, so that they are hit;
 * now and then large (a total of 12–40, 8–20 per key), so that claims switch between room mode
 * (four claimers' batches fit under the smallest limit) and exclusive claims as the running jobs
 * come and go (claim_limited, 0011).
 */
const sized = (small: number, large: [number, number]) => fc.oneof({ arbitrary: fc.integer({ min: 1, max: small }), weight: 3 }, { arbitrary: fc.integer({ min: large[0], max: large[1] }), weight: 1 });
const kindLimits: fc.Arbitrary<KindLimits> = fc.record({ total: maybe(sized(4, [12, 40]), 6), perKey: maybe(sized(2, [8, 20]), 7) }).map((l) => strip(l));

/** The scenario's limits: in most scenarios (npm test runs only three), on one kind or both. */
const modelLimits: fc.Arbitrary<ModelLimits | undefined> = maybe(
  fc.record({ alo: maybe(kindLimits, 8), amo: maybe(kindLimits, 5) }).map((l) => strip({ alo: nonEmpty(l.alo), amo: nonEmpty(l.amo) })),
  7,
);

function nonEmpty(l: KindLimits | undefined): KindLimits | undefined {
  return l && (l.total !== undefined || l.perKey !== undefined) ? l : undefined;
}

/** Scenarios of the given size. */
export function scenarioArbitrary(p: Profile): fc.Arbitrary<ModelScenario> {
  return fc
    .record({
      workers: fc.array(worker, { minLength: 1, maxLength: p.maxWorkers }),
      groups: fc.array(group(p), { minLength: 1, maxLength: p.maxGroups }),
      faults: fc.array(fault(p), { maxLength: p.maxFaults }),
      limits: modelLimits,
    })
    .map(({ workers, groups, faults, limits }) => {
      const claimed = MODEL_QUEUES.filter((q) => workers.some((w) => w.queues.some((x) => x.name === q)));
      const queue = (i: number): ModelQueue => claimed[i % claimed.length]!;
      const steps: EnqueueStep[] = groups.flatMap((g) => g.steps).map((s) => ({ ...s, job: { ...s.job, queue: queue(s.job.queue) } }));
      // Every kill starts a replacement process: a few of them at most.
      const all: RawFault[] = [...groups.flatMap((g) => g.faults), ...faults].slice(0, p.maxFaults + 1);
      const victim = (f: RawFault): number => {
        if (f.victimOf === undefined) return f.worker % workers.length;
        const claimers = workers.flatMap((w, i) => (w.queues.some((x) => x.name === queue(f.victimOf!)) ? [i] : []));
        return claimers[f.worker % claimers.length]!;
      };
      const resolved = all.map((f): FaultStep => {
        const { victimOf: _victimOf, ...fault } = f;
        return { ...fault, worker: victim(f) };
      });
      if (!limits || Object.keys(limits).length === 0) {
        // No limits: a limit key means nothing, and the printed scenario does not show one.
        return { workers, steps: steps.map(({ job: { limitKey: _k, ...job }, ...st }) => ({ ...st, job })), faults: resolved };
      }
      return { workers, steps, faults: resolved, limits };
    });
}
