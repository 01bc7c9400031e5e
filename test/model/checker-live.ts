/**
 * Invariants judged from the samples taken during the run: due jobs start once a slot is free,
 * expired leases are rescued, and dedupe keys hold (also: no unique violation in any worker's log).
 */
import { intersect, jobLimitKeys, roomStretches } from './checker-limits.js';
import type { BugId } from './known-open.js';
import type { JobRow, Observation } from './observation.js';
import type { DueJob } from './sampler.js';
import { MODEL_SETTINGS, type WorkerSpec } from './scenario.js';
import type { ModelBounds, ProcessView } from './timeline.js';
import type { Violation } from './violation.js';

/** A stretch of samples in which a job was due, unclaimed, on one attempt. */
interface Wait {
  job: DueJob;
  from: number;
  to: number;
}

/** A sample gap beyond this ends a wait: the job may have been claimed and handed back unseen. */
const MAX_GAP_MS = 1_500;

function waits(obs: Observation): Wait[] {
  const starts = new Map<string, number[]>();
  for (const r of obs.runs) (starts.get(r.jobId) ?? starts.set(r.jobId, []).get(r.jobId)!).push(r.startMs);
  const open = new Map<string, Wait>();
  const done: Wait[] = [];
  for (const s of obs.samples) {
    const seen = new Set<string>();
    for (const j of s.due) {
      seen.add(j.id);
      const w = open.get(j.id);
      const ranBetween = w && (starts.get(j.id) ?? []).some((t) => t > w.to && t <= s.at);
      if (w && w.job.attempt === j.attempt && s.at - w.to <= MAX_GAP_MS && !ranBetween) w.to = s.at;
      else {
        if (w) done.push(w);
        open.set(j.id, { job: j, from: s.at, to: s.at });
      }
    }
    for (const [id, w] of open) {
      if (!seen.has(id)) {
        done.push(w);
        open.delete(id);
      }
    }
  }
  return [...done, ...open.values()];
}

/**
 * Bug 1's signature: the fetchers of the process's other queues can hold every slot of the process
 * at once (each takes its free slots before its claim), so this queue's fetcher may find none free
 * and wait for a finished job to wake it — the issue's case is the first queue empty, no limits.
 */
export function starvedBySignature(spec: WorkerSpec, queue: string): boolean {
  const others = spec.queues.filter((x) => x.name !== queue);
  const promised = others.reduce((n, x) => n + Math.min(x.limit ?? spec.concurrency, spec.concurrency), 0);
  return others.length > 0 && promised >= spec.concurrency;
}

/** Whether the job became due by the passage of time (a delay, debounce or back-off) rather than with a notification. */
function dueByTime(j: DueJob, row: JobRow | undefined): boolean {
  if (j.attempt === 0) return j.runAt > j.createdAt + 100;
  const entry = row?.errors.filter((e) => e.attempt === j.attempt).at(-1);
  return entry === undefined || entry.kind === 'error' || entry.kind === 'timeout';
}

function livenessSuspects(v: ProcessView, w: Wait, from: number, to: number, row: JobRow | undefined): BugId[] {
  const q = w.job.queue;
  const suspects: BugId[] = [];
  // The slot was free only because the model ends a timed-out attempt: its handler still ran.
  if (v.stretches(from, to, (t) => !v.slotFree(q, t, false)).length > 0) suspects.push('bug4');
  if (starvedBySignature(v.spec, q)) suspects.push('bug1');
  // Polling still finds it, within one poll interval (and a claim).
  if (dueByTime(w.job, row) && to - from <= v.spec.pollMs + 1_000) suspects.push('bug5');
  return suspects;
}

/**
 * Every due job in a claimed queue starts within the bound once a process claiming it has a free
 * slot and can work, and — for a job under fleet-wide limits — every one of its limits has room.
 */
export function checkStarts(obs: Observation, views: ProcessView[], bounds: ModelBounds): Violation[] {
  const rows = new Map(obs.jobs.map((j) => [j.id, j]));
  const out: Violation[] = [];
  for (const w of waits(obs)) {
    if (w.to - w.from < bounds.startMs) continue;
    const row = rows.get(w.job.id);
    const keys = row ? jobLimitKeys(obs.scenario, row) : [];
    // A limited job may wait while one of its limits is full (the samples count the leases).
    const room = roomStretches(obs, keys, w.from, w.to);
    // Each stretch in which some process could have started it, long enough to break the bound, is
    // its own evidence (their causes may differ: a bug fixed must not hide behind one still open).
    for (const v of views) {
      if (!v.claims(w.job.queue)) continue;
      for (const [from, to] of intersect(
        v.stretches(w.from, w.to, (t) => v.canWork(t) && v.slotFree(w.job.queue, t, true)),
        room,
      )) {
        if (to - from < v.startBound(from)) continue;
        out.push({
          invariant: 'starts-when-free',
          job: w.job.id,
          detail: `job ${w.job.id} (${w.job.queue}, attempt ${w.job.attempt}) was due and unclaimed for ${Math.round(to - from)} ms from t+${Math.round(from - obs.t0)} while ${v.name} claimed its queue with a free slot${keys.length ? ` and its limits (${keys.join(', ')}) had room` : ''} (bound ${v.startBound(from)} ms)`,
          suspects: livenessSuspects(v, w, from, to, rows.get(w.job.id)),
        });
      }
    }
  }
  return out;
}

/** Whether some process could run maintenance (alive, not paused) for a whole rescue bound between `from` and `to`. */
export function couldRescue(views: ProcessView[], bounds: ModelBounds, from: number, to: number): boolean {
  return views.some((v) => v.stretches(from, to, (t) => v.canRescue(t)).some(([a, b]) => b - a >= bounds.rescueMs));
}

/** No expired lease stays unrescued past the bound while some process could run maintenance. */
export function checkRescue(obs: Observation, views: ProcessView[], bounds: ModelBounds): Violation[] {
  const worst = new Map<string, { at: number; expiredMs: number; owner: string | null; keyStall: boolean }>();
  for (const s of obs.samples) {
    const keyStall = s.overdue.some((o) => o.keyTaken);
    for (const o of s.overdue) {
      if (o.expiredMs <= bounds.rescueMs) continue;
      if (!couldRescue(views, bounds, s.at - o.expiredMs, s.at)) continue;
      const prev = worst.get(o.id);
      if (!prev || o.expiredMs > prev.expiredMs) worst.set(o.id, { at: s.at, expiredMs: o.expiredMs, owner: o.owner, keyStall: keyStall || (prev?.keyStall ?? false) });
    }
  }
  return [...worst].map(([id, w]) => ({
    invariant: 'rescue-progresses',
    job: id,
    detail: `job ${id}'s lease (owner ${w.owner ?? '?'}) had expired ${Math.round(w.expiredMs)} ms before t+${Math.round(w.at - obs.t0)} and it was still running, unrescued (bound ${bounds.rescueMs} ms)${w.keyStall ? '; a running job with an expired lease had its dedupe key held by a pending job' : ''}`,
    suspects: w.keyStall ? ['bug2'] : [],
  }));
}

const UNIQUE_VIOLATION = /jobs_dedupe|duplicate key value|unique constraint/i;

/** At most one pending job per (kind, key) at any time, and no unique violation in any worker's log. */
export function checkDedupe(obs: Observation): Violation[] {
  const out: Violation[] = [];
  for (const s of obs.samples) {
    for (const d of s.duplicateKeys) {
      out.push({ invariant: 'dedupe-holds', detail: `${d.n} pending ${d.kind} jobs with key ${d.key} at t+${Math.round(s.at - obs.t0)}`, suspects: [] });
    }
  }
  for (const i of obs.instances) {
    const lines = i.output.split('\n').filter((l) => UNIQUE_VIOLATION.test(l));
    if (lines.length) out.push({ invariant: 'dedupe-holds', detail: `${i.name} logged ${lines.length} unique violation(s), e.g. ${lines[0]!.slice(0, 300)}`, suspects: ['bug2'] });
  }
  return out;
}

/** Every process alive at the end exits with code 0 on SIGTERM within the bound. */
export function checkStops(obs: Observation, bounds: ModelBounds): Violation[] {
  // The worker's own bound: the grace, then an abort grace of a fifth of it (0.5 to 5 s), then the hand-back.
  const grace = MODEL_SETTINGS.shutdownGraceMs;
  const boundMs = grace + Math.min(5_000, Math.max(500, grace / 5)) + bounds.startMs;
  const out: Violation[] = [];
  for (const i of obs.instances) {
    if (!i.stop || (i.stop.code === 0 && i.stop.ms <= boundMs)) continue;
    const cut = obs.faults.some((f) => f.kind === 'listener-cut' && f.targetPid === i.pid);
    const how = i.stop.code === 0 ? `exited after ${i.stop.ms} ms` : `had not exited after ${i.stop.ms} ms (ended by ${i.stop.signal ?? `code ${i.stop.code}`})`;
    out.push({
      invariant: 'stops-on-sigterm',
      detail: `${i.name} ${how} on SIGTERM (bound ${boundMs} ms)${cut ? '; its LISTEN connection had been silently cut' : ''}`,
      suspects: cut ? ['listenerStopHang'] : [],
    });
  }
  return out;
}
