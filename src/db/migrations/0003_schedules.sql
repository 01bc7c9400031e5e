-- 0003: schedules and their ticks.
-- Runs with search_path set to the target schema only (see 0001).

-- One row per schedule a client has defined. The row is the schedule's shared state across the
-- fleet; tickers lock it (FOR UPDATE SKIP LOCKED) while they decide its due ticks.
CREATE TABLE schedules (
  name          text PRIMARY KEY,
  -- the timing as the defining code said it ("cron 0 0 * * * UTC", "every 2m"); a ticker whose
  -- definition differs does not fire, so one definition is in force fleet-wide at a time
  spec          text        NOT NULL,
  job_kind      text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  -- every scheduled tick at or before this instant has been decided (fired, queued or skipped);
  -- starts at the moment the schedule is first seen, so it gets no ticks from before it existed
  last_tick_at  timestamptz NOT NULL DEFAULT now(),
  -- the newest job this schedule enqueued; the overlap policy waits on it
  last_job_id   bigint,
  paused        boolean     NOT NULL DEFAULT false
);

-- One row per decided tick. The primary key is what makes a tick fire once across any number of
-- replicas: the row is inserted ON CONFLICT DO NOTHING in the same transaction as the tick's job,
-- and only the transaction that inserted it enqueues.
CREATE TABLE schedule_ticks (
  schedule   text        NOT NULL REFERENCES schedules (name) ON DELETE CASCADE,
  tick_at    timestamptz NOT NULL,
  outcome    text        NOT NULL,
  job_id     bigint,
  -- for a skipped-catchup row: how many missed ticks it stands for (itself and the earlier ones
  -- skipped with it; counted up to 10,000)
  missed     integer     NOT NULL DEFAULT 0,
  -- why a tick failed (its payload function threw, or the payload did not match the job's schema)
  error      text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (schedule, tick_at),
  CONSTRAINT schedule_ticks_outcome CHECK (outcome IN ('enqueued', 'queued', 'skipped-overlap', 'skipped-catchup', 'manual', 'failed'))
);

-- Ticks waiting for the previous job under overlap 'queue', oldest first.
CREATE INDEX schedule_ticks_queued ON schedule_ticks (schedule, tick_at) WHERE outcome = 'queued';
-- The pruner.
CREATE INDEX schedule_ticks_at ON schedule_ticks (tick_at);
