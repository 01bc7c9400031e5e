-- nightshift:compatible — additions only (a nullable column, two tables, a function, two triggers
-- that only notify): code of the previous version keeps working beside it. It does not know the
-- limits, so while it claims a limited kind those limits are not enforced (docs/flow-control.md).
-- 0011: flow control — fleet-wide concurrency limits and rate limits, enforced in the claim.

-- The limit keys a job holds while it runs, one entry per limit: the limit's name, or for a limit
-- per key `name#key`, the key computed from the payload at enqueue. Names hold no '#' (they are
-- made of kind and queue names). NULL for a job under no limit; ADD COLUMN without a default
-- rewrites nothing, whatever the size of the table.
ALTER TABLE jobs ADD COLUMN limit_keys text[];
-- A claim passed a due job over while this one held a slot of a full concurrency limit: its
-- leaving `running` must wake that claimer (the jobs_limit_freed trigger). Set by the claim
-- (below), reset when the job is claimed again; NULL on every job no claim waits for, so a drain
-- whose limits are not hit notifies nothing.
ALTER TABLE jobs ADD COLUMN limit_waited boolean;

-- The limits the workers declare (defineJob's concurrency/rateLimit, defineQueue), written at
-- start-up by every worker that runs them (the last one wins), read by the claim.
CREATE TABLE limits (
  name       text PRIMARY KEY,
  type       text        NOT NULL CHECK (type IN ('concurrency', 'rate')),
  max        integer     NOT NULL CHECK (max BETWEEN 1 AND 1000000),
  per_ms     bigint      CHECK (per_ms BETWEEN 1 AND 86400000),
  keyed      boolean     NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT limits_rate_has_window CHECK ((type = 'rate') = (per_ms IS NOT NULL))
);

-- The starts of a rate limit's key within its window: a sliding log, one entry per claim (its
-- clock_timestamp() under the limit's lock, so entries are in order) with the number of jobs it
-- started, so the row grows with the claims in a window, not with the jobs. full_until: while
-- the window is full, when enough of it leaves for a start; the claim skips jobs of full keys
-- through the index below without reading their windows.
CREATE TABLE limit_windows (
  name       text          NOT NULL,
  key        text          NOT NULL,
  starts     timestamptz[] NOT NULL,
  counts     integer[]     NOT NULL,
  full_until timestamptz,
  PRIMARY KEY (name, key)
);
CREATE INDEX limit_windows_full ON limit_windows (name, full_until) WHERE full_until IS NOT NULL;

-- A job a claim waits for (limit_waited) leaving `running` (completed, failed, retried, cancelled,
-- rescued, handed back, deleted) frees its slots: wake the claimers that passed over jobs for
-- lack of one. Those are not only its queue's: a kind's limit holds in every queue of its jobs,
-- so the payload `<queue> freed <limit>,<limit>` names the limits too, and every claimer passing
-- jobs over under one of them looks again (an earlier version named only the queue, and a job of
-- the same limit in another queue waited for the next poll). Identical payloads within a
-- transaction are sent once. Row triggers whose WHEN is false queue nothing: every other job pays
-- only the test (an earlier version notified for every limited job, and the notifies and their
-- wake-ups cost a limited drain a sixth of its throughput, bench/NOTES.md section 13).
-- A payload longer than pg_notify allows (8,000 bytes: a kind may declare any number of limits of
-- names up to 100 characters) would fail the job's leaving `running`, for ever: it names no limit
-- then, `<queue> freed *`, and every claimer passing jobs over under any limit looks again.
CREATE FUNCTION jobs_limit_freed() RETURNS trigger
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
  msg text := OLD.queue || ' freed ' ||
    array_to_string(ARRAY(SELECT DISTINCT split_part(k, '#', 1) FROM unnest(OLD.limit_keys) k ORDER BY 1), ',');
BEGIN
  IF octet_length(msg) > 7900 THEN msg := OLD.queue || ' freed *'; END IF;
  PERFORM pg_notify(TG_TABLE_SCHEMA || ':jobs', msg);
  RETURN NULL;
END
$$;
CREATE TRIGGER jobs_limit_freed AFTER UPDATE OF state ON jobs FOR EACH ROW
  WHEN (OLD.limit_waited AND OLD.state = 'running' AND NEW.state <> 'running')
  EXECUTE FUNCTION jobs_limit_freed();
CREATE TRIGGER jobs_limit_freed_delete AFTER DELETE ON jobs FOR EACH ROW
  WHEN (OLD.limit_waited AND OLD.state = 'running')
  EXECUTE FUNCTION jobs_limit_freed();

-- Sets the limit keys of a job an enqueue through enqueue_job() just inserted (same statement, so
-- no claim can see the job before): the keys are computed from the payload by the kind's
-- definition, in TypeScript.
CREATE FUNCTION set_limit_keys(job_id bigint, keys text[], inserted boolean) RETURNS boolean
LANGUAGE sql SET search_path FROM CURRENT AS $$
  UPDATE jobs SET limit_keys = keys WHERE id = job_id AND inserted AND keys IS NOT NULL AND state = 'available' RETURNING true
$$;

-- The claim of a queue some of whose kinds (or the queue itself) are limited. The claim of
-- unlimited kinds is the plain statement of jobs-run.ts, untouched.
--
-- Exact under concurrent claimers: every claim that may take a job under limit L first takes the
-- transaction-level advisory lock of L (all of its limits, in name order, so claimers never
-- deadlock), then counts. A plpgsql function takes a new snapshot for each statement, so the
-- counts below see every claim committed before the lock was granted. Transaction-level locks
-- are released at commit and work through transaction-mode poolers (one statement, one
-- transaction).
--
-- Room mode (p_room), for limits far from hit, so that the claims of several processes do not
-- queue behind one another's (the exclusive lock is held through each claim's commit, and two
-- processes claiming one limited queue drained 1.3× slower than unlimited, bench/NOTES.md
-- section 13): the claim takes L's lock shared plus one of 4 slot locks of L, so at most 4
-- room-mode claims of L run at once and none beside an exclusive one. A room-mode claim of L
-- takes at most L's room batch, max / 8 (p_limit above that: not in room mode), and claims only
-- when the bounded count proves room for 4 of them under each of its limits (running + 4 × (max /
-- 8) <= max, running at most about half of it): then whatever the others beside it take, no limit
-- can be passed. Proof: take the claim that got its locks last before any moment; the running
-- jobs then are at most those it counted, plus the batches of the claims in flight when it
-- counted (at most 3 others: slots), plus its own, each at most L's room batch. The bound must
-- be L's, not the claim's own batch: batches differ (a worker asks for its free slots), and a
-- claim of 1 beside three uncommitted claims of 10 under a limit of 40 counted 10 and made 41.
-- Otherwise it claims nothing and says `room` false: the worker claims again at once,
-- exclusively. An exclusive claim says `room` true when the next may be in room mode. Locks are
-- taken in name order, each name's shared lock before its slot: every wait is for a lock later
-- in that order than any the waiter holds, so claimers never deadlock. Rate limits are always
-- claimed exclusively (their windows are written by the claim).
--
-- Counted from what is really held: a concurrency slot is a running job carrying the key (its
-- lease), so a crashed worker's slot frees when maintenance rescues its lease, and nothing else
-- has to give it back. A rate limit counts the claims of the last `per` ms of each key.
--
-- Order and fairness: candidates are read in the plain claim's order (priority, run_at, id); keys
-- already full (running at the limit, or a full window) are filtered out by the scan itself, so a
-- key with a large backlog never blocks the keys behind it; a job is taken when every one of its
-- limits has room, and takes a slot of each. Jobs past their deadline are expired as by the plain
-- claim, whatever their limits.
--
-- Returns the claimed rows (as the plain claim), then, when the limits passed jobs over, one row
-- with id NULL: `limited` (due jobs passed over for a full limit, among those read) and
-- `wake_in_ms` (when the first full rate window opens), so the worker looks again then instead
-- of polling.
CREATE FUNCTION claim_limited(
  p_queue     text,
  p_kinds     text[],
  p_limit     integer,
  p_owner     text,
  p_lease_ms  float8,
  p_start_now integer,
  p_names     text[],   -- every limit this claim may take a slot of: its kinds' and its queue's
  p_defaults  jsonb,    -- kind -> keys of a job that carries none (enqueued by SQL, the CLI, older code)
  p_queue_keys text[],  -- the queue's own limits, held by every job claimed here
  p_room boolean DEFAULT false -- claim in room mode (above): the last claim said the limits are far from hit
) RETURNS TABLE (id text, kind text, queue text, state text, payload jsonb, attempt integer, max_attempts integer,
                 at_most_once boolean, lease_token text, trace_context jsonb, waited_ms float8, priority integer,
                 expires_in_ms float8, wake_in_ms float8, limited integer, room boolean, unstarted integer)
-- Generic plans for its statements: with `auto`, PostgreSQL kept planning some of them anew on
-- every call (a custom plan per call cost about a fifth of the claim, bench/NOTES.md section 13);
-- their generic plans are the index scans the custom ones are.
LANGUAGE plpgsql SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
  t timestamptz;
  r record;
  k text;
  nm text;
  maxes jsonb := '{}';     -- limit name -> max
  pers jsonb := '{}';      -- rate limit name -> per_ms
  used jsonb := '{}';      -- key -> slots in use: running jobs (concurrency), starts in the window (rate), with this claim's
  oldest jsonb := '{}';    -- rate key -> epoch ms of the oldest start in its window
  took jsonb := '{}';      -- rate key -> jobs this claim starts under it
  effs jsonb := '{}';      -- job id -> its keys, for the jobs whose stored keys change
  full_keys text[] := '{}';
  keys text[];
  taken bigint[] := '{}';
  expired bigint[] := '{}';
  ok boolean;
  v_limited integer := 0;
  v_wake float8;
  cnt integer;
  least_max integer;       -- the smallest concurrency limit of this claim
  room_cap integer;        -- the smallest room batch (max / (2 × slots)) of its concurrency limits
  room_free integer;       -- the most running jobs with room for `slots` room batches under each of them
  counted_room boolean := false; -- the bounded count proved that no concurrency key can fill in this claim
  first_at timestamptz;
  waited text[];           -- full concurrency keys whose running jobs this claim waits for
  room_next boolean;       -- the next claim may be in room mode
  got boolean;
  slots constant integer := 4; -- room-mode claimers of one limit at once
  starting bigint[];       -- the jobs whose start the claim records (the first p_start_now taken)
  rewrite boolean;         -- some taken job's stored keys change (effs)
BEGIN
  IF EXISTS (SELECT 1 FROM queues q WHERE q.name = p_queue AND q.paused) THEN RETURN; END IF;
  IF p_room THEN
    -- Room mode: each limit's lock shared, and one of its `slots` slot locks (the first free one
    -- from a place of this backend's, else wait for that place's). A slot's lock is keyed
    -- `<name>#<slot>`: names hold ':' and digits but never '#', so slot 0 of a limit named `x`
    -- is not the lock of one named `x:0` (with ':', their claims waited for each other's).
    FOR nm IN SELECT DISTINCT n FROM unnest(p_names) n ORDER BY n LOOP
      PERFORM pg_advisory_xact_lock_shared(hashtextextended(current_schema() || ':limit:' || nm, 0));
      got := false;
      FOR i IN 0 .. slots - 1 LOOP
        got := pg_try_advisory_xact_lock(hashtextextended(current_schema() || ':limit:' || nm || '#' || ((pg_backend_pid() + i) % slots), 0));
        EXIT WHEN got;
      END LOOP;
      IF NOT got THEN
        PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || ':limit:' || nm || '#' || (pg_backend_pid() % slots), 0));
      END IF;
    END LOOP;
  ELSE
    PERFORM pg_advisory_xact_lock(hashtextextended(current_schema() || ':limit:' || s.n, 0))
    FROM (SELECT DISTINCT n FROM unnest(p_names) n ORDER BY n) s;
  END IF;
  -- Under the locks: the time of this claim's starts, in the order the locks were granted (now()
  -- is when the transaction began, possibly before another claimer's commit).
  t := clock_timestamp();

  SELECT coalesce(jsonb_object_agg(l.name, l.max), '{}'), coalesce(jsonb_object_agg(l.name, l.per_ms) FILTER (WHERE l.type = 'rate'), '{}'),
         min(l.max) FILTER (WHERE l.type = 'concurrency'),
         min(l.max / (2 * slots)) FILTER (WHERE l.type = 'concurrency'),
         min(l.max - slots * (l.max / (2 * slots))) FILTER (WHERE l.type = 'concurrency')
  INTO maxes, pers, least_max, room_cap, room_free FROM limits l WHERE l.name = ANY (p_names);
  IF maxes = '{}' THEN p_names := '{}'; END IF;

  -- Concurrency slots in use: running jobs (every running job holds a lease: jobs_lease).
  -- When fewer jobs run under any limit at all than the smallest of these limits leaves room for
  -- beside a whole batch, no key can be full and no batch can fill one: the count per key is not
  -- needed, and a bounded count of the running rows (no unnest, no grouping: a sixth of the cost,
  -- bench/NOTES.md section 13) proves it. That is the case of limits far from being hit; a small
  -- limit (least_max <= p_limit) is counted per key at once (LIMIT 0).
  IF least_max IS NOT NULL THEN
    SELECT count(*)::integer INTO cnt FROM (
      SELECT 1 FROM jobs j WHERE j.lease_expires_at IS NOT NULL AND j.state = 'running' AND j.limit_keys IS NOT NULL
      LIMIT greatest(least_max - p_limit + 1, 0)) x;
    -- Room for this batch and every other room-mode claimer's at once (each at most a room
    -- batch of each limit it shares with this claim): room mode holds. (room_free is below the
    -- count's bound whenever p_limit <= room_cap.)
    room_next := pers = '{}' AND p_limit <= room_cap AND cnt <= room_free;
    IF p_room AND NOT room_next THEN
      -- Not proven for room mode: claim nothing; the worker claims again at once, exclusively.
      RETURN QUERY SELECT NULL::text, NULL::text, NULL::text, NULL::text, NULL::jsonb, NULL::integer, NULL::integer, NULL::boolean,
        NULL::text, NULL::jsonb, NULL::float8, NULL::integer, NULL::float8, NULL::float8, 0, false, NULL::integer;
      RETURN;
    END IF;
    counted_room := cnt + p_limit <= least_max;
    IF NOT counted_room THEN
      -- One statement, not a loop over the keys: a plpgsql iteration per key (and a jsonb map
      -- grown key by key) cost more than the count itself.
      SELECT coalesce(jsonb_object_agg(u.k, u.n), '{}'),
             coalesce(array_agg(u.k) FILTER (WHERE u.n >= (maxes ->> u.nm)::integer), '{}')
      INTO used, full_keys
      FROM (SELECT e.k, split_part(e.k, '#', 1) AS nm, count(*)::integer AS n FROM jobs j, unnest(j.limit_keys) e(k)
            WHERE j.lease_expires_at IS NOT NULL AND j.state = 'running' AND j.limit_keys IS NOT NULL
              AND split_part(e.k, '#', 1) = ANY (p_names)
            GROUP BY e.k) u
      WHERE NOT pers ? u.nm;
    END IF;
  END IF;
  -- Rate keys whose window is full: passed over by the scan, and the earliest reopening noted.
  -- (Each statement of a claim costs: those of rate limits run only when there are some.)
  IF pers <> '{}' THEN
    FOR r IN SELECT w.name, w.key, w.full_until FROM limit_windows w
             WHERE w.name = ANY (p_names) AND w.full_until > t AND pers ? w.name LOOP
      k := CASE WHEN r.key = '' THEN r.name ELSE r.name || '#' || r.key END;
      full_keys := full_keys || k;
      v_wake := least(v_wake, extract(epoch FROM r.full_until - t) * 1000);
    END LOOP;
  END IF;

  -- A full limit of the queue itself: nothing of it can start (deadlines are left to the sweep).
  IF p_queue_keys && full_keys THEN
    SELECT count(*)::integer INTO v_limited FROM (
      SELECT 1 FROM jobs j WHERE j.state = 'available' AND j.queue = p_queue AND j.run_at <= now() AND j.kind = ANY (p_kinds) LIMIT 1000) x;
  ELSE -- (down to "the queue's own limit full" below: the claim proper)
  -- Fast path, the common case of limits that are not hit: when the first p_limit due jobs all
  -- fit (no limit would pass one over), take them with one set-based statement instead of the
  -- job-by-job loop below. Same jobs, same order, same slots as the loop would take.
  WITH c AS (
    -- keys: as stored, else the kind's defaults, then the queue's (a retried job may carry them already).
    SELECT j.id, j.priority, j.run_at, j.expires_at IS NOT NULL AND j.expires_at <= now() AS exp,
           j.limit_keys IS NULL OR cardinality(p_queue_keys) > 0 AS rewrite,
           coalesce(j.limit_keys, ARRAY(SELECT jsonb_array_elements_text(p_defaults -> j.kind))) || p_queue_keys AS keys
    FROM jobs j
    WHERE j.state = 'available' AND j.queue = p_queue AND j.run_at <= now() AND j.kind = ANY (p_kinds)
      AND (j.limit_keys IS NULL OR NOT j.limit_keys && full_keys)
    ORDER BY j.priority, j.run_at, j.id
    LIMIT p_limit
    -- (room-mode claimers of one queue run at once: each takes other jobs)
    FOR UPDATE SKIP LOCKED
  ), need AS (
    SELECT e.k, split_part(e.k, '#', 1) AS nm, count(DISTINCT c.id)::integer AS n
    FROM c, unnest(c.keys) e(k)
    WHERE NOT c.exp AND maxes ? split_part(e.k, '#', 1)
    GROUP BY e.k
  )
  -- (`need` is not even computed when the bounded count proved room and no rate limit applies.)
  SELECT (counted_room AND pers = '{}') OR NOT EXISTS (
           SELECT 1 FROM need
           WHERE need.n + CASE WHEN pers ? need.nm THEN (
               SELECT coalesce(sum(x.c), 0)::integer FROM limit_windows w, unnest(w.starts, w.counts) x(s, c)
               WHERE w.name = need.nm AND w.key = substr(need.k, length(need.nm) + 2)
                 AND x.s > t - (pers ->> need.nm)::bigint * interval '1 millisecond')
             ELSE coalesce((used ->> need.k)::integer, 0) END > (maxes ->> need.nm)::integer),
         coalesce((SELECT array_agg(c.id ORDER BY c.priority, c.run_at, c.id) FROM c WHERE NOT c.exp), '{}'),
         coalesce((SELECT array_agg(c.id ORDER BY c.priority, c.run_at, c.id) FROM c WHERE c.exp), '{}'),
         -- Only the jobs whose stored keys change (see the UPDATE below).
         -- (a job of a kind without limits has no keys: '[]', never a JSON null the UPDATE cannot unnest)
         coalesce((SELECT jsonb_object_agg(c.id::text, coalesce((SELECT jsonb_agg(DISTINCT e ORDER BY e) FROM unnest(c.keys) e), '[]'::jsonb)) FROM c WHERE NOT c.exp AND c.rewrite), '{}'),
         CASE WHEN pers = '{}' THEN '{}'::jsonb ELSE coalesce((SELECT jsonb_object_agg(need.k, need.n) FROM need WHERE pers ? need.nm), '{}') END
  INTO ok, taken, expired, effs, took;

  -- Some limit would pass a job over: job by job, in claim order.
  IF NOT ok THEN
    taken := '{}';
    expired := '{}';
    effs := '{}';
    took := '{}';
    FOR r IN SELECT j.id, j.kind, j.expires_at, j.limit_keys AS keys FROM jobs j
             WHERE j.state = 'available' AND j.queue = p_queue AND j.run_at <= now() AND j.kind = ANY (p_kinds)
               AND (j.limit_keys IS NULL OR NOT j.limit_keys && full_keys)
             ORDER BY j.priority, j.run_at, j.id
             LIMIT greatest(p_limit * 20, 1000) LOOP
      IF r.expires_at IS NOT NULL AND r.expires_at <= now() THEN
        expired := expired || r.id;
        EXIT WHEN cardinality(taken) + cardinality(expired) >= p_limit;
        CONTINUE;
      END IF;
      keys := ARRAY(SELECT DISTINCT e FROM unnest(coalesce(r.keys, ARRAY(SELECT jsonb_array_elements_text(p_defaults -> r.kind))) || p_queue_keys) e ORDER BY e);
      ok := true;
      FOREACH k IN ARRAY keys LOOP
        nm := split_part(k, '#', 1);
        CONTINUE WHEN NOT maxes ? nm;
        IF pers ? nm AND NOT used ? k THEN
          SELECT coalesce(sum(x.c), 0)::integer, min(x.s) INTO cnt, first_at
          FROM limit_windows w, unnest(w.starts, w.counts) x(s, c)
          WHERE w.name = nm AND w.key = substr(k, length(nm) + 2) AND x.s > t - (pers ->> nm)::bigint * interval '1 millisecond';
          used := used || jsonb_build_object(k, cnt);
          oldest := oldest || jsonb_build_object(k, extract(epoch FROM coalesce(first_at, t)) * 1000);
        END IF;
        IF coalesce((used ->> k)::integer, 0) >= (maxes ->> nm)::integer THEN
          ok := false;
          IF pers ? nm THEN
            v_wake := least(v_wake, (oldest ->> k)::float8 + (pers ->> nm)::float8 - extract(epoch FROM t) * 1000);
          END IF;
        END IF;
      END LOOP;
      IF NOT ok THEN
        v_limited := v_limited + 1;
        CONTINUE;
      END IF;
      FOREACH k IN ARRAY keys LOOP
        nm := split_part(k, '#', 1);
        CONTINUE WHEN NOT maxes ? nm;
        used := jsonb_set(used, ARRAY[k], to_jsonb(coalesce((used ->> k)::integer, 0) + 1));
        IF pers ? nm THEN
          took := jsonb_set(took, ARRAY[k], to_jsonb(coalesce((took ->> k)::integer, 0) + 1));
          IF NOT oldest ? k OR (oldest ->> k) IS NULL THEN oldest := oldest || jsonb_build_object(k, extract(epoch FROM t) * 1000); END IF;
        END IF;
      END LOOP;
      taken := taken || r.id;
      IF r.keys IS NULL OR cardinality(p_queue_keys) > 0 THEN effs := effs || jsonb_build_object(r.id::text, to_jsonb(keys)); END IF;
      EXIT WHEN cardinality(taken) + cardinality(expired) >= p_limit;
    END LOOP;
  END IF;

  -- Due jobs the scan passed over for a full key (bounded: an indication for the operator and the
  -- worker, not an exact backlog).
  IF cardinality(taken) + cardinality(expired) < p_limit AND cardinality(full_keys) > 0 THEN
    SELECT v_limited + count(*)::integer INTO v_limited FROM (
      SELECT 1 FROM jobs j WHERE j.state = 'available' AND j.queue = p_queue AND j.run_at <= now() AND j.kind = ANY (p_kinds)
        AND j.limit_keys && full_keys LIMIT 1000) x;
  END IF;

  -- This claim's starts join their windows; starts that left the window are dropped.
  IF took <> '{}' THEN
    FOR r IN SELECT e.key AS k, e.value::integer AS n FROM jsonb_each_text(took) e LOOP
      nm := split_part(r.k, '#', 1);
      INSERT INTO limit_windows AS w (name, key, starts, counts)
      VALUES (nm, substr(r.k, length(nm) + 2), ARRAY[t], ARRAY[r.n])
      ON CONFLICT (name, key) DO UPDATE SET
        starts = ARRAY(SELECT x.s FROM unnest(w.starts, w.counts) x(s, c) WHERE x.s > t - (pers ->> nm)::bigint * interval '1 millisecond' ORDER BY x.s) || t,
        counts = ARRAY(SELECT x.c FROM unnest(w.starts, w.counts) x(s, c) WHERE x.s > t - (pers ->> nm)::bigint * interval '1 millisecond' ORDER BY x.s) || r.n;
      -- Full: when the oldest entries have left so that fewer than max starts remain.
      UPDATE limit_windows w SET full_until = (
        SELECT min(x.s) + (pers ->> nm)::bigint * interval '1 millisecond'
        FROM (SELECT u.s, sum(u.c) OVER (ORDER BY u.s ROWS UNBOUNDED PRECEDING) AS cum, sum(u.c) OVER () AS total
              FROM unnest(w.starts, w.counts) u(s, c)) x
        WHERE x.total >= (maxes ->> nm)::integer AND x.total - x.cum < (maxes ->> nm)::integer)
      WHERE w.name = nm AND w.key = substr(r.k, length(nm) + 2);
    END LOOP;
  END IF;

  starting := taken[1:p_start_now];
  rewrite := effs <> '{}';
  RETURN QUERY
  UPDATE jobs j SET
    state = 'running',
    attempt = j.attempt + 1,
    lease_token = nextval('lease_token_seq'),
    lease_owner = p_owner,
    lease_expires_at = now() + p_lease_ms * interval '1 millisecond',
    started_at = CASE WHEN j.at_most_once THEN NULL WHEN j.id = ANY (starting) THEN t END,
    -- The keys it holds while it runs, when they are not the stored ones (a job without keys, a
    -- queue's limits): what the slot counts and the operator's views read. (Each row's expressions
    -- are per claimed job: `rewrite` spares the common case the id's text and the map lookup.)
    limit_keys = CASE WHEN rewrite AND effs ? j.id::text THEN nullif(ARRAY(SELECT jsonb_array_elements_text(effs -> j.id::text)), '{}') ELSE j.limit_keys END,
    -- Claimed beside jobs passed over: its leaving `running` may be what they wait for.
    limit_waited = CASE WHEN v_limited > 0 THEN true END
  WHERE j.id = ANY (taken) AND j.state = 'available'
  RETURNING j.id::text, j.kind, j.queue, j.state::text, j.payload, j.attempt, j.max_attempts, j.at_most_once,
            j.lease_token::text, j.trace_context, (extract(epoch FROM now() - j.run_at) * 1000)::float8, j.priority::integer,
            (extract(epoch FROM j.expires_at - now()) * 1000)::float8, NULL::float8, NULL::integer, NULL::boolean,
            -- Rescues of it that found no start (the worker's start_first, SUSPECT in src/db/jobs-run.ts):
            -- errors the claim does not change, read from the row.
            CASE WHEN j.errors IS NULL THEN 0 ELSE (SELECT count(*)::integer FROM jsonb_array_elements(j.errors) e WHERE e @> '{"unstarted": true}') END;

  IF cardinality(expired) > 0 THEN
    RETURN QUERY
    UPDATE jobs j SET state = 'expired', finished_at = now(), lease_owner = NULL, lease_expires_at = NULL,
      reason = 'not started before its deadline ' || j.expires_at::text
    WHERE j.id = ANY (expired) AND j.state = 'available'
    RETURNING j.id::text, j.kind, j.queue, j.state::text, j.payload, j.attempt, j.max_attempts, j.at_most_once,
              j.lease_token::text, j.trace_context, (extract(epoch FROM now() - j.run_at) * 1000)::float8, j.priority::integer,
              (extract(epoch FROM j.expires_at - now()) * 1000)::float8, NULL::float8, NULL::integer, NULL::boolean, 0;
  END IF;
  END IF; -- (the queue's own limit full: nothing was taken)

  -- Jobs were passed over: every running job holding a slot of a full concurrency key (this
  -- claim's included) must wake the claimers when it leaves `running` (limit_waited, the
  -- jobs_limit_freed trigger). A job that left after the count but before its flag was written
  -- notified nobody: the running jobs of a waited key, counted again (a new snapshot), then fall
  -- short of the count, and the worker is told to look again at once. A job that leaves later
  -- carries the flag: the flag's row lock holds its update until this claim commits, and it then
  -- updates the flagged row (READ COMMITTED re-reads it).
  IF v_limited > 0 THEN
    SELECT coalesce(array_agg(u.key), '{}') INTO waited FROM jsonb_each_text(used) u
    WHERE maxes ? split_part(u.key, '#', 1) AND NOT pers ? split_part(u.key, '#', 1)
      AND u.value::integer >= (maxes ->> split_part(u.key, '#', 1))::integer;
    IF cardinality(waited) > 0 THEN
      -- Locked in id order, as a batched completion locks its rows (id = ANY: sorted keys), so
      -- the two never deadlock over a batch of running jobs.
      UPDATE jobs j SET limit_waited = true
      WHERE j.id IN (SELECT w.id FROM jobs w
                     WHERE w.lease_expires_at IS NOT NULL AND w.state = 'running' AND w.limit_keys && waited AND w.limit_waited IS NOT TRUE
                     ORDER BY w.id FOR UPDATE);
      IF EXISTS (
        SELECT 1 FROM unnest(waited) w(k)
        LEFT JOIN (SELECT e.k, count(*)::integer AS n FROM jobs j, unnest(j.limit_keys) e(k)
                   WHERE j.lease_expires_at IS NOT NULL AND j.state = 'running' AND j.limit_keys && waited
                   GROUP BY e.k) c ON c.k = w.k
        WHERE coalesce(c.n, 0) < (used ->> w.k)::integer) THEN
        v_wake := least(v_wake, 1);
      END IF;
    END IF;
  END IF;

  IF v_limited > 0 OR v_wake IS NOT NULL OR coalesce(room_next, false) <> p_room THEN
    RETURN QUERY SELECT NULL::text, NULL::text, NULL::text, NULL::text, NULL::jsonb, NULL::integer, NULL::integer, NULL::boolean,
      NULL::text, NULL::jsonb, NULL::float8, NULL::integer, NULL::float8, (CASE WHEN v_wake IS NOT NULL THEN greatest(v_wake, 1) END)::float8, v_limited,
      coalesce(room_next, false), NULL::integer;
  END IF;
END
$$;
