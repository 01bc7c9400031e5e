-- 0005: what a job's handler said (`ctx.log`), kept with the job and pruned with it.
CREATE TABLE job_logs (
  job_id  bigint      NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  attempt integer     NOT NULL,
  seq     integer     NOT NULL,
  at      timestamptz NOT NULL,
  level   text        NOT NULL,
  msg     text        NOT NULL,
  fields  jsonb,
  PRIMARY KEY (job_id, attempt, seq)
);
