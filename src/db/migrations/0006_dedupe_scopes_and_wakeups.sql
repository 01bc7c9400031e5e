-- 0006: dedupe scopes, start-time wake-ups for future jobs, job progress, and a stricter SQL enqueue.
-- nightshift:compatible — older code keeps working with it: only new columns (nullable or with
-- defaults), a new table and index, and functions whose old arguments keep their meaning.
-- Every column added here has no default or a constant one: adding it rewrites nothing, however
-- many jobs the table holds.

-- How a job's dedupe key holds (issue 11): NULL (pending) while the job is available, through the
-- index jobs_dedupe on dedupe_key, unchanged; 'active' while it is available or running
-- (jobs_dedupe_active, built online by 0007); 'ever' / 'within' through dedupe_keys below,
-- whatever the job's state — those jobs keep their key in dedupe_given, not in dedupe_key, so
-- the pending index never sees them.
ALTER TABLE jobs ADD COLUMN dedupe_scope text;
-- The key a job was enqueued with when jobs_dedupe does not hold it: an 'ever'/'within' key, or the
-- key of a pending-scope job that went back to available (a retry, a rescue, a hand-back) while a
-- newer pending job held it — that job gives the key up instead of failing the write, and both run.
ALTER TABLE jobs ADD COLUMN dedupe_given text;
-- What the handler reported with ctx.progress() (latest value), for `jobs show`.
ALTER TABLE jobs ADD COLUMN progress jsonb;

ALTER TABLE kinds ADD COLUMN dedupe_scope text NOT NULL DEFAULT 'pending';
ALTER TABLE kinds ADD COLUMN dedupe_within_ms bigint;

-- Keys of the 'ever' and 'within' scopes: one row per (kind, key), naming the job that holds it.
-- 'ever' keys (expires_at NULL) are deleted with their job when it is pruned; 'within' keys expire
-- at expires_at and are pruned after it. A new enqueue takes over an expired key in one statement.
CREATE TABLE dedupe_keys (
  kind       text        NOT NULL,
  key        text        NOT NULL,
  job_id     bigint      NOT NULL,
  expires_at timestamptz,
  PRIMARY KEY (kind, key)
);
CREATE INDEX dedupe_keys_job ON dedupe_keys (job_id);
CREATE INDEX dedupe_keys_expires ON dedupe_keys (expires_at) WHERE expires_at IS NOT NULL;

-- One notification per statement and queue: the queue name, never the payload; for a queue whose
-- new jobs are all in the future, the queue and the milliseconds until the earliest is due, so a
-- worker claims it then instead of at its next poll (issue 11, bug 5). A hint only; workers poll.
CREATE OR REPLACE FUNCTION jobs_notify() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  PERFORM pg_notify(TG_TABLE_SCHEMA || ':jobs',
    CASE WHEN q.due <= now() THEN q.queue
         ELSE q.queue || ' ' || ceil(extract(epoch FROM q.due - now()) * 1000)::bigint END)
  FROM (SELECT n.queue, min(n.run_at) AS due FROM new_jobs n GROUP BY n.queue) q;
  RETURN NULL;
END
$$;

-- A W3C trace context as stored with a job: an object of at most 8 short string fields.
CREATE FUNCTION trace_context_problem(tc jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN tc IS NULL THEN NULL
    WHEN jsonb_typeof(tc) <> 'object' THEN 'must be a JSON object such as {"traceparent": "00-…-…-01"}'
    WHEN (SELECT count(*) FROM jsonb_each(tc)) > 8 THEN 'has more than 8 fields'
    WHEN EXISTS (SELECT 1 FROM jsonb_each(tc) e WHERE jsonb_typeof(e.value) <> 'string' OR length(e.key) > 64 OR length(e.value #>> '{}') > 512)
      THEN 'fields must be strings (keys up to 64, values up to 512 characters)'
    WHEN tc ? 'traceparent' AND (tc->>'traceparent') !~ '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'
      THEN 'traceparent is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)'
  END
$$;

-- Enqueue from SQL (triggers, SQL callers) with the same rules as the TypeScript API, the kind's
-- dedupe scope included; returns the job's id and whether an existing job absorbed the call.
-- Errors carry SQLSTATE NS001 (unknown kind), NS002 (invalid payload), NS003 (payload too large)
-- or NS004 (invalid options), a message starting with the NS_ code, and a hint. Without
-- trace_context, the transaction's `nightshift.traceparent` setting (if any) is carried, so a SQL
-- caller inside a traced request can pass its trace on with SET LOCAL.
CREATE FUNCTION enqueue_job(
  kind          text,
  payload       jsonb       DEFAULT '{}'::jsonb,
  queue         text        DEFAULT NULL,
  run_at        timestamptz DEFAULT NULL,
  priority      integer     DEFAULT NULL,
  max_attempts  integer     DEFAULT NULL,
  dedupe_key    text        DEFAULT NULL,
  debounce      interval    DEFAULT NULL,
  expires_at    timestamptz DEFAULT NULL,
  trace_context jsonb       DEFAULT NULL,
  delay         interval    DEFAULT NULL
) RETURNS TABLE (job_id bigint, deduped boolean)
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
#variable_conflict use_column
DECLARE
  k kinds%ROWTYPE;
  v_inserted boolean;
  limit_bytes integer;
  size_bytes integer;
  v_queue text;
  v_run_at timestamptz;
  v_id bigint;
  v_trace jsonb;
  v_problem text;
  v_new bigint;
  v_tries integer := 0;
BEGIN
  IF enqueue_job.kind IS NULL THEN
    RAISE EXCEPTION 'NS_UNKNOWN_KIND: kind must not be null' USING ERRCODE = 'NS001',
      HINT = 'pass the kind of a job defined with defineJob';
  END IF;
  SELECT * INTO k FROM kinds WHERE kinds.kind = enqueue_job.kind;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'NS_UNKNOWN_KIND: unknown job kind "%"', enqueue_job.kind USING ERRCODE = 'NS001',
      HINT = 'kinds are registered when a client that defines them runs migrate() or start(); check the spelling';
  END IF;
  IF enqueue_job.payload IS NULL THEN
    RAISE EXCEPTION 'NS_PAYLOAD_INVALID: payload must not be SQL NULL' USING ERRCODE = 'NS002',
      HINT = 'pass a JSON value, for example ''{}''::jsonb';
  END IF;
  SELECT (value #>> '{}')::integer INTO limit_bytes FROM settings WHERE key = 'max_payload_bytes';
  size_bytes := octet_length(enqueue_job.payload::text);
  IF size_bytes > limit_bytes THEN
    RAISE EXCEPTION 'NS_PAYLOAD_TOO_LARGE: payload for kind "%" is % bytes, over the limit of % bytes',
      enqueue_job.kind, size_bytes, limit_bytes USING ERRCODE = 'NS003',
      HINT = 'store large data elsewhere and pass its id in the payload';
  END IF;
  v_queue := coalesce(enqueue_job.queue, k.queue);
  IF v_queue !~ '^[A-Za-z0-9_.:-]{1,128}$' THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: queue "%" is not a valid queue name', v_queue USING ERRCODE = 'NS004',
      HINT = 'queue names are 1 to 128 characters of letters, digits, _ . : -';
  END IF;
  IF enqueue_job.priority IS NOT NULL AND enqueue_job.priority NOT BETWEEN -1000 AND 1000 THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: priority % is out of range', enqueue_job.priority USING ERRCODE = 'NS004',
      HINT = 'priority is an integer from -1000 to 1000; lower runs first';
  END IF;
  IF enqueue_job.max_attempts IS NOT NULL AND enqueue_job.max_attempts NOT BETWEEN 1 AND 1000 THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: max_attempts % is out of range', enqueue_job.max_attempts USING ERRCODE = 'NS004',
      HINT = 'max_attempts is an integer from 1 to 1000';
  END IF;
  IF enqueue_job.run_at IS NOT NULL AND enqueue_job.delay IS NOT NULL THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: run_at and delay are both given' USING ERRCODE = 'NS004',
      HINT = 'pass one of them';
  END IF;
  IF enqueue_job.debounce IS NOT NULL AND (enqueue_job.run_at IS NOT NULL OR enqueue_job.delay IS NOT NULL) THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: debounce sets the run time itself; run_at and delay must be NULL with it'
      USING ERRCODE = 'NS004', HINT = 'drop run_at/delay, or drop debounce';
  END IF;
  -- The same window the TypeScript API accepts: years 1970 to 9999, delays up to 100 years.
  IF enqueue_job.run_at IS NOT NULL AND (isfinite(enqueue_job.run_at) IS NOT TRUE
      OR enqueue_job.run_at NOT BETWEEN '1970-01-01 00:00:00+00' AND '9999-01-01 00:00:00+00') THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: run_at % is outside the years 1970 to 9999', enqueue_job.run_at USING ERRCODE = 'NS004',
      HINT = 'pass a timestamptz such as now() + interval ''5 minutes''';
  END IF;
  IF enqueue_job.delay IS NOT NULL AND (isfinite(enqueue_job.delay) IS NOT TRUE OR enqueue_job.delay < interval '0'
      OR enqueue_job.delay > interval '100 years') THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: delay must be a finite interval from 0 to 100 years' USING ERRCODE = 'NS004',
      HINT = 'pass an interval such as interval ''30 seconds''';
  END IF;
  IF enqueue_job.expires_at IS NOT NULL AND (isfinite(enqueue_job.expires_at) IS NOT TRUE
      OR enqueue_job.expires_at NOT BETWEEN '1970-01-01 00:00:00+00' AND '9999-01-01 00:00:00+00') THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: expires_at % is outside the years 1970 to 9999', enqueue_job.expires_at USING ERRCODE = 'NS004',
      HINT = 'leave it NULL for no deadline';
  END IF;
  IF enqueue_job.dedupe_key IS NOT NULL AND length(enqueue_job.dedupe_key) NOT BETWEEN 1 AND 512 THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: dedupe_key must be 1 to 512 characters' USING ERRCODE = 'NS004',
      HINT = 'use a short stable key, hashing long ones';
  END IF;
  IF enqueue_job.debounce IS NOT NULL AND (enqueue_job.dedupe_key IS NULL OR isfinite(enqueue_job.debounce) IS NOT TRUE
      OR enqueue_job.debounce < interval '0' OR enqueue_job.debounce > interval '100 years') THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: debounce needs a dedupe_key and a finite interval from 0 to 100 years'
      USING ERRCODE = 'NS004', HINT = 'debounce moves the pending job with the same dedupe_key';
  END IF;
  IF enqueue_job.debounce IS NOT NULL AND k.dedupe_scope <> 'pending' THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: debounce needs the pending dedupe scope; kind "%" has scope %', enqueue_job.kind, k.dedupe_scope
      USING ERRCODE = 'NS004', HINT = 'debounce moves a pending job; drop it for this kind';
  END IF;
  v_trace := coalesce(enqueue_job.trace_context,
    CASE WHEN nullif(current_setting('nightshift.traceparent', true), '') IS NOT NULL
         THEN jsonb_build_object('traceparent', current_setting('nightshift.traceparent', true)) END);
  v_problem := trace_context_problem(v_trace);
  IF v_problem IS NOT NULL THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: trace_context %', v_problem USING ERRCODE = 'NS004',
      HINT = 'pass {"traceparent": "00-<trace id>-<span id>-01"} or NULL';
  END IF;

  v_run_at := CASE
    WHEN enqueue_job.debounce IS NOT NULL THEN now() + enqueue_job.debounce
    WHEN enqueue_job.delay IS NOT NULL THEN now() + enqueue_job.delay
    ELSE coalesce(enqueue_job.run_at, now())
  END;
  IF enqueue_job.expires_at IS NOT NULL AND enqueue_job.expires_at <= v_run_at THEN
    RAISE EXCEPTION 'NS_OPTIONS_INVALID: expires_at % is not after the run time %: the job could never run', enqueue_job.expires_at, v_run_at
      USING ERRCODE = 'NS004', HINT = 'give a deadline after the run time, or none';
  END IF;

  IF enqueue_job.dedupe_key IS NULL OR k.dedupe_scope = 'pending' THEN
    INSERT INTO jobs AS j (kind, queue, priority, run_at, payload, max_attempts, at_most_once,
                           dedupe_key, expires_at, trace_context)
    VALUES (enqueue_job.kind, v_queue, coalesce(enqueue_job.priority, k.priority), v_run_at, enqueue_job.payload,
            coalesce(enqueue_job.max_attempts, k.max_attempts), k.at_most_once, enqueue_job.dedupe_key,
            enqueue_job.expires_at, v_trace)
    ON CONFLICT (kind, dedupe_key) WHERE dedupe_key IS NOT NULL AND state = 'available'
    DO UPDATE SET
      run_at  = CASE WHEN enqueue_job.debounce IS NOT NULL THEN EXCLUDED.run_at ELSE j.run_at END,
      payload = CASE WHEN enqueue_job.debounce IS NOT NULL THEN EXCLUDED.payload ELSE j.payload END
    RETURNING j.id, j.xmax = 0 INTO v_id, v_inserted;
    -- A debounce that moved a pending job: the insert trigger did not see it, so say when it is due.
    IF enqueue_job.debounce IS NOT NULL AND NOT v_inserted THEN
      PERFORM pg_notify(current_schema() || ':jobs', v_queue || ' ' || ceil(extract(epoch FROM enqueue_job.debounce) * 1000)::bigint);
    END IF;
    RETURN QUERY SELECT v_id, NOT v_inserted;
    RETURN;
  END IF;

  IF k.dedupe_scope = 'active' THEN
    -- At most one available or running job per key (jobs_dedupe_active). DO NOTHING arbitrates on
    -- every unique index; the holder is then read by a statement of its own, which sees it even
    -- when it committed after this one began. A holder that finished meanwhile frees the key: try again.
    LOOP
      INSERT INTO jobs (kind, queue, priority, run_at, payload, max_attempts, at_most_once,
                        dedupe_key, dedupe_scope, expires_at, trace_context)
      VALUES (enqueue_job.kind, v_queue, coalesce(enqueue_job.priority, k.priority), v_run_at, enqueue_job.payload,
              coalesce(enqueue_job.max_attempts, k.max_attempts), k.at_most_once, enqueue_job.dedupe_key, 'active',
              enqueue_job.expires_at, v_trace)
      ON CONFLICT DO NOTHING
      RETURNING id INTO v_id;
      IF v_id IS NOT NULL THEN RETURN QUERY SELECT v_id, false; RETURN; END IF;
      SELECT j.id INTO v_id FROM jobs j
      WHERE j.kind = enqueue_job.kind AND j.dedupe_key = enqueue_job.dedupe_key AND j.state IN ('available', 'running');
      IF v_id IS NOT NULL THEN RETURN QUERY SELECT v_id, true; RETURN; END IF;
      v_tries := v_tries + 1;
      IF v_tries >= 10 THEN
        RAISE EXCEPTION 'NS_OPTIONS_INVALID: dedupe key of kind "%" is contended; try again', enqueue_job.kind USING ERRCODE = 'NS004';
      END IF;
    END LOOP;
  END IF;

  -- 'ever' and 'within': the key is a row of dedupe_keys; an expired one is taken over.
  v_new := nextval('jobs_id_seq');
  INSERT INTO dedupe_keys AS d (kind, key, job_id, expires_at)
  VALUES (enqueue_job.kind, enqueue_job.dedupe_key, v_new,
          CASE WHEN k.dedupe_scope = 'within' THEN now() + k.dedupe_within_ms * interval '1 millisecond' END)
  ON CONFLICT (kind, key) DO UPDATE SET
    job_id = CASE WHEN d.expires_at <= now() THEN EXCLUDED.job_id ELSE d.job_id END,
    expires_at = CASE WHEN d.expires_at <= now() THEN EXCLUDED.expires_at ELSE d.expires_at END
  RETURNING d.job_id INTO v_id;
  IF v_id = v_new THEN
    INSERT INTO jobs (id, kind, queue, priority, run_at, payload, max_attempts, at_most_once,
                      dedupe_given, dedupe_scope, expires_at, trace_context)
    VALUES (v_new, enqueue_job.kind, v_queue, coalesce(enqueue_job.priority, k.priority), v_run_at, enqueue_job.payload,
            coalesce(enqueue_job.max_attempts, k.max_attempts), k.at_most_once, enqueue_job.dedupe_key, k.dedupe_scope,
            enqueue_job.expires_at, v_trace);
  END IF;
  RETURN QUERY SELECT v_id, v_id <> v_new;
END
$$;

-- The historical entry point: the job's id only.
CREATE OR REPLACE FUNCTION enqueue(
  kind          text,
  payload       jsonb       DEFAULT '{}'::jsonb,
  queue         text        DEFAULT NULL,
  run_at        timestamptz DEFAULT NULL,
  priority      integer     DEFAULT NULL,
  max_attempts  integer     DEFAULT NULL,
  dedupe_key    text        DEFAULT NULL,
  debounce      interval    DEFAULT NULL,
  expires_at    timestamptz DEFAULT NULL,
  trace_context jsonb       DEFAULT NULL,
  delay         interval    DEFAULT NULL
) RETURNS bigint
LANGUAGE sql SET search_path FROM CURRENT AS $$
  SELECT e.job_id FROM enqueue_job(kind, payload, queue, run_at, priority, max_attempts, dedupe_key,
                                    debounce, expires_at, trace_context, delay) e
$$;
