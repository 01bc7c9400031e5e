-- 0009: pipelines — keyed multi-step runs, their steps, history, artifacts and follow-ups (docs/pipelines.md).
-- nightshift:compatible — new tables and indexes only: older code never reads or writes them, and
-- the pipeline step jobs it may meet in `jobs` are ordinary jobs of kinds it does not run.

-- One row per run. At most one live run per (pipeline, key), ever (until it is pruned): a start
-- for a key that has one returns it (ON CONFLICT on pipeline_runs_live_key, never a SELECT first).
-- Dry runs: many per key, one running or held at a time (pipeline_runs_dry_active).
CREATE TABLE pipeline_runs (
  id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  pipeline               text        NOT NULL,
  key                    text        NOT NULL,
  dry_run                boolean     NOT NULL DEFAULT false,
  state                  text        NOT NULL DEFAULT 'running'
                         CHECK (state IN ('running', 'succeeded', 'failed', 'cancelled', 'held')),
  generation             integer     NOT NULL DEFAULT 1,
  input                  jsonb,
  -- The step graph the run was started with (steps, needs, optional, effect, map): the deployed
  -- code's handlers run it, but a deploy never changes what a started run waits for.
  graph                  jsonb       NOT NULL,
  -- Why it failed, was cancelled or is held, in words; the failing step's error as JSON.
  reason                 text,
  error                  jsonb,
  -- Failed optional steps, counted when the run ends.
  warnings               integer     NOT NULL DEFAULT 0,
  trace_context          jsonb,
  started_by             text,
  deadline_at            timestamptz,
  deadline_missed_at     timestamptz,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now(),
  finished_at            timestamptz,
  -- When the finished run's artifacts were copied to their final place with checksums.json.
  artifacts_published_at timestamptz
);
CREATE UNIQUE INDEX pipeline_runs_live_key ON pipeline_runs (pipeline, key) WHERE NOT dry_run;
CREATE UNIQUE INDEX pipeline_runs_dry_active ON pipeline_runs (pipeline, key) WHERE dry_run AND state IN ('running', 'held');
-- The sweep's questions (deadlines, unpublished artifacts) and listings by pipeline.
CREATE INDEX pipeline_runs_open ON pipeline_runs (deadline_at) WHERE state IN ('running', 'held');
CREATE INDEX pipeline_runs_unpublished ON pipeline_runs (finished_at) WHERE finished_at IS NOT NULL AND artifacts_published_at IS NULL;
CREATE INDEX pipeline_runs_finished ON pipeline_runs (pipeline, finished_at) WHERE finished_at IS NOT NULL;
CREATE INDEX pipeline_runs_by_pipeline ON pipeline_runs (pipeline, id);

-- One row per step of the current generation, and one per item of a fan-out (map) step; the
-- map's own row (item '') tracks the step as a whole. job_id is the step's current job: the only
-- attempt allowed to record the step (every write names it).
CREATE TABLE pipeline_steps (
  run_id       bigint      NOT NULL REFERENCES pipeline_runs (id) ON DELETE CASCADE,
  step         text        NOT NULL,
  item         text        NOT NULL DEFAULT '',
  item_index   integer     NOT NULL DEFAULT 0,
  state        text        NOT NULL DEFAULT 'blocked'
               CHECK (state IN ('blocked', 'ready', 'running', 'succeeded', 'failed', 'skipped', 'cancelled')),
  job_id       bigint,
  attempts     integer     NOT NULL DEFAULT 0,
  item_value   jsonb,
  items        integer,
  output       jsonb,
  output_bytes integer,
  error        jsonb,
  started_at   timestamptz,
  finished_at  timestamptz,
  PRIMARY KEY (run_id, step, item)
);
CREATE UNIQUE INDEX pipeline_steps_job ON pipeline_steps (job_id) WHERE job_id IS NOT NULL;
-- Steps waiting on a job: what the sweep reconciles with the jobs table.
CREATE INDEX pipeline_steps_open ON pipeline_steps (job_id) WHERE state IN ('ready', 'running');

-- Earlier generations' rows, copied by a restart before the steps run again.
CREATE TABLE pipeline_step_history (
  run_id       bigint      NOT NULL REFERENCES pipeline_runs (id) ON DELETE CASCADE,
  generation   integer     NOT NULL,
  step         text        NOT NULL,
  item         text        NOT NULL,
  item_index   integer     NOT NULL,
  state        text        NOT NULL,
  job_id       bigint,
  attempts     integer     NOT NULL,
  output       jsonb,
  output_bytes integer,
  error        jsonb,
  started_at   timestamptz,
  finished_at  timestamptz,
  PRIMARY KEY (run_id, generation, step, item)
);

-- Files of a run, recorded in the step's fenced transaction: only the attempt whose output
-- committed has records. `current` is false for artifacts superseded by a restart (history).
CREATE TABLE pipeline_artifacts (
  id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id       bigint      NOT NULL REFERENCES pipeline_runs (id) ON DELETE CASCADE,
  generation   integer     NOT NULL,
  step         text        NOT NULL,
  item         text        NOT NULL DEFAULT '',
  name         text        NOT NULL,
  content_type text,
  sha256       text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
  size_bytes   bigint      NOT NULL,
  store        text        NOT NULL,
  location     text        NOT NULL,
  job_id       bigint      NOT NULL,
  attempt      integer     NOT NULL,
  lease_token  bigint      NOT NULL,
  current      boolean     NOT NULL DEFAULT true,
  created_at   timestamptz NOT NULL DEFAULT now(),
  verified_at  timestamptz
);
CREATE UNIQUE INDEX pipeline_artifacts_name ON pipeline_artifacts (run_id, name) WHERE current;
CREATE INDEX pipeline_artifacts_run ON pipeline_artifacts (run_id);

-- The database artifact store's bytes. A staged blob no record points at (a failed attempt's)
-- is deleted when the run's artifacts are published, and every blob with its run.
CREATE TABLE pipeline_artifact_blobs (
  id         bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  run_id     bigint      NOT NULL REFERENCES pipeline_runs (id) ON DELETE CASCADE,
  content    bytea       NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX pipeline_artifact_blobs_run ON pipeline_artifact_blobs (run_id);

-- Follow-up jobs: the primary key lets each be enqueued once per run and generation.
CREATE TABLE pipeline_followups (
  run_id     bigint      NOT NULL REFERENCES pipeline_runs (id) ON DELETE CASCADE,
  generation integer     NOT NULL,
  name       text        NOT NULL,
  job_id     bigint,
  error      text,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (run_id, generation, name)
);
