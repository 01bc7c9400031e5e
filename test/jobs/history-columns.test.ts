import { describe, expect, it } from 'vitest';
import { HISTORY_COLUMNS } from '../../src/db/jobs-run.js';
import { useTestDatabase } from '../support/db.js';

// Migration 0008: a finished job moves from `jobs` to `jobs_history` by statements that name
// HISTORY_COLUMNS, and `jobs_all` is the union of the two. A migration that adds a column to one
// of them and forgets the others would lose that column's value when a job finishes (or hide it
// from every reader of jobs_all): this test fails first.

const t = useTestDatabase('histcols');
t.migrateBeforeAll();

/**
 * Columns only an unfinished job has, deliberately absent from the history: the limit keys a
 * running job holds and whether a claim waits for it (migration 0011), both meaningless once it
 * finished. Adding one here is a decision.
 */
const LIVE_ONLY = ['limit_keys', 'limit_waited'];

const history = HISTORY_COLUMNS.split(',').map((c) => c.trim());

/** A relation's columns in order, with their types, from pg_attribute (dropped columns excluded). */
async function columns(relation: string): Promise<{ name: string; type: string }[]> {
  const { rows } = await t.sql.query(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
     FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [t.schema, relation],
  );
  return rows as { name: string; type: string }[];
}

describe('the columns of jobs, jobs_history and jobs_all', () => {
  it('HISTORY_COLUMNS names every column of jobs_history and jobs_all in their order, and every column of jobs but the live-only ones', async () => {
    const [jobs, hist, all] = await Promise.all([columns('jobs'), columns('jobs_history'), columns('jobs_all')]);
    expect(new Set(history).size).toBe(history.length);
    expect(hist.map((c) => c.name)).toEqual(history);
    expect(all.map((c) => c.name)).toEqual(history);
    expect(jobs.map((c) => c.name).sort()).toEqual([...history, ...LIVE_ONLY].sort());
  });

  it('each shared column has one type in the three relations', async () => {
    const [jobs, hist, all] = await Promise.all([columns('jobs'), columns('jobs_history'), columns('jobs_all')]);
    const typeIn = (rel: { name: string; type: string }[]) => Object.fromEntries(history.map((name) => [name, rel.find((c) => c.name === name)?.type]));
    expect(typeIn(hist)).toEqual(typeIn(jobs));
    expect(typeIn(all)).toEqual(typeIn(jobs));
  });

  it('agrees with information_schema, which a reader of the schema sees', async () => {
    const { rows } = await t.sql.query(
      `SELECT table_name, array_agg(column_name::text ORDER BY ordinal_position) AS cols FROM information_schema.columns
       WHERE table_schema = $1 AND table_name IN ('jobs', 'jobs_history', 'jobs_all') GROUP BY table_name ORDER BY table_name`,
      [t.schema],
    );
    const by = Object.fromEntries(rows.map((r: { table_name: string; cols: string[] }) => [r.table_name, r.cols]));
    expect(by.jobs_history).toEqual(history);
    expect(by.jobs_all).toEqual(history);
    expect((by.jobs ?? []).filter((c: string) => !LIVE_ONLY.includes(c)).sort()).toEqual([...history].sort());
  });
});
