import type { Registry } from 'prom-client';
import type { Database } from '../db/database.js';
import type { QueueDepth } from '../db/jobs-admin.js';
import type { PoolHandle } from '../db/pool.js';
import type { Clock } from '../lifecycle/clock.js';
import type { EventBus } from '../telemetry/events.js';
import { NightshiftMetrics, type MetricSources } from '../telemetry/metrics.js';

/** What a client's metrics read at scrape time. */
export interface ClientMetricSources {
  database: Database;
  events: EventBus;
  pool: PoolHandle;
  clock: Clock;
  /** The client is stopped: depth is no longer read. */
  stopped(): boolean;
  leadership(): string[];
  listenerProven(): boolean | undefined;
  /** Open alerts per check and level (with the watchdog on). */
  alerts?: MetricSources['alerts'];
}

/**
 * A client's Prometheus metrics: counters and histograms per kind and queue from the event
 * stream, queue depth and age, pool and leadership read at scrape time. Scrapes from several
 * Prometheus servers within a few seconds share one depth query; a scrape during an outage (or
 * after stop) reports no depth rather than failing the scrape.
 */
export function clientMetrics(s: ClientMetricSources, options: { registry?: Registry; prefix?: string }): NightshiftMetrics {
  let cache: { at: number; rows: Promise<QueueDepth[]> } | undefined;
  const depth = () => {
    if (!cache || s.clock.monotonic() - cache.at > 5_000) {
      const rows = s.database.admin.depth();
      rows.catch(() => (cache = undefined));
      cache = { at: s.clock.monotonic(), rows };
    }
    return cache.rows;
  };
  return new NightshiftMetrics(
    s.events,
    {
      queues: async () => (s.stopped() ? [] : await depth().catch(() => [] as QueueDepth[])),
      pool: () => s.pool.stats(),
      leadership: () => s.leadership(),
      listenerProven: () => s.listenerProven(),
      ...(s.alerts ? { alerts: s.alerts } : {}),
    },
    options,
  );
}
