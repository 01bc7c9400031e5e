-- nightshift:compatible — a new table only: older code never reads or writes it.
-- 0012: per-minute job aggregates for the dashboard's charts, written by every process from its own
-- events (so the charts survive restarts and cover the fleet) instead of counting the jobs table.
-- Each process adds its counts to its own rows (writer = its process id) every few seconds; the
-- maintenance leader merges rows older than a few minutes into one row per minute, queue and kind
-- (writer = ''), rolls whole hours up into hour rows (width_s = 3600), and prunes minute rows after
-- two days and hour rows after 35 days. So the table stays bounded: about 1,440 minute rows per
-- queue and kind a day, 24 hour rows, whatever the job rate.
CREATE TABLE job_stats (
  width_s integer NOT NULL CHECK (width_s IN (60, 3600)),
  bucket timestamptz NOT NULL,
  queue text NOT NULL,
  kind text NOT NULL,
  writer text NOT NULL,
  completed integer NOT NULL DEFAULT 0,
  -- Attempts that failed (whether retried or not), and jobs discarded for good.
  failed integer NOT NULL DEFAULT 0,
  discarded integer NOT NULL DEFAULT 0,
  -- Time from due to started, and handler run time, of the attempts started / finished in the bucket.
  started integer NOT NULL DEFAULT 0,
  wait_ms_sum double precision NOT NULL DEFAULT 0,
  wait_ms_max double precision NOT NULL DEFAULT 0,
  run_ms_sum double precision NOT NULL DEFAULT 0,
  run_ms_max double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (width_s, bucket, queue, kind, writer)
);
