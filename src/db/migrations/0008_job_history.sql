-- 0008: finished jobs live in a history table of their own, partitioned by state and day, so the
-- table that claims and completes work holds only unfinished jobs however much history is kept,
-- and pruning a day of history drops a partition instead of deleting rows (issue 13).
-- nightshift:compatible — older code keeps working with it: it completes into `jobs` as before
-- (this version's maintenance moves those rows into the history), reads only `jobs` (so an older
-- CLI does not see moved jobs), and nothing it writes references the new tables.
--
-- Layout:
--   jobs_history                 LIST (state)
--     jobs_history_completed     RANGE (finished_at): one partition a day, jobs_history_completed_pYYYYMMDD,
--                                plus jobs_history_completed_default for rows no day partition takes
--     jobs_history_discarded     the same
--     jobs_history_cancelled     the same
--     jobs_history_expired       the same
--     jobs_history_other         DEFAULT: no other state is ever written here
-- Day partitions are made ahead by history_partitions_ensure(), which maintenance calls; history_prune()
-- drops whole days. A column added to jobs must be added to jobs_history and to jobs_all too.

CREATE TABLE jobs_history (
  id               bigint      NOT NULL,
  kind             text        NOT NULL,
  queue            text        NOT NULL,
  state            job_state   NOT NULL,
  priority         smallint    NOT NULL,
  run_at           timestamptz NOT NULL,
  payload          jsonb       NOT NULL,
  attempt          integer     NOT NULL,
  max_attempts     integer     NOT NULL,
  at_most_once     boolean     NOT NULL,
  dedupe_key       text,
  expires_at       timestamptz,
  lease_token      bigint,
  lease_owner      text,
  lease_expires_at timestamptz,
  errors           jsonb,
  reason           text,
  trace_context    jsonb,
  created_at       timestamptz NOT NULL,
  started_at       timestamptz,
  finished_at      timestamptz NOT NULL,
  dedupe_scope     text,
  dedupe_given     text,
  progress         jsonb
) PARTITION BY LIST (state);

CREATE TABLE jobs_history_completed PARTITION OF jobs_history FOR VALUES IN ('completed') PARTITION BY RANGE (finished_at);
CREATE TABLE jobs_history_discarded PARTITION OF jobs_history FOR VALUES IN ('discarded') PARTITION BY RANGE (finished_at);
CREATE TABLE jobs_history_cancelled PARTITION OF jobs_history FOR VALUES IN ('cancelled') PARTITION BY RANGE (finished_at);
CREATE TABLE jobs_history_expired PARTITION OF jobs_history FOR VALUES IN ('expired') PARTITION BY RANGE (finished_at);
CREATE TABLE jobs_history_other PARTITION OF jobs_history DEFAULT;
CREATE TABLE jobs_history_completed_default PARTITION OF jobs_history_completed DEFAULT;
CREATE TABLE jobs_history_discarded_default PARTITION OF jobs_history_discarded DEFAULT;
CREATE TABLE jobs_history_cancelled_default PARTITION OF jobs_history_cancelled DEFAULT;
CREATE TABLE jobs_history_expired_default PARTITION OF jobs_history_expired DEFAULT;

-- A finished job is found by id (`jobs show`, a retry) and listed newest first.
CREATE INDEX jobs_history_id ON jobs_history (id);

-- Everything, live and finished, for operators and your own queries.
CREATE VIEW jobs_all AS
  SELECT id, kind, queue, state, priority, run_at, payload, attempt, max_attempts, at_most_once, dedupe_key, expires_at,
         lease_token, lease_owner, lease_expires_at, errors, reason, trace_context, created_at, started_at, finished_at,
         dedupe_scope, dedupe_given, progress
  FROM jobs
  UNION ALL
  SELECT id, kind, queue, state, priority, run_at, payload, attempt, max_attempts, at_most_once, dedupe_key, expires_at,
         lease_token, lease_owner, lease_expires_at, errors, reason, trace_context, created_at, started_at, finished_at,
         dedupe_scope, dedupe_given, progress
  FROM jobs_history;

-- A job's stored log outlives the row in `jobs` now (the row moves to the history): the lines go
-- with the history partition that holds the job (history_prune deletes them first).
ALTER TABLE job_logs DROP CONSTRAINT IF EXISTS job_logs_job_id_fkey;

-- Makes the day partitions of every finished state from `back` days ago to `ahead` days ahead
-- (UTC days). A day whose rows already landed in the state's default partition is left there.
CREATE FUNCTION history_partitions_ensure(back integer DEFAULT 1, ahead integer DEFAULT 3) RETURNS integer
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  st text;
  d date;
  part text;
  made integer := 0;
BEGIN
  FOREACH st IN ARRAY ARRAY['completed', 'discarded', 'cancelled', 'expired'] LOOP
    FOR d IN SELECT generate_series((now() AT TIME ZONE 'UTC')::date - back, (now() AT TIME ZONE 'UTC')::date + ahead, interval '1 day')::date LOOP
      part := format('jobs_history_%s_p%s', st, to_char(d, 'YYYYMMDD'));
      CONTINUE WHEN to_regclass(part) IS NOT NULL;
      BEGIN
        EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)', part, 'jobs_history_' || st,
                       (d::timestamp AT TIME ZONE 'UTC'), ((d + 1)::timestamp AT TIME ZONE 'UTC'));
        made := made + 1;
      EXCEPTION WHEN check_violation THEN
        -- Rows of that day are in the default partition already: they stay there, pruned by age.
        NULL;
      END;
    END LOOP;
  END LOOP;
  RETURN made;
END
$$;
SELECT history_partitions_ensure();

-- Drops the oldest day partition of `st` whose whole day ended more than `keep` ago, with the
-- stored logs and `ever` dedupe keys of its jobs; returns how many jobs went, or NULL when no
-- partition is that old. One partition per call (the caller loops, a transaction each), so the
-- lock a drop takes on the state's table — which completions insert into — lasts one drop. Waits
-- at most `lock_wait` for the partition (a long read of it) and returns 0 to be called again later
-- rather than queue completions behind it.
CREATE FUNCTION history_prune(st text, keep interval, lock_wait interval DEFAULT '500 milliseconds') RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  part text;
  n bigint;
BEGIN
  SELECT c.relname INTO part
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  WHERE i.inhparent = to_regclass('jobs_history_' || st) AND c.relname ~ '_p[0-9]{8}$'
    AND ((to_date(right(c.relname, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC') <= now() - keep
  ORDER BY c.relname LIMIT 1;
  IF part IS NULL THEN RETURN NULL; END IF;
  PERFORM set_config('lock_timeout', (extract(epoch FROM lock_wait) * 1000)::bigint::text || 'ms', true);
  BEGIN
    EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', part);
  EXCEPTION WHEN lock_not_available THEN
    RETURN 0;
  END;
  EXECUTE format('SELECT count(*) FROM %I', part) INTO n;
  EXECUTE format('DELETE FROM job_logs l USING %I h WHERE l.job_id = h.id', part);
  EXECUTE format('DELETE FROM dedupe_keys k USING %I h WHERE k.job_id = h.id AND k.expires_at IS NULL AND h.dedupe_scope = ''ever''', part);
  BEGIN
    EXECUTE format('DROP TABLE %I', part);
  EXCEPTION WHEN lock_not_available THEN
    RETURN 0;
  END;
  RETURN n;
END
$$;

-- Deletes up to `lim` jobs of `st` that finished more than `keep` ago and that no day partition
-- drop will take: those in the default partition, and — with a retention under a day — those of a
-- day that is not over yet. With their logs and `ever` dedupe keys. Returns how many.
CREATE FUNCTION history_prune_rows(st text, keep interval, lim integer) RETURNS bigint
LANGUAGE sql SET search_path FROM CURRENT AS $$
  WITH doomed AS (
    SELECT id, finished_at FROM jobs_history
    WHERE state = st::job_state AND finished_at < now() - keep
    LIMIT lim
  ), gone AS (
    DELETE FROM jobs_history h USING doomed d
    WHERE h.state = st::job_state AND h.id = d.id AND h.finished_at = d.finished_at
    RETURNING h.id, h.dedupe_scope
  ), logs AS (
    DELETE FROM job_logs l USING gone g WHERE l.job_id = g.id
  ), keys AS (
    DELETE FROM dedupe_keys k USING gone g WHERE g.dedupe_scope = 'ever' AND k.job_id = g.id AND k.expires_at IS NULL
  )
  SELECT count(*) FROM gone
$$;
