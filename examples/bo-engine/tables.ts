// The bo-engine example's own tables (what its jobs, daemon and settlement write), in the schema
// `s` (quoted), beside nightshift's: created by its test and by `npm start`'s tour after `nightshift migrate`.

/** The CREATE TABLE statements of the example's tables, in schema `s` (already quoted). */
export const boTables = (s: string): string => `
  CREATE TABLE ${s}.bo_runs (job_id bigint, kind text, payload jsonb, pid int, token bigint, at timestamptz DEFAULT clock_timestamp());
  CREATE TABLE ${s}.bo_seed_rotations (token bigint, pid int, at timestamptz DEFAULT clock_timestamp());
  CREATE TABLE ${s}.bo_refusals (token bigint, pid int, at timestamptz DEFAULT clock_timestamp());
  CREATE TABLE ${s}.bo_settle_attempts (day_id text, pool int, attempt int, pid int, dry_run boolean, at timestamptz DEFAULT clock_timestamp());
  CREATE TABLE ${s}.bo_payouts (day_id text, pool int, winners int, dry_run boolean, PRIMARY KEY (day_id, pool, dry_run));
  CREATE TABLE ${s}.bo_faults (day_id text, pool int);
  CREATE TABLE ${s}.bo_commits (day_id text PRIMARY KEY, bundle_sha256 text);
  CREATE TABLE ${s}.bo_chain_stats (day_id text, key text, value text, PRIMARY KEY (day_id, key));
  CREATE TABLE ${s}.bo_notifications (day_id text, pool int, PRIMARY KEY (day_id, pool));
  CREATE TABLE ${s}.bo_global_stats (day_id text PRIMARY KEY, winners int);
  CREATE TABLE ${s}.bo_alerts (day_id text, reason text);
  CREATE TABLE ${s}.bo_buy_intents (id serial, status text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());`;
