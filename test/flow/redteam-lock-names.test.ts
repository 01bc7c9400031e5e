import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

// claim_limited's advisory locks (migration 0011): a limit's own lock is keyed by its name, a room
// slot of it by the name and the slot's number. Names may hold ':' and digits, so the slot 0 of a
// limit named `x` must not be the lock of a limit named `x:0`: claims of unrelated limits must not
// wait for one another.

const t = useTestDatabase('rtlock');
t.migrateBeforeAll();

const x = defineJob({ kind: 'rx', payload: z.object({ n: z.number() }), concurrency: { limit: 1_000, name: 'x' }, run: async () => undefined });
const x0 = defineJob({ kind: 'rx0', queue: 'other', payload: z.object({ n: z.number() }), concurrency: { limit: 1_000, name: 'x:0' }, run: async () => undefined });

function claim(on: pg.Client, kind: string, queue: string, name: string, room: boolean): Promise<unknown> {
  return on.query(`SELECT id FROM "${t.schema}".claim_limited($1, ARRAY[$2], 1, 'test', 30000, 0, ARRAY[$3], '{}'::jsonb, '{}'::text[], $4)`, [queue, kind, name, room]);
}

describe('the locks of limits whose names look like room slots', () => {
  it('an exclusive claim of limit "x:0" does not wait for room-mode claims of limit "x"', async () => {
    const s = `"${t.schema}"`;
    await t.sql.query(`INSERT INTO ${s}.limits (name, type, max, keyed) VALUES ('limit:x', 'concurrency', 1000, false), ('limit:x:0', 'concurrency', 1000, false)`);
    const ns = t.client({ jobs: [x, x0] });
    await ns.enqueueMany(
      x,
      Array.from({ length: 8 }, (_, n) => ({ n })),
    );
    await ns.enqueue(x0, { n: 0 });
    const open: pg.Client[] = [];
    try {
      for (let i = 0; i < 5; i++) {
        const c = new pg.Client({ connectionString: t.url });
        await c.connect();
        await c.query('BEGIN');
        open.push(c);
      }
      // Four room-mode claims of "x" hold its four slots, 0 among them.
      for (const c of open.slice(0, 4)) await claim(c, 'rx', 'default', 'limit:x', true);
      const other = open[4]!;
      const pid = (await other.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      const done = claim(other, 'rx0', 'other', 'limit:x:0', false).then(
        () => 'claimed',
        () => 'ended',
      );
      const waits = async () => (await t.sql.query(`SELECT wait_event_type FROM pg_stat_activity WHERE pid = $1`, [pid])).rows[0]?.wait_event_type === 'Lock';
      // Either the claim finishes or it waits for a lock: which one came first says it all.
      const first = await Promise.race([done, waitFor('the claim of x:0 to finish or wait', async () => (await waits()) && 'waits')]);
      expect(first).toBe('claimed');
    } finally {
      for (const c of open) await c.end();
    }
  });
});
