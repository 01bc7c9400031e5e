import type { InstanceRecord, Observation, RunEntry } from './observation.js';
/**
 * The reference model's view of each worker process over time: when it could work (alive, not
 * paused, not recovering from a fault), how long it may take to notice a due job (the bound), and
 * how many of its slots were busy — in the model (a timed-out attempt is over and frees its slot)
 * and in fact (the handler returned).
 */
import { MODEL_SETTINGS, type WorkerSpec } from './scenario.js';

/** Bounds of the model (ms). Generous: they catch work that stopped, not work that was slow. */
export interface ModelBounds {
  /** A due job must start within this once a slot is free and the process can work. */
  startMs: number;
  /** An expired lease must be rescued within this while some process can run maintenance. */
  rescueMs: number;
}

/** The default bounds: a margin for a loaded machine, plus the lease failover of maintenance. */
export function defaultBounds(marginMs = 5_000): ModelBounds {
  const s = MODEL_SETTINGS;
  // Maintenance runs on an elected leader whose lease follows the job lease (3 to 15 s) and is
  // retried every third of it: a dead leader is replaced within that, then the rescue tick runs.
  const leaderMs = Math.min(15_000, Math.max(3_000, s.leaseMs));
  return { startMs: marginMs, rescueMs: leaderMs + leaderMs / 3 + s.maintenanceMs + marginMs };
}

export type Interval = [number, number];

/** One process as the model sees it. */
export class ProcessView {
  /** When it could not work: paused, or recovering from its connections being killed. */
  readonly impaired: Interval[] = [];
  /** From when its LISTEN connection was silently cut (notifications no longer reach it). */
  readonly deafFrom: number;
  readonly runs: RunEntry[];

  constructor(
    readonly instance: InstanceRecord,
    readonly spec: WorkerSpec,
    obs: Observation,
    private readonly bounds: ModelBounds,
  ) {
    this.runs = obs.runs.filter((r) => r.pid === instance.pid);
    let deafFrom = Number.POSITIVE_INFINITY;
    for (const f of obs.faults) {
      if (f.targetPid !== instance.pid) continue;
      if (f.kind === 'sigstop') this.impaired.push([f.startedAt, f.endedAt + bounds.startMs]);
      // Its LISTEN connection dies too; the reconnect wakes every fetcher for a catch-up claim.
      if (f.kind === 'backend-terminated') this.impaired.push([f.startedAt, f.endedAt + bounds.startMs]);
      if (f.kind === 'listener-cut') deafFrom = Math.min(deafFrom, f.startedAt);
    }
    this.deafFrom = deafFrom;
  }

  get name(): string {
    return this.instance.name;
  }

  /** Alive and ready, not paused or recovering. */
  canWork(t: number): boolean {
    const i = this.instance;
    if (i.readyAt === undefined || t < i.readyAt) return false;
    if (i.exitAt !== undefined && t >= i.exitAt) return false;
    return !this.impaired.some(([a, b]) => t >= a && t < b);
  }

  /** Alive and not paused: can run maintenance (rescue). */
  canRescue(t: number): boolean {
    const i = this.instance;
    if (i.readyAt === undefined || t < i.readyAt || (i.exitAt !== undefined && t >= i.exitAt)) return false;
    return !this.impaired.some(([a, b]) => t >= a && t < b - this.bounds.startMs);
  }

  /** How long a due job of its queues may wait at `t` once a slot is free: notifications, or only polling after a LISTEN cut. */
  startBound(t: number): number {
    return t >= this.deafFrom ? this.spec.pollMs + this.bounds.startMs : this.bounds.startMs;
  }

  claims(queue: string): boolean {
    return this.spec.queues.some((q) => q.name === queue);
  }

  /** The queue's limit within the process. */
  limit(queue: string): number {
    const q = this.spec.queues.find((x) => x.name === queue);
    return Math.min(q?.limit ?? Number.POSITIVE_INFINITY, this.spec.concurrency);
  }

  /** When a run's slot is free again: in fact (the handler returned, or the process died) or in the model (also at its timeout). */
  runEnd(r: RunEntry, model: boolean): number {
    const end = r.endMs ?? this.instance.exitAt ?? Number.POSITIVE_INFINITY;
    return model ? Math.min(end, r.startMs + MODEL_SETTINGS.timeoutMs) : end;
  }

  /** Whether a slot for `queue` is free at `t`, by the model or by what the handlers did. */
  slotFree(queue: string, t: number, model: boolean): boolean {
    let total = 0;
    let inQueue = 0;
    for (const r of this.runs) {
      if (r.startMs <= t && t < this.runEnd(r, model)) {
        total++;
        if (r.queue === queue) inQueue++;
      }
    }
    return total < this.spec.concurrency && inQueue < this.limit(queue);
  }

  /** Times within [a, b] where the process's state may change: run starts and ends, faults, life. */
  breakpoints(a: number, b: number): number[] {
    const points = new Set<number>([a, b]);
    const add = (t: number | undefined) => {
      if (t !== undefined && t > a && t < b) points.add(t);
    };
    for (const r of this.runs) {
      add(r.startMs);
      add(this.runEnd(r, true));
      add(this.runEnd(r, false));
    }
    for (const [x, y] of this.impaired) {
      add(x);
      add(y);
    }
    add(this.instance.readyAt);
    add(this.instance.exitAt);
    add(this.deafFrom);
    return [...points].sort((x, y) => x - y);
  }

  /** The maximal sub-intervals of [a, b] where `holds` is true at every moment (judged at each segment's midpoint). */
  stretches(a: number, b: number, holds: (t: number) => boolean): Interval[] {
    const points = this.breakpoints(a, b);
    const out: Interval[] = [];
    for (let k = 0; k + 1 < points.length; k++) {
      const x = points[k]!;
      const y = points[k + 1]!;
      if (!holds((x + y) / 2)) continue;
      const last = out.at(-1);
      if (last && last[1] === x) last[1] = y;
      else out.push([x, y]);
    }
    return out;
  }
}

/** A view of every process of the run. */
export function processViews(obs: Observation, bounds: ModelBounds): ProcessView[] {
  return obs.instances.map((i) => new ProcessView(i, obs.scenario.workers[i.spec]!, obs, bounds));
}
