import type { PayloadSchema, SchemaInput } from '../jobs/standard-schema.js';
import type { LeaderTerm } from '../leadership/leader-lease.js';
import type { EventBus } from '../telemetry/events.js';
import type { Logger } from '../telemetry/logger.js';
import type { ConsumerDefinition } from './define-consumer.js';
import type { StreamDefinition } from './define-stream.js';
import type { RedisConnection } from './redis-connection.js';
import type { StreamEntry } from './stream-entry.js';
import type { PublishResult } from './stream-publisher.js';

/** What one running consumer (a definition hosted by this process, for one leadership term) shares with its parts. */
export interface ConsumerScope {
  readonly def: ConsumerDefinition;
  /** This process's consumer name in the group. */
  readonly consumer: string;
  /** The shared command connection (acks, claims, dead letters, publishes). */
  readonly conn: RedisConnection;
  readonly events: EventBus;
  readonly logger: Logger;
  /** The leadership term a singleton consumes in; undefined for other consumers. */
  readonly term: LeaderTerm | undefined;
  /** The lease a singleton is elected through; undefined for other consumers. */
  readonly leaseName: string | undefined;
  publish<S extends PayloadSchema>(stream: StreamDefinition<S>, payload: SchemaInput<S>): Promise<PublishResult>;
}

/** An entry this process is handling. */
export interface InFlightEntry {
  readonly entry: StreamEntry;
  /** Deliveries so far, this one included. */
  readonly deliveries: number;
  /** Aborted on timeout, or on shutdown after the grace period. */
  readonly controller: AbortController;
  /** Set once the handling has come to an end (acked, failed, dead-lettered or interrupted). */
  finished: boolean;
  /** Set when the handling was cut short by shutdown or loss of leadership: an at-least-once entry is handed back. */
  interrupted: boolean;
}
