-- 0004: the registry of live processes (who runs what), for `nightshift workers` and the dashboard.
CREATE TABLE processes (
  id           text PRIMARY KEY,          -- host:pid:random, unique per process start
  host         text NOT NULL,
  pid          integer NOT NULL,
  roles        text[] NOT NULL,
  version      text NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  -- what the process hosts: kinds, queues, schedules, daemons, concurrency
  info         jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX processes_last_seen ON processes (last_seen_at);
