/**
 * A generated scenario of the model-based test: worker processes (what each claims, how many at
 * once, how far ahead, how often it polls), a timeline of enqueues and a timeline of faults. Plain
 * JSON, so a scenario can be printed, saved and replayed (`MODEL_SCENARIO=<file>`).
 */

/** The queues the model uses. */
export const MODEL_QUEUES = ['mq0', 'mq1', 'mq2'] as const;
export type ModelQueue = (typeof MODEL_QUEUES)[number];

/** One worker process of the scenario; a killed one may be replaced by a process of the same spec. */
export interface WorkerSpec {
  concurrency: number;
  /** In the order the process is configured with; `limit` is the queue's own concurrency (none: the process's). */
  queues: { name: ModelQueue; limit?: number }[];
  prefetch: number;
  pollMs: number;
}

/** What a handler does on one attempt. */
export type Behaviour =
  /** works `workMs`, then returns */
  | 'ok'
  /** works `workMs`, then throws */
  | 'fail'
  /** works past the kind's timeout, honouring its abort signal */
  | 'hang'
  /** works past the kind's timeout ignoring its abort signal, for `DEAF_MS` */
  | 'deaf';

/**
 * Fleet-wide concurrency limits of one model kind (flow control): at most `total` of its jobs
 * running at once across every process, at most `perKey` per limit key. Every process and the
 * producer declare the same limits (they are counted in the database).
 */
export interface KindLimits {
  total?: number;
  perKey?: number;
}

/** The limit keys a job may carry; a job with none gets one from its copy number (see limitKeyOf). */
export const MODEL_LIMIT_KEYS = ['a', 'b', 'c'] as const;

/** The scenario's limits on the two kinds (none: no flow control). */
export interface ModelLimits {
  alo?: KindLimits;
  amo?: KindLimits;
}

/** One job as the scenario enqueues it. Times are offsets from the start of the timeline (ms). */
export interface JobSpec {
  kind: 'alo' | 'amo';
  queue: ModelQueue;
  /** Behaviour of attempt 1, 2, …; the last repeats. */
  plan: Behaviour[];
  workMs: number;
  maxAttempts?: number;
  dedupeKey?: string;
  debounceMs?: number;
  /** Due after this delay: `delayMs`, or the same as a `runAt` date. */
  delay?: { ms: number; as: 'delayMs' | 'runAt' };
  /** A deadline this long after the job is due: `maxAgeMs` (counted from the enqueue) or `expiresAt`. */
  deadline?: { afterDueMs: number; as: 'maxAgeMs' | 'expiresAt' };
  /** The job's key under a per-key limit of its kind (none: one of MODEL_LIMIT_KEYS by its copy number). */
  limitKey?: string;
}

/** Enqueues at `atMs`: one job, or `count` copies of it in one `enqueueMany`. */
export interface EnqueueStep {
  atMs: number;
  job: JobSpec;
  count: number;
}

/** A fault at `atMs` against the `worker`-th worker spec's live process. */
export type FaultStep =
  | { atMs: number; worker: number; kind: 'kill'; restart: boolean }
  | { atMs: number; worker: number; kind: 'pause'; pauseMs: number }
  | { atMs: number; worker: number; kind: 'conn-kill' }
  | { atMs: number; worker: number; kind: 'listen-cut' };

/** A whole scenario. */
export interface ModelScenario {
  workers: WorkerSpec[];
  steps: EnqueueStep[];
  faults: FaultStep[];
  /** Fleet-wide limits on the kinds (absent in scenarios saved before flow control). */
  limits?: ModelLimits;
}

/** The limit names of a kind's limits, as the kinds declare them (`name` is prefixed `limit:` by nightshift). */
export const limitName = (kind: 'alo' | 'amo', which: 'total' | 'perKey') => `model-${kind}-${which === 'total' ? 'total' : 'key'}`;

/** The stored name of a limit: what the jobs' limit keys begin with. */
export const storedLimitName = (kind: 'alo' | 'amo', which: 'total' | 'perKey') => `limit:${limitName(kind, which)}`;

/** Every limit of the scenario by stored name, with its maximum. */
export function limitMaxes(s: Pick<ModelScenario, 'limits'>): Map<string, number> {
  const out = new Map<string, number>();
  for (const kind of ['alo', 'amo'] as const) {
    const l = s.limits?.[kind];
    if (l?.total !== undefined) out.set(storedLimitName(kind, 'total'), l.total);
    if (l?.perKey !== undefined) out.set(storedLimitName(kind, 'perKey'), l.perKey);
  }
  return out;
}

/** Settings every scenario shares: the kinds' timeouts, leases, bounds of the model. */
export const MODEL_SETTINGS = {
  /** Both kinds' `timeoutMs`. Generated work of an `ok` or `fail` attempt stays well below it. */
  timeoutMs: 3_000,
  /** How long a `deaf` handler runs, its abort signal ignored. */
  deafMs: 15_000,
  leaseMs: 3_000,
  heartbeatMs: 500,
  maintenanceMs: 500,
  shutdownGraceMs: 2_000,
  /** The kinds' default attempts (an enqueue may set fewer or more). */
  maxAttempts: 3,
  /** The kinds' back-off: short, no jitter, so a run retries within seconds. */
  backoff: { initialMs: 200, factor: 2, maxMs: 1_000, jitter: 0 },
};

function jobText(j: JobSpec): string {
  const parts = [`${j.kind} ${j.queue} plan=${j.plan.join(',')} work=${j.workMs}ms`];
  if (j.maxAttempts !== undefined) parts.push(`maxAttempts=${j.maxAttempts}`);
  if (j.dedupeKey !== undefined) parts.push(`key=${j.dedupeKey}`);
  if (j.debounceMs !== undefined) parts.push(`debounce=${j.debounceMs}ms`);
  if (j.delay) parts.push(`${j.delay.as}=+${j.delay.ms}ms`);
  if (j.deadline) parts.push(`${j.deadline.as}=due+${j.deadline.afterDueMs}ms`);
  if (j.limitKey !== undefined) parts.push(`limitKey=${j.limitKey}`);
  return parts.join(' ');
}

/** The scenario as readable lines (a shrunk counterexample is printed this way, and as JSON). */
export function describeScenario(s: ModelScenario): string {
  const lines: string[] = [];
  for (const kind of ['alo', 'amo'] as const) {
    const l = s.limits?.[kind];
    if (!l || (l.total === undefined && l.perKey === undefined)) continue;
    const parts = [l.total !== undefined ? `${l.total} in total` : '', l.perKey !== undefined ? `${l.perKey} per key` : ''].filter(Boolean);
    lines.push(`limits on ${kind}: at most ${parts.join(' and ')} running across the fleet`);
  }
  s.workers.forEach((w, i) => {
    const queues = w.queues.map((q) => (q.limit === undefined ? q.name : `${q.name}(${q.limit})`)).join(', ');
    lines.push(`worker w${i}: concurrency ${w.concurrency}, queues [${queues}], prefetch ${w.prefetch}, poll ${w.pollMs} ms`);
  });
  const events: { at: number; text: string }[] = [
    ...s.steps.map((st, i) => ({ at: st.atMs, text: `[step ${i}] enqueue ${st.count > 1 ? `${st.count} × ` : ''}${jobText(st.job)}` })),
    ...s.faults.map((f) => ({
      at: f.atMs,
      text:
        f.kind === 'kill'
          ? `SIGKILL w${f.worker}${f.restart ? ' (replaced)' : ''}`
          : f.kind === 'pause'
            ? `SIGSTOP w${f.worker} for ${f.pauseMs} ms`
            : f.kind === 'conn-kill'
              ? `terminate every backend of w${f.worker}`
              : `silently cut the LISTEN connection of w${f.worker}`,
    })),
  ].sort((a, b) => a.at - b.at);
  for (const e of events) lines.push(`  t+${String(e.at).padStart(5)} ms  ${e.text}`);
  return lines.join('\n');
}

/** How long the timeline lasts: the last step or fault (pauses included). */
export function timelineMs(s: ModelScenario): number {
  const ends = [0, ...s.steps.map((x) => x.atMs), ...s.faults.map((f) => f.atMs + (f.kind === 'pause' ? f.pauseMs : 0))];
  return Math.max(...ends);
}
