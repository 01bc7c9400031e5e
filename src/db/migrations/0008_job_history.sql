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
-- stored logs and `ever` dedupe keys of its jobs; returns how many jobs went (0 for an empty day),
-- -1 when its lock was busy, or NULL when no partition is that old. Jobs of `spared` kinds (a retention of their own for this state,
-- defineJob's `retention`) are not dropped: the partition is detached first, and their rows go back
-- into the history, where no day partition takes them any more — the state's default partition,
-- pruned row by row at their own age. One partition per call (the caller loops, a transaction
-- each), so the lock a drop takes on the state's table — which completions insert into — lasts one
-- drop. Waits at most `lock_wait` for it (a long read of the partition) and returns 0 to be called
-- again later (-1) rather than queue completions behind it.
CREATE FUNCTION history_prune(st text, keep interval, spared text[] DEFAULT '{}', lock_wait interval DEFAULT '200 milliseconds') RETURNS bigint
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
  -- The slow part first, before any lock a completion would wait for: the day is over, so nothing
  -- is written to the partition any more; its jobs' logs and keys go (spared kinds' stay).
  EXECUTE format('SELECT count(*) FILTER (WHERE NOT (kind = ANY($1))) FROM %I', part) INTO n USING spared;
  EXECUTE format('DELETE FROM job_logs l USING %I h WHERE l.job_id = h.id AND NOT (h.kind = ANY($1))', part) USING spared;
  EXECUTE format('DELETE FROM dedupe_keys k USING %I h WHERE k.job_id = h.id AND k.expires_at IS NULL AND h.dedupe_scope = ''ever'' AND NOT (h.kind = ANY($1))', part) USING spared;
  -- Then the short part under the state table's lock: detach, put spared kinds' rows back, drop.
  PERFORM set_config('lock_timeout', (extract(epoch FROM lock_wait) * 1000)::bigint::text || 'ms', true);
  BEGIN
    EXECUTE format('LOCK TABLE %I, %I IN ACCESS EXCLUSIVE MODE', 'jobs_history_' || st, part);
  EXCEPTION WHEN lock_not_available THEN
    RETURN -1;
  END;
  EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', 'jobs_history_' || st, part);
  IF cardinality(spared) > 0 THEN
    EXECUTE format('INSERT INTO jobs_history SELECT * FROM %I WHERE kind = ANY($1)', part) USING spared;
  END IF;
  EXECUTE format('DROP TABLE %I', part);
  RETURN n;
END
$$;

-- Deletes up to `lim` jobs of `st` that finished more than `keep` ago, of `kinds` (NULL: any) and
-- not of `spared`, with their logs and `ever` dedupe keys; returns how many. With `only_default`,
-- only from the state's default partition (what no day drop takes: rows of a day that had no
-- partition, spared kinds' rows of dropped days), so no scan of the day partitions, which their
-- drop empties; without it (a retention under a day, a kind's retention shorter than its state's),
-- from the whole state.
CREATE FUNCTION history_prune_rows(st text, keep interval, lim integer, kinds text[] DEFAULT NULL, spared text[] DEFAULT '{}', only_default boolean DEFAULT true) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  tbl text := CASE WHEN only_default THEN 'jobs_history_' || st || '_default' ELSE 'jobs_history_' || st END;
  n bigint;
BEGIN
  EXECUTE format($q$
    WITH doomed AS (
      SELECT id, finished_at FROM %I
      WHERE finished_at < now() - $1 AND ($3::text[] IS NULL OR kind = ANY($3)) AND NOT (kind = ANY($4))
      LIMIT $2
    ), gone AS (
      DELETE FROM %I h USING doomed d
      WHERE h.id = d.id AND h.finished_at = d.finished_at
      RETURNING h.id, h.dedupe_scope
    ), logs AS (
      DELETE FROM job_logs l USING gone g WHERE l.job_id = g.id
    ), keys AS (
      DELETE FROM dedupe_keys k USING gone g WHERE g.dedupe_scope = 'ever' AND k.job_id = g.id AND k.expires_at IS NULL
    )
    SELECT count(*) FROM gone$q$, tbl, tbl)
  INTO n USING keep, lim, kinds, coalesce(spared, '{}');
  RETURN n;
END
$$;
