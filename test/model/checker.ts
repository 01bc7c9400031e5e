import { FinalChecker } from './checker-final.js';
/**
 * The checker of the model-based test: every invariant of violation.ts, judged against what the
 * reference model allows (timeline.ts), with the known bugs each violation's signature matches.
 */
import { checkLimits } from './checker-limits.js';
import { checkDedupe, checkRescue, checkStarts, checkStops, couldRescue } from './checker-live.js';
import { BUGS, excused, KNOWN_OPEN, type BugId } from './known-open.js';
import type { Observation } from './observation.js';
import { limitMaxes } from './scenario.js';
import { defaultBounds, processViews, type ModelBounds, type ProcessView } from './timeline.js';
import { INVARIANTS, type InvariantId, type Violation } from './violation.js';

/** The checker's judgement of one run. */
export interface Verdict {
  violations: Violation[];
  figures: Record<string, string | number>;
}

/** Judges one run. */
export function checkObservation(obs: Observation, bounds: ModelBounds = defaultBounds()): Verdict {
  const views = processViews(obs, bounds);
  const peaks = new Map<string, number>();
  const live = [...checkStarts(obs, views, bounds), ...checkRescue(obs, views, bounds), ...checkDedupe(obs), ...checkStops(obs, bounds), ...checkLimits(obs, views, peaks)];
  const liveSuspects = new Map<string, BugId[]>();
  for (const v of live) if (v.job) liveSuspects.set(v.job, [...new Set([...(liveSuspects.get(v.job) ?? []), ...v.suspects])]);
  const violations = [
    ...live,
    ...new FinalChecker(
      obs,
      bounds,
      liveSuspects,
      (from, to) => couldRescue(views, bounds, from, to),
      (queue, from, to) => slotFreeThroughout(views, queue, from, to),
    ).check(),
  ];
  const states: Record<string, number> = {};
  for (const j of obs.jobs) states[j.state] = (states[j.state] ?? 0) + 1;
  const faults: Record<string, number> = {};
  for (const f of obs.faults) faults[f.kind] = (faults[f.kind] ?? 0) + 1;
  return {
    violations,
    figures: {
      jobs: obs.jobs.length,
      states: JSON.stringify(states),
      'handler runs': obs.runs.length,
      faults: JSON.stringify(faults),
      processes: obs.instances.length,
      samples: obs.samples.length,
      'drain ended by its bound': obs.drainTimedOut ? 'yes' : 'no',
      // Most runs that held each limit key at once, against its limit: whether the limits were reached.
      ...(peaks.size
        ? {
            'limit keys, most held at once / limit': [...peaks]
              .sort()
              .map(([k, n]) => `${k.replace(/^limit:model-/, '')} ${n}/${limitMaxes(obs.scenario).get(k.split('#')[0]!)}`)
              .join(', '),
          }
        : {}),
      ...(obs.harnessErrors.length ? { 'harness errors': obs.harnessErrors.join('; ').slice(0, 1_000) } : {}),
    },
  };
}

/** The bugs this verdict found evidence of (some violation names them as a suspect). */
export function suspectedBugs(v: Verdict): BugId[] {
  return [...new Set(v.violations.flatMap((x) => x.suspects))].sort();
}

/** Whether the run passes: every violation is excused by a bug still open. */
export function verdictPasses(v: Verdict, open: Record<BugId, boolean> = KNOWN_OPEN): boolean {
  return v.violations.every((x) => excused(x.suspects, open));
}

/** The verdict as text: each invariant held or failed, with up to `perInvariant` violations each. */
export function verdictText(v: Verdict, open: Record<BugId, boolean> = KNOWN_OPEN, perInvariant = 4): string {
  const lines: string[] = [];
  for (const [id, text] of Object.entries(INVARIANTS) as [InvariantId, string][]) {
    const mine = v.violations.filter((x) => x.invariant === id);
    if (mine.length === 0) {
      lines.push(`  holds   ${text}`);
      continue;
    }
    const open_ = mine.filter((x) => excused(x.suspects, open)).length;
    lines.push(`  FAILED  ${text}: ${mine.length} violation(s)${open_ ? `, ${open_} matching a known open bug` : ''}`);
    for (const x of mine.slice(0, perInvariant)) {
      const tag = x.suspects.length ? ` [suspect: ${x.suspects.join(', ')}${excused(x.suspects, open) ? ', known open' : ''}]` : ' [no known bug matches]';
      lines.push(`          - ${x.detail}${tag}`);
    }
    if (mine.length > perInvariant) lines.push(`          … and ${mine.length - perInvariant} more`);
  }
  for (const [k, val] of Object.entries(v.figures)) lines.push(`  ${k}: ${val}`);
  const bugs = suspectedBugs(v);
  if (bugs.length) lines.push(`  evidence of: ${bugs.map((b) => `${b} (${BUGS[b]})`).join('; ')}`);
  return lines.join('\n');
}

/**
 * Whether some process claiming `queue` could run and had a free slot for it (the model's view of
 * its runs) through all of [from, to], but for 250 ms at either end.
 */
function slotFreeThroughout(views: ProcessView[], queue: string, from: number, to: number): boolean {
  return views.some((v) => v.claims(queue) && v.stretches(from, to, (t) => v.canWork(t) && v.slotFree(queue, t, true)).some(([a, b]) => a <= from + 250 && b >= to - 250));
}
