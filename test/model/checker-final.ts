/**
 * Invariants judged from the final job rows and the record of runs: nothing lost, every end has a
 * cause the model allows, a job runs again only for a documented cause (docs/delivery.md), and no
 * job starts after its deadline.
 */
import { jobLimitKeys, roomStretches } from './checker-limits.js';
import { starvedBySignature } from './checker-live.js';
import type { BugId } from './known-open.js';
import { behaviourOf } from './model-jobs.js';
import type { JobRow, Observation, RunEntry } from './observation.js';
import { MODEL_SETTINGS, type Behaviour } from './scenario.js';
import type { ModelBounds } from './timeline.js';
import type { Violation } from './violation.js';

/** Faults that can cut a run short on the process they hit. */
const CUTTING = new Set(['sigkill', 'sigstop', 'backend-terminated']);

export class FinalChecker {
  private readonly runsByJob = new Map<string, RunEntry[]>();
  private readonly notes = new Map<string, string>();
  readonly out: Violation[] = [];

  constructor(
    private readonly obs: Observation,
    private readonly bounds: ModelBounds,
    /** Suspects of the live checks, per job: a job still pending inherits them. */
    private readonly liveSuspects: Map<string, BugId[]>,
    /** Whether some process could run maintenance for a whole rescue bound between `from` and `to`. */
    private readonly couldRescue: (from: number, to: number) => boolean,
    /** Whether some process claiming `queue` had a free slot for it through [from, to]. */
    private readonly slotFree: (queue: string, from: number, to: number) => boolean,
  ) {
    for (const r of [...obs.runs].sort((a, b) => a.startMs - b.startMs)) (this.runsByJob.get(r.jobId) ?? this.runsByJob.set(r.jobId, []).get(r.jobId)!).push(r);
    for (const e of obs.effects) this.notes.set(e.token, e.note);
  }

  check(): Violation[] {
    this.checkEnqueues();
    for (const j of this.obs.jobs) {
      this.checkEnd(j);
      this.checkReruns(j);
      this.checkDeadline(j);
    }
    return this.out;
  }

  private flag(invariant: Violation['invariant'], job: JobRow | undefined, detail: string, suspects: BugId[] = []): void {
    this.out.push({ invariant, ...(job ? { job: job.id } : {}), detail: job ? `job ${job.id} (${job.kind}, ${job.queue}, step ${job.step}): ${detail}` : detail, suspects });
  }

  private t(ms: number): string {
    return `t+${Math.round(ms - this.obs.t0)}`;
  }

  /** A fault that hit process `pid` between `from` and `to`. */
  private faultOn(pid: number | undefined, from: number, to: number): string | undefined {
    const f = this.obs.faults.find((x) => x.targetPid === pid && CUTTING.has(x.kind) && x.startedAt <= to && x.endedAt >= from);
    return f && `${f.kind} of ${f.instance} at ${this.t(f.startedAt)}`;
  }

  /** Whether process `pid` was stopped by the final SIGTERM (its jobs are then handed back or abandoned). */
  private shutDown(pid: number | undefined): boolean {
    const i = this.obs.instances.find((x) => x.pid === pid);
    return !!i && !i.killed && (i.exitAt ?? Number.POSITIVE_INFINITY) >= this.obs.drainedAt;
  }

  private behaviour(j: JobRow, r: RunEntry): Behaviour {
    return (this.notes.get(r.token) as Behaviour | undefined) ?? behaviourOf(this.obs.scenario.steps[j.step]?.job.plan ?? ['ok'], r.attempt);
  }

  /** The handler failed, or was meant to (a failure, or a timeout: told to hang, or to work about as long as the timeout): a retry is the normal next step. */
  private failed(j: JobRow, r: RunEntry): boolean {
    const slow = (this.obs.scenario.steps[j.step]?.job.workMs ?? 0) >= MODEL_SETTINGS.timeoutMs - 200;
    return this.behaviour(j, r) !== 'ok' || r.outcome === 'failed' || r.outcome === 'error' || (r.outcome === 'aborted' && slow);
  }

  private checkEnqueues(): void {
    const ids = new Set(this.obs.jobs.map((j) => j.id));
    const returned = new Set<string>();
    for (const e of this.obs.enqueues) {
      if (e.error) this.flag('nothing-lost', undefined, `step ${e.step}: the enqueue failed: ${e.error.slice(0, 300)}`);
      else if (e.id !== undefined) {
        returned.add(e.id);
        if (!ids.has(e.id)) this.flag('nothing-lost', undefined, `step ${e.step} copy ${e.copy}: enqueue returned job ${e.id}, which does not exist`);
      }
    }
    for (const j of this.obs.jobs) if (!returned.has(j.id)) this.flag('nothing-lost', j, 'no enqueue returned this job');
  }

  private checkEnd(j: JobRow): void {
    const runs = this.runsByJob.get(j.id) ?? [];
    const last = runs.find((r) => r.token === j.leaseToken);
    const reason = j.reason ?? '';
    switch (j.state) {
      case 'completed':
        if (!last) this.flag('finished-with-cause', j, 'completed, but no run of its final claim was recorded');
        else if (this.behaviour(j, last) !== 'ok' || last.outcome !== 'ok')
          this.flag('finished-with-cause', j, `completed, but its final run was told to ${this.behaviour(j, last)} (outcome ${last.outcome ?? 'none'})`);
        return;
      case 'discarded':
        if (reason.startsWith('attempts exhausted (last one lost its lease)')) {
          if (!last) {
            // The lease's owner, from the rescuer's entry in the history: was it killed while holding the job?
            const entry = j.errors.filter((e) => e.kind === 'lease-expired').at(-1)?.message ?? '';
            const owner = Number(/worker \S*:(\d+) stopped/.exec(entry)?.[1]);
            const killed = this.obs.faults.some((f) => f.kind === 'sigkill' && f.targetPid === owner);
            this.flag(
              'finished-with-cause',
              j,
              `discarded by the rescuer at ${this.t(j.finishedAt ?? 0)} (attempt ${j.attempt} of ${j.maxAttempts}), but no handler ran that attempt (${runs.length} run(s) in all; the lease was pid ${owner || '?'}'s${killed ? ', SIGKILLed' : ''})`,
              killed ? ['bug3'] : [],
            );
          } else if (!this.faultOn(last.pid, last.startMs, j.finishedAt ?? Number.POSITIVE_INFINITY)) {
            this.flag('finished-with-cause', j, `discarded: its last attempt lost its lease at no fault of its process (run from ${this.t(last.startMs)})`);
          }
        } else if (reason.startsWith('attempts exhausted (') || reason.startsWith('at-most-once job failed')) {
          if (!last) this.flag('finished-with-cause', j, `discarded (${reason}) with no run of its final claim recorded`);
          else if (!this.failed(j, last) && !this.faultOn(last.pid, last.startMs, j.finishedAt ?? Number.POSITIVE_INFINITY)) {
            this.flag('finished-with-cause', j, `discarded (${reason}) though its final run was told to succeed and no fault hit it`);
          }
        } else this.flag('finished-with-cause', j, `discarded for a reason the model does not know: ${reason}`);
        return;
      case 'abandoned': {
        const pid = last?.pid ?? Number(/:(\d+)(?: stopped while it ran|$)/.exec(reason)?.[1]);
        const from = last?.startMs ?? this.obs.t0;
        if (j.kind !== 'model-amo') this.flag('finished-with-cause', j, 'an at-least-once job was abandoned');
        else if (!this.faultOn(pid, from, j.finishedAt ?? Number.POSITIVE_INFINITY) && !(reason.includes('shutdown') && this.shutDown(pid))) {
          this.flag('finished-with-cause', j, `abandoned (${reason}) with no fault on its process while it held the job`);
        }
        return;
      }
      case 'expired':
        if (j.expiresAt === null) this.flag('finished-with-cause', j, 'expired without a deadline');
        else if ((j.finishedAt ?? 0) < j.expiresAt - 100) this.flag('finished-with-cause', j, `expired at ${this.t(j.finishedAt ?? 0)}, before its deadline ${this.t(j.expiresAt)}`);
        return;
      case 'available': {
        // Due for a whole bound before the end, and (under limits) with room for all of that bound.
        const tail: [number, number] = [this.obs.drainedAt - this.bounds.startMs, this.obs.drainedAt];
        const room = roomStretches(this.obs, jobLimitKeys(this.obs.scenario, j), ...tail);
        const due = j.runAt <= tail[0] && room.length === 1 && room[0]![0] <= tail[0] + 250 && room[0]![1] >= tail[1] - 250;
        const handedBack = j.errors.at(-1)?.kind === 'shutdown' && Date.parse(j.errors.at(-1)!.at) >= this.obs.drainedAt - 1_000;
        const claimers = this.obs.instances
          .filter((i) => !i.killed && (i.readyAt ?? Infinity) <= this.obs.drainedAt)
          .map((i) => this.obs.scenario.workers[i.spec]!)
          .filter((w) => w.queues.some((q) => q.name === j.queue));
        // (Every slot busy, as with handlers that ignore their timeout at concurrency 1: waiting is legitimate.)
        if (due && !handedBack && claimers.length > 0 && this.slotFree(j.queue, ...tail)) {
          const suspects = new Set(this.liveSuspects.get(j.id) ?? []);
          if (claimers.every((w) => starvedBySignature(w, j.queue))) suspects.add('bug1');
          this.flag('nothing-lost', j, `still pending at the end, due since ${this.t(j.runAt)} (attempt ${j.attempt})`, [...suspects]);
        }
        return;
      }
      case 'running':
        if ((j.leaseExpiresAt ?? 0) < this.obs.drainedAt - this.bounds.rescueMs && this.couldRescue(j.leaseExpiresAt ?? 0, this.obs.drainedAt)) {
          const keyHeld = j.dedupeKey !== null && this.obs.jobs.some((p) => p.state === 'available' && p.kind === j.kind && p.dedupeKey === j.dedupeKey);
          const stalled = [...this.liveSuspects.values()].some((s) => s.includes('bug2'));
          this.flag('nothing-lost', j, `still running at the end, its lease (owner ${j.leaseOwner}) expired at ${this.t(j.leaseExpiresAt ?? 0)}`, keyHeld || stalled ? ['bug2'] : []);
        }
        return;
      default:
        this.flag('finished-with-cause', j, `ended ${j.state}, which no step of the model leads to`);
    }
  }

  private checkReruns(j: JobRow): void {
    const runs = this.runsByJob.get(j.id) ?? [];
    if (j.kind === 'model-amo') {
      if (runs.length > 1)
        this.flag('no-unexplained-rerun', j, `an at-most-once job's handler ran ${runs.length} times: ${runs.map((r) => `attempt ${r.attempt} on pid ${r.pid} at ${this.t(r.startMs)}`).join('; ')}`);
      return;
    }
    for (let k = 0; k + 1 < runs.length; k++) {
      const r = runs[k]!;
      const next = runs[k + 1]!;
      if (this.failed(j, r) || this.faultOn(r.pid, r.startMs, next.startMs) || (this.shutDown(r.pid) && next.startMs >= this.obs.drainedAt)) continue;
      this.flag(
        'no-unexplained-rerun',
        j,
        `ran again at ${this.t(next.startMs)} (attempt ${next.attempt}, pid ${next.pid}) after a run told to succeed (attempt ${r.attempt}, pid ${r.pid}, from ${this.t(r.startMs)}, outcome ${r.outcome ?? 'none'}) that no fault hit`,
      );
    }
  }

  private checkDeadline(j: JobRow): void {
    if (j.expiresAt === null) return;
    const late = (this.runsByJob.get(j.id) ?? []).find((r) => r.startMs > j.expiresAt! + 1_000);
    if (late) this.flag('deadline-kept', j, `started at ${this.t(late.startMs)} (attempt ${late.attempt}), after its deadline ${this.t(j.expiresAt)}`);
  }
}
