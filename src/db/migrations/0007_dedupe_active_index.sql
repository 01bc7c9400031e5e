-- nightshift:online
-- nightshift:compatible — an index only: older code keeps working with it.
-- 0007: the index of the 'active' dedupe scope: at most one available or running job per kind and
-- key. Built with CREATE INDEX CONCURRENTLY, so a table of millions of jobs keeps taking writes
-- while it builds (the migrator waits for another replica's build, and rebuilds one left invalid).
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS jobs_dedupe_active ON __schema__.jobs (kind, dedupe_key)
  WHERE dedupe_key IS NOT NULL AND dedupe_scope = 'active' AND state IN ('available', 'running');
