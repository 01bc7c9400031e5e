import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

// claim_limited's two modes (migration 0011), driven with sessions whose transactions stay open:
// exclusive claims of a limit run one at a time; room-mode claims (limits far from hit) run
// beside each other, at most 4 at once, each at most a room batch (max / 8), and only when the
// count proves room for 4 of them.

const t = useTestDatabase('lroom');
t.migrateBeforeAll();

const job = defineJob({ kind: 'lr', payload: z.object({ n: z.number() }), concurrency: { limit: 1_000 }, run: async () => undefined });
const NAME = 'kind:lr:c';

async function setup(jobs: number, max: number): Promise<void> {
  const s = `"${t.schema}"`;
  await t.sql.query(`DELETE FROM ${s}.jobs`);
  await t.sql.query(`INSERT INTO ${s}.limits (name, type, max, keyed) VALUES ($1, 'concurrency', $2, false) ON CONFLICT (name) DO UPDATE SET max = EXCLUDED.max`, [NAME, max]);
  await t.client({ jobs: [job] }).enqueueMany(
    job,
    Array.from({ length: jobs }, (_, n) => ({ n })),
  );
}

type Out = { id: string | null; limited: number | null; room: boolean | null };

function claim(on: pg.Pool | pg.Client, n: number, room: boolean): Promise<Out[]> {
  return on.query<Out>(`SELECT id, limited, room FROM "${t.schema}".claim_limited('default', ARRAY['lr'], $1, 'test', 30000, 0, ARRAY[$2], '{}'::jsonb, '{}'::text[], $3)`, [n, NAME, room]).then((r) => r.rows);
}

async function running(): Promise<number> {
  return (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs WHERE state = 'running'`)).rows[0].n;
}

/** Sessions with a transaction open each, closed (rolled back) at the end. */
async function sessions(n: number): Promise<pg.Client[]> {
  const out: pg.Client[] = [];
  for (let i = 0; i < n; i++) {
    const c = new pg.Client({ connectionString: t.url }); // (the file's pool holds 4: too few)
    await c.connect();
    pids.set(c, (await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
    await c.query('BEGIN');
    out.push(c);
  }
  return out;
}

async function end(cs: pg.Client[]): Promise<void> {
  for (const c of cs) {
    await c.end();
  }
}

const pids = new Map<pg.Client, number>();

/** Whether the session `c` waits for a lock now. */
async function waitsForLock(c: pg.Client): Promise<boolean> {
  return (await t.sql.query(`SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, [pids.get(c)])).rows[0]?.wait_event_type === 'Lock';
}

describe('the limited claim in room mode', () => {
  it('claims when the count proves room for four room batches, and otherwise claims nothing and says to claim exclusively', async () => {
    // A limit of 80: a room batch is at most 80 / 8 = 10, and room holds while running + 4 × 10 <= 80.
    await setup(70, 80);
    // A batch above the room batch is not in room mode, even with nothing running.
    expect(await claim(t.sql, 11, true)).toEqual([{ id: null, limited: 0, room: false }]);
    expect(await running()).toBe(0);
    // 0, 10, 20, 30, 40 running + 4 × 10 <= 80: room.
    for (let i = 0; i < 5; i++) {
      const a = await claim(t.sql, 10, true);
      expect(a.filter((r) => r.id !== null)).toHaveLength(10);
      expect(a.some((r) => r.id === null)).toBe(false); // the mode holds: nothing to say
    }
    // 50 running + 4 × 10 > 80: not proven; nothing claimed, and the claim says so.
    expect(await claim(t.sql, 10, true)).toEqual([{ id: null, limited: 0, room: false }]);
    expect(await running()).toBe(50);
    // Exclusively it claims (50 + 10 <= 80), and says the next one may not be in room mode.
    const b = await claim(t.sql, 10, false);
    expect(b.filter((r) => r.id !== null)).toHaveLength(10);
    expect(b.find((r) => r.id === null)).toBeUndefined(); // exclusive stays exclusive: nothing to say
    // With room again, an exclusive claim says the next may be in room mode.
    await setup(5, 80);
    expect((await claim(t.sql, 2, false)).find((r) => r.id === null)).toEqual({ id: null, limited: 0, room: true });
  });

  it('room-mode claims run beside each other (four at most), each taking other jobs; an exclusive claim waits for them', async () => {
    await setup(50, 1_000);
    const open = await sessions(6);
    try {
      const [a, b, c, d, e, x] = open as [pg.Client, pg.Client, pg.Client, pg.Client, pg.Client, pg.Client];
      // Four room-mode claims in four open transactions: none waits for another.
      const taken = [];
      for (const s of [a, b, c, d]) taken.push(...(await claim(s, 5, true)).map((r) => r.id));
      expect(new Set(taken).size).toBe(20);
      // A fifth waits for a slot.
      const fifth = claim(e, 5, true);
      await waitFor('the fifth room-mode claim to wait for a slot', () => waitsForLock(e));
      for (const s of [a, b, c, d]) await s.query('COMMIT');
      expect((await fifth).filter((r) => r.id !== null)).toHaveLength(5);
      // An exclusive claim waits for the room-mode claim still open.
      const exclusive = claim(x, 5, false);
      await waitFor('the exclusive claim to wait', () => waitsForLock(x));
      await e.query('COMMIT');
      const got = (await exclusive).filter((r) => r.id !== null).map((r) => r.id);
      expect(got).toHaveLength(5);
      await x.query('COMMIT');
      expect(await running()).toBe(30);
    } finally {
      await end(open);
    }
  });
});
