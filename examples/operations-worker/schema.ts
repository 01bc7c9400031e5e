// The operations worker's own tables (seed 003's app schema, reduced to what the worker reads) and
// the SQL function pack writes call. They live in NS_SCHEMA beside nightshift's tables, so each test has its own.
import type { Executor } from '../../src/index.js';

/** Creates the tables and `queue_pack_change` once (an advisory lock orders pods that start together). */
export async function migrateOps(db: { transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> }, schema: string): Promise<void> {
  const q = `"${schema}"`;
  await db.transaction(async (tx) => {
    await tx.query({ text: `SELECT pg_advisory_xact_lock(hashtext($1))`, values: [`ops-migrate:${schema}`] });
    await tx.query({
      text: `
      CREATE TABLE IF NOT EXISTS ${q}.ops_members (couple_id text NOT NULL, user_id text NOT NULL, push_token text NOT NULL, PRIMARY KEY (couple_id, user_id));
      CREATE TABLE IF NOT EXISTS ${q}.ops_responses (id bigserial PRIMARY KEY, session_id text NOT NULL, couple_id text NOT NULL, user_id text NOT NULL,
        digested boolean NOT NULL DEFAULT false, created_at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE IF NOT EXISTS ${q}.ops_messages (id bigserial PRIMARY KEY, couple_id text NOT NULL, body text NOT NULL, encrypted boolean NOT NULL DEFAULT false, label text);
      CREATE TABLE IF NOT EXISTS ${q}.ops_media (path text PRIMARY KEY);
      CREATE TABLE IF NOT EXISTS ${q}.ops_janitor_runs (pid int NOT NULL, token bigint NOT NULL, deleted int NOT NULL, at timestamptz NOT NULL DEFAULT now());
      -- Seed 003: pack writes call this after enabling a pack. It checks that the caller belongs to
      -- the couple (nothing is written otherwise) and enqueues the partner's notification through
      -- nightshift's enqueue(), keyed by couple with the 30-minute debounce: a burst of pack changes
      -- is one notification, sent 30 minutes after the last, with the latest change.
      CREATE OR REPLACE FUNCTION ${q}.queue_pack_change(couple_id text, authenticated_user_id text) RETURNS bigint
      LANGUAGE plpgsql AS $fn$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM ${q}.ops_members m WHERE m.couple_id = queue_pack_change.couple_id AND m.user_id = authenticated_user_id) THEN
          RAISE EXCEPTION 'user % is not a member of couple %', authenticated_user_id, queue_pack_change.couple_id
            USING ERRCODE = '42501', HINT = 'only a member of the couple may change its packs';
        END IF;
        RETURN ${q}.enqueue('pack-change', jsonb_build_object('coupleId', couple_id, 'userId', authenticated_user_id),
                            dedupe_key => 'pack-change:' || couple_id, debounce => interval '30 minutes');
      END
      $fn$;`,
    });
  });
}
