/**
 * Flow control in the model: the fleet-wide concurrency limits of the kinds hold, and a limited
 * job waits only while its limit is full.
 *
 * What is guaranteed is a bound on **leases**: at most `limit` attempts of a limit's key hold
 * their lease at once (the claim counts running jobs under the limit's lock). A handler runs
 * inside its lease, except when its process loses the lease while the handler goes on — frozen
 * (SIGSTOP) or cut from the database past its lease, so the rescuer hands the slot to another
 * job, or deaf to its timeout (the attempt ended, its slot freed). Those handlers may still run
 * beside the ones that took their slots; the leases never exceed the limit. So the checker counts
 * each run for as long as it provably held its lease:
 *  - from its start until it returned, its process died, its attempt's timeout passed, the final
 *    stop began, or a fault that can cost the lease (SIGSTOP, backends killed) hit its process —
 *    and not at all from the log when it started while its process was impaired (a job claimed
 *    before a freeze may have lost its lease before it started);
 *  - and, whatever the log says, until the last sample that saw its lease (token) still running:
 *    a SIGKILLed worker's slot stays held until its lease is rescued.
 * Every sample's leases per key are checked too (one snapshot of the jobs table).
 */
import { limitKeyOf } from './model-jobs.js';
import type { JobRow, Observation, RunEntry } from './observation.js';
import type { Sample } from './sampler.js';
import { limitMaxes, MODEL_SETTINGS, storedLimitName, type ModelScenario } from './scenario.js';
import type { Interval, ProcessView } from './timeline.js';
import type { Violation } from './violation.js';

/** The timeout timer starts just before the handler (and its run-log line): a run is counted this much less than its timeout. */
const TIMEOUT_SLACK_MS = 100;

/** A gap between samples beyond this says nothing about the time between them. */
const MAX_SAMPLE_GAP_MS = 1_500;

/** The limit keys a job holds while it runs, computed as the kinds compute them (none: an empty list). */
export function jobLimitKeys(s: ModelScenario, job: Pick<JobRow, 'kind' | 'step' | 'copy'>): string[] {
  const kind = job.kind === 'model-amo' ? 'amo' : 'alo';
  const l = s.limits?.[kind];
  if (!l) return [];
  const keys: string[] = [];
  if (l.total !== undefined) keys.push(storedLimitName(kind, 'total'));
  if (l.perKey !== undefined) keys.push(`${storedLimitName(kind, 'perKey')}#${limitKeyOf({ lkey: s.steps[job.step]?.job.limitKey, copy: job.copy })}`);
  return keys;
}

/** The limit name of a stored key (`name#key` for a limit per key). */
const nameOf = (key: string) => key.split('#')[0]!;

/** When each lease (token) was last seen running by a sample. */
function lastSeen(samples: readonly Sample[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) for (const l of s.limited ?? []) out.set(l.token, s.at);
  return out;
}

/** The stretch of a run in which it provably held its lease (see the file's comment); undefined when none is proven. */
export function heldInterval(r: RunEntry, v: ProcessView | undefined, obs: Observation, seen: Map<string, number>): Interval | undefined {
  let end = Number.NEGATIVE_INFINITY;
  const startedImpaired = !v || v.impaired.some(([a, b]) => r.startMs >= a && r.startMs < b);
  if (!startedImpaired) {
    const faults = v.impaired.map(([a]) => a).filter((a) => a >= r.startMs);
    end = Math.min(r.endMs ?? Number.POSITIVE_INFINITY, v.instance.exitAt ?? Number.POSITIVE_INFINITY, r.startMs + MODEL_SETTINGS.timeoutMs - TIMEOUT_SLACK_MS, obs.drainedAt, ...faults);
  }
  end = Math.max(end, seen.get(r.token) ?? Number.NEGATIVE_INFINITY);
  return end > r.startMs ? [r.startMs, end] : undefined;
}

/**
 * No limit's key is ever held by more attempts than its limit: from the runs (as held) and from
 * every sample. `peaks` receives the most runs seen holding each key at once (a figure of the run:
 * whether the limits were reached at all).
 */
export function checkLimits(obs: Observation, views: ProcessView[], peaks = new Map<string, number>()): Violation[] {
  const maxes = limitMaxes(obs.scenario);
  if (maxes.size === 0) return [];
  const out: Violation[] = [];
  const t = (ms: number) => `t+${Math.round(ms - obs.t0)}`;
  // The database's own count, in each snapshot.
  for (const s of obs.samples) {
    const n = new Map<string, string[]>();
    for (const l of s.limited ?? []) for (const k of l.keys) n.set(k, [...(n.get(k) ?? []), l.id]);
    for (const [k, ids] of n) {
      const max = maxes.get(nameOf(k));
      if (max !== undefined && ids.length > max) out.push({ invariant: 'limit-holds', detail: `${ids.length} running jobs held ${k} (limit ${max}) at ${t(s.at)}: jobs ${ids.join(', ')}`, suspects: [] });
    }
  }
  // The runs, each for as long as it held its lease: the maximum overlap per key.
  const rows = new Map(obs.jobs.map((j) => [j.id, j]));
  const byPid = new Map(views.map((v) => [v.instance.pid, v]));
  const seen = lastSeen(obs.samples);
  const events = new Map<string, { at: number; d: 1 | -1; run: RunEntry }[]>();
  for (const r of obs.runs) {
    const row = rows.get(r.jobId);
    if (!row) continue;
    const held = heldInterval(r, byPid.get(r.pid), obs, seen);
    if (!held) continue;
    for (const k of jobLimitKeys(obs.scenario, row)) {
      const list = events.get(k) ?? events.set(k, []).get(k)!;
      list.push({ at: held[0], d: 1, run: r }, { at: held[1], d: -1, run: r });
    }
  }
  for (const [k, list] of events) {
    const max = maxes.get(nameOf(k))!;
    // Ends before starts at the same moment: [start, end) intervals.
    list.sort((a, b) => a.at - b.at || a.d - b.d);
    const open = new Set<RunEntry>();
    let reported = 0;
    for (const e of list) {
      if (e.d === -1) {
        open.delete(e.run);
        continue;
      }
      open.add(e.run);
      peaks.set(k, Math.max(peaks.get(k) ?? 0, open.size));
      if (open.size > max && reported++ < 3) {
        const who = [...open].map((r) => `job ${r.jobId} attempt ${r.attempt} (pid ${r.pid}, from ${t(r.startMs)})`).join(', ');
        out.push({ invariant: 'limit-holds', job: e.run.jobId, detail: `${open.size} runs held ${k} at once at ${t(e.at)} (limit ${max}): ${who}`, suspects: [] });
      }
    }
  }
  return out;
}

/**
 * The stretches within [from, to] in which every one of `keys` had room by the samples (both
 * samples around a moment saw fewer leases of the key than its limit): a limited job may wait
 * only outside them. No keys: all of [from, to].
 */
export function roomStretches(obs: Observation, keys: readonly string[], from: number, to: number): Interval[] {
  if (keys.length === 0) return [[from, to]];
  const maxes = limitMaxes(obs.scenario);
  const room = (s: Sample) => keys.every((k) => (s.limited ?? []).filter((l) => l.keys.includes(k)).length < (maxes.get(nameOf(k)) ?? Number.POSITIVE_INFINITY));
  const out: Interval[] = [];
  for (let i = 0; i + 1 < obs.samples.length; i++) {
    const a = obs.samples[i]!;
    const b = obs.samples[i + 1]!;
    if (b.at <= from || a.at >= to || b.at - a.at > MAX_SAMPLE_GAP_MS || !room(a) || !room(b)) continue;
    const x = Math.max(a.at, from);
    const y = Math.min(b.at, to);
    const last = out.at(-1);
    if (last && last[1] >= x) last[1] = y;
    else out.push([x, y]);
  }
  return out;
}

/** The parts of `a` that lie in `b` (both sorted, disjoint). */
export function intersect(a: readonly Interval[], b: readonly Interval[]): Interval[] {
  const out: Interval[] = [];
  for (const [x, y] of a) {
    for (const [p, q] of b) {
      const lo = Math.max(x, p);
      const hi = Math.min(y, q);
      if (hi > lo) out.push([lo, hi]);
    }
  }
  return out;
}
