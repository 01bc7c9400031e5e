-- 0010: the watchdog — checks, their runs, per-subject state, and alerts (docs/watchdog.md).
-- nightshift:compatible — older code keeps working with it: only new tables and indexes, which
-- code of earlier versions neither reads nor writes.
-- Runs with search_path set to the target schema only (see 0001).

-- One row per check that ever ran: the newest run applied to its state. A check's runs lock this
-- row (FOR UPDATE) while they apply, so two runs of one check (a tick and a manual run) change
-- its alerts one after the other, and a late run never moves the state back.
CREATE TABLE checks (
  name            text PRIMARY KEY,
  last_applied_at timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now()
);

-- One row per run. The primary key is what makes a tick change alerts once: the row is inserted
-- ON CONFLICT DO NOTHING in the transaction that applies the run, and only the transaction that
-- inserted it goes on. Kept for a week (pruned by the check's own runs).
CREATE TABLE check_runs (
  check_name  text        NOT NULL,
  -- the tick the run stands for (a manual run: its start on the database clock, to the ms)
  run_at      timestamptz NOT NULL,
  -- the worst status of the run's results
  status      text        NOT NULL,
  -- [{ subject, status, message, details }]
  results     jsonb       NOT NULL,
  duration_ms integer     NOT NULL,
  manual      boolean     NOT NULL DEFAULT false,
  -- false: an older tick than one already applied (its job ran late); recorded, not applied
  applied     boolean     NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (check_name, run_at),
  CONSTRAINT check_runs_status CHECK (status IN ('ok', 'warning', 'critical'))
);

-- The state of each subject of a check that is bad or has an open alert (ok subjects without an
-- alert have no row): its latest status, and how many bad results in a row (flapping damping).
CREATE TABLE check_subjects (
  check_name  text        NOT NULL,
  subject     text        NOT NULL,
  status      text        NOT NULL,
  bad_streak  integer     NOT NULL DEFAULT 0,
  -- when the subject last turned bad
  bad_since   timestamptz,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (check_name, subject),
  CONSTRAINT check_subjects_status CHECK (status IN ('ok', 'warning', 'critical'))
);

-- Alerts: seed 001's watchdog_alerts (check_id, level, message, alerted_at, resolved_at), per
-- subject, with acknowledgements and the notification sequence.
CREATE TABLE alerts (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  check_name       text        NOT NULL,
  subject          text        NOT NULL DEFAULT '',
  level            text        NOT NULL,
  -- the newest bad result's message and details
  message          text        NOT NULL,
  details          jsonb,
  opened_at        timestamptz NOT NULL DEFAULT now(),
  level_changed_at timestamptz NOT NULL DEFAULT now(),
  -- notifications sent so far: the sequence number of the newest, part of its stable id
  notifications    integer     NOT NULL DEFAULT 0,
  last_notified_at timestamptz,
  acked_at         timestamptz,
  acked_by         text,
  ack_reason       text,
  resolved_at      timestamptz,
  CONSTRAINT alerts_level CHECK (level IN ('warning', 'critical'))
);

-- At most one open alert per check and subject: the database says so, never a lookup.
CREATE UNIQUE INDEX alerts_open ON alerts (check_name, subject) WHERE resolved_at IS NULL;
-- `alerts --check name`, newest first; the pruner of resolved alerts.
CREATE INDEX alerts_check ON alerts (check_name, id);
CREATE INDEX alerts_resolved ON alerts (resolved_at) WHERE resolved_at IS NOT NULL;
