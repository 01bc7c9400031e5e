import type { Database } from '../db/database.js';
import type { JobStatsDelta } from '../db/job-stats.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { BaseService, type ServiceOptions } from '../lifecycle/service.js';
import type { EventBus, NightshiftEvent } from '../telemetry/events.js';

/** What the recorder is built from. */
export interface JobStatsRecorderOptions extends ServiceOptions {
  database: Database;
  events: EventBus;
  /** This process's id: its own rows until the maintenance leader merges them. */
  writer: string;
  /** How often the counts are added to the table. Default 10 s. */
  flushMs?: number;
  onError: (err: unknown) => void;
}

const TYPES = new Set(['job.started', 'job.completed', 'job.failed', 'job.discarded']);

/**
 * Counts this process's job events per minute, queue and kind (completed, failed, discarded,
 * started, wait and run times) and adds them to `job_stats` every few seconds in one statement:
 * the charts of the dashboard read these aggregates, never the jobs table. A flush that fails
 * keeps its counts for the next one; counts of a process killed between flushes are lost (a few
 * seconds of a chart, never a job).
 */
export class JobStatsRecorder extends BaseService {
  private pending = new Map<string, JobStatsDelta>();
  private readonly task: PeriodicTask;
  private off: (() => void) | undefined;

  constructor(private readonly o: JobStatsRecorderOptions) {
    super({ name: 'job stats', kind: 'job-stats', restartable: true, logger: o.logger, clock: o.clock });
    this.task = new PeriodicTask({ name: 'job stats flush', intervalMs: o.flushMs ?? 10_000, task: () => this.flush(), onError: o.onError, clock: this.clock });
  }

  protected async onStart(): Promise<void> {
    this.off = this.o.events.on(
      (e) => this.count(e),
      (t) => TYPES.has(t),
    );
    await this.task.start();
  }

  protected async onStop(): Promise<void> {
    this.off?.();
    this.off = undefined;
    await this.task.stop();
    await this.flush().catch(this.o.onError);
  }

  /** Adds what was counted since the last flush; on failure the counts wait for the next. */
  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.o.database.stats.add(this.o.writer, [...batch.values()]);
    } catch (err) {
      for (const [key, d] of batch) merge(this.entry(key, d), d);
      throw err;
    }
  }

  private count(e: NightshiftEvent): void {
    if (!('kind' in e) || !('queue' in e)) return;
    const minute = Math.floor(this.clock.wall() / 60_000) * 60_000;
    const key = `${minute}\u0000${e.queue}\u0000${e.kind}`;
    const d = this.entry(key, { bucket: new Date(minute), queue: e.queue, kind: e.kind });
    if (e.type === 'job.started') {
      d.started++;
      d.waitMsSum += e.waitMs;
      d.waitMsMax = Math.max(d.waitMsMax, e.waitMs);
    } else if (e.type === 'job.completed' || e.type === 'job.failed') {
      if (e.type === 'job.completed') d.completed++;
      else d.failed++;
      d.runMsSum += e.durationMs;
      d.runMsMax = Math.max(d.runMsMax, e.durationMs);
    } else if (e.type === 'job.discarded') d.discarded++;
  }

  private entry(key: string, base: { bucket: Date; queue: string; kind: string }): JobStatsDelta {
    let d = this.pending.get(key);
    if (!d) {
      d = { bucket: base.bucket, queue: base.queue, kind: base.kind, completed: 0, failed: 0, discarded: 0, started: 0, waitMsSum: 0, waitMsMax: 0, runMsSum: 0, runMsMax: 0 };
      this.pending.set(key, d);
    }
    return d;
  }
}

function merge(into: JobStatsDelta, d: JobStatsDelta): void {
  into.completed += d.completed;
  into.failed += d.failed;
  into.discarded += d.discarded;
  into.started += d.started;
  into.waitMsSum += d.waitMsSum;
  into.waitMsMax = Math.max(into.waitMsMax, d.waitMsMax);
  into.runMsSum += d.runMsSum;
  into.runMsMax = Math.max(into.runMsMax, d.runMsMax);
}
