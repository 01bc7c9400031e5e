import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { listenTo } from '../support/listen.js';
import { waitFor } from '../support/wait.js';

// Which jobs notify when they leave `running` (0011's limit_waited and jobs_limit_freed), at the
// level of the claim statement: only jobs a claim waits for, and a slot that frees while a claim
// counts is never missed. Driven with two sessions and row locks, not with timing.

const t = useTestDatabase('lwait');
t.migrateBeforeAll();

const job = defineJob({ kind: 'lw', payload: z.object({ n: z.number() }), concurrency: { limit: 1 }, run: async () => undefined });
const NAME = 'kind:lw:c';

/** Enqueues `n` jobs of the limited kind (the client computes their keys) and stores the limit as a worker would. */
async function setup(n: number): Promise<string[]> {
  const s = `"${t.schema}"`;
  await t.sql.query(`DELETE FROM ${s}.jobs`);
  await t.sql.query(`INSERT INTO ${s}.limits (name, type, max, keyed) VALUES ($1, 'concurrency', 1, false) ON CONFLICT (name) DO NOTHING`, [NAME]);
  const ns = t.client({ jobs: [job] });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await ns.enqueue(job, { n: i })).id);
  return ids;
}

type ClaimOut = { id: string | null; limited: number | null; wake_in_ms: number | null };

/** One limited claim of the default queue for one job, on `on` (a pool or a session). */
async function claim(on: pg.Pool | pg.PoolClient): Promise<ClaimOut[]> {
  const { rows } = await on.query<ClaimOut>(`SELECT id, limited, wake_in_ms FROM "${t.schema}".claim_limited('default', ARRAY['lw'], 1, 'test', 30000, 0, ARRAY[$1], '{}'::jsonb, '{}'::text[])`, [NAME]);
  return rows;
}

async function waited(id: string): Promise<boolean | null> {
  return (await t.sql.query(`SELECT limit_waited FROM "${t.schema}".jobs WHERE id = $1`, [id])).rows[0]?.limit_waited ?? null;
}

describe('which jobs wake the claimers when they leave running', () => {
  it('a job no claim waits for leaves quietly; one a claim passed jobs over for notifies its queue and limit', async () => {
    const [first, second] = await setup(2);
    expect((await claim(t.sql)).map((r) => r.id)).toEqual([first]);
    expect(await waited(first!)).toBeNull(); // nothing waits for it yet
    const listener = await listenTo(t.url, `${t.schema}:jobs`);
    const heard = listener.heard;
    try {
      // The second is passed over: the first now carries the flag, and the claim reports it.
      expect(await claim(t.sql)).toEqual([{ id: null, limited: 1, wake_in_ms: null }]);
      expect(await waited(first!)).toBe(true);
      await t.sql.query(`DELETE FROM "${t.schema}".jobs WHERE id = $1`, [first]);
      await waitFor('the freed notification', () => heard.includes(`default freed ${NAME}`));
      // The second runs now, claimed beside nothing passed over: no flag, and leaving is quiet.
      // (Notifications arrive in commit order: the marker sent after its leaving comes first.)
      expect((await claim(t.sql)).map((r) => r.id)).toEqual([second]);
      expect(await waited(second!)).toBeNull();
      heard.length = 0;
      await t.sql.query(`UPDATE "${t.schema}".jobs SET state = 'available', lease_owner = NULL, lease_expires_at = NULL WHERE id = $1`, [second]);
      await t.sql.query(`SELECT pg_notify($1, 'marker')`, [`${t.schema}:jobs`]);
      await waitFor('the marker', () => heard.includes('marker'));
      expect(heard).toEqual(['marker']);
    } finally {
      await listener.end();
    }
  });

  it('a slot that frees while a claim counts it as held makes the claim say "look again now"', async () => {
    const [first] = await setup(2);
    expect((await claim(t.sql)).map((r) => r.id)).toEqual([first]);
    const leaving = await t.sql.connect();
    const claimer = await t.sql.connect();
    try {
      // The first leaves running in a transaction still open: the claim counts it as running,
      // passes the second over, and its flag waits for that row.
      await leaving.query('BEGIN');
      await leaving.query(`DELETE FROM "${t.schema}".jobs WHERE id = $1`, [first]);
      const pid = (await claimer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const claimed = claim(claimer);
      await waitFor('the claim to wait for the row lock', async () => (await t.sql.query(`SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, [pid])).rows[0]?.wait_event_type === 'Lock');
      // It leaves without the flag (no notification), after the claim counted it.
      await leaving.query('COMMIT');
      expect(await claimed).toEqual([{ id: null, limited: 1, wake_in_ms: 1 }]);
    } finally {
      leaving.release();
      claimer.release();
    }
  });
});
