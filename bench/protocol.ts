/** Messages between the orchestrator and a benchmark child process (over Node's IPC channel). */
import type { StreamTask } from './streams/tasks.js';

/** What a child is started to do. */
export interface ChildInit {
  type: 'init';
  system: string;
  url: string;
  role: 'worker' | 'producer';
  /** Worker only. */
  concurrency?: number;
  /** Worker only: queues the jobs are spread over (bench/scale); default 1. */
  queues?: number;
}

/** A request to a started child; answered by a {@link ChildReply} with the same id. */
export type ChildCommand =
  | { op: 'bulk'; n: number }
  | { op: 'single'; n: number; producers: number }
  | { op: 'paced'; n: number; perSecond: number }
  | { op: 'stats' }
  /** The streams child (bench/streams/child.ts) only. */
  | { op: 'stream'; task: StreamTask }
  | { op: 'stop' };

export interface ChildRequest {
  type: 'request';
  id: number;
  command: ChildCommand;
}

/** A worker's counters. */
export interface WorkerStats {
  handled: number;
  /** Wall-clock ms (sub-ms precision) when the first handler ran, or null. */
  firstAt: number | null;
  /** Wall-clock ms when the latest handler ran, or null. */
  lastAt: number | null;
  /** Enqueue-to-handler-start latencies in ms of jobs that carried a send time. */
  latencies: number[];
  /** Peak resident set size in bytes (VmHWM where the kernel reports it, else sampled). */
  peakRss: number;
  /** Largest V8 heap seen (total and used, bytes), for telling heap growth from other memory. */
  peakHeapTotal: number;
  peakHeapUsed: number;
  /** CPU time (user + system, µs) of this process from its first handler start to the stats request, or null before any. */
  cpuUsSinceFirst?: number | null;
}

export type ChildReply = { type: 'ready' } | { type: 'reply'; id: number; ok: true; result: unknown } | { type: 'reply'; id: number; ok: false; error: string };

/**
 * A clock in ms with sub-millisecond precision that all processes on one host share: the system's
 * monotonic clock (CLOCK_MONOTONIC on Linux). Not `performance.timeOrigin + performance.now()`:
 * each process fixes its time origin from the wall clock when it starts, and two processes' origins
 * can disagree by milliseconds (a first full run measured a negative median latency with it).
 */
export function wallMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
