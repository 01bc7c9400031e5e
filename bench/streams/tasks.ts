/** What the streams child (bench/streams/child.ts) is asked to do, and what it answers. */

/** Who does the work: nightshift's API, a plain ioredis loop (the raw ceiling), or BullMQ. */
export type StreamSide = 'nightshift' | 'raw' | 'bullmq';

export type StreamTask =
  /** Handles `n` entries (jobs for BullMQ) already in `key` at `concurrency`; timed to the last ack. */
  | { kind: 'consume'; side: StreamSide; key: string; n: number; concurrency: number }
  /** Adds `n` entries (jobs) to `key` from `callers` concurrent callers (raw: pipelined, one caller). */
  | { kind: 'publish'; side: StreamSide; key: string; n: number; callers: number };

/** The answer: how long the timed part took. */
export interface StreamTaskResult {
  ms: number;
  handled: number;
}

/** The consumer group every consume task reads with. */
export const GROUP = 'bench';

/** The BullMQ queue name of a stream key. */
export const bullQueue = (key: string) => key.replace(/[^A-Za-z0-9_-]/g, '_');
