import { afterEach } from 'vitest';
import { Database } from '../../src/db/database.js';
import { createPool, type PoolHandle } from '../../src/db/pool.js';
import type { JobDefinition } from '../../src/jobs/define-job.js';
import { Enqueuer } from '../../src/jobs/enqueuer.js';
import { JobRegistry } from '../../src/jobs/job-registry.js';
import type { ScheduleDefinition } from '../../src/schedules/define-schedule.js';
import { ScheduleAdmin } from '../../src/schedules/schedule-admin.js';
import { ScheduleTicker, type ScheduleTickerOptions } from '../../src/schedules/schedule-ticker.js';
import { EventBus, type NightshiftEvent } from '../../src/telemetry/events.js';

/** A ticker and an admin on a pool of their own (as a separate replica would have), closed after each test. */
export function useTickers(db: { url: string; schema: string }) {
  const open: { ticker?: ScheduleTicker; pool: PoolHandle }[] = [];
  afterEach(async () => {
    for (const o of open.splice(0)) {
      await o.ticker?.stop();
      await o.pool.close();
    }
  });
  return function replica(schedules: ScheduleDefinition[], jobs: JobDefinition[], options: Partial<ScheduleTickerOptions> = {}) {
    const pool = createPool({ connectionString: db.url, max: 3, applicationName: 'schedules-test' });
    const handle: { ticker?: ScheduleTicker; pool: PoolHandle } = { pool };
    open.push(handle);
    const database = new Database(pool, db.schema);
    const registry = new JobRegistry(jobs);
    const events = new EventBus();
    const seen: NightshiftEvent[] = [];
    events.on((e) => seen.push(e));
    const enqueuer = new Enqueuer({ database, registry, maxPayloadBytes: 1_048_576, events, batching: { maxInFlight: 2, maxBatch: 100 } });
    const ticker = new ScheduleTicker({ database, enqueuer, registry, schedules, events, ...options });
    const admin = new ScheduleAdmin({ database, enqueuer, registry, schedules, events, actor: 'test' });
    handle.ticker = ticker;
    return { ticker, admin, events, seen, pool };
  };
}
