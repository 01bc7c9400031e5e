import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

// Room mode's proof (claim_limited, migration 0011) must bound what every room-mode claimer beside
// a claim may take. The worker's batch is its free slots plus what it holds ahead, so it varies
// from claim to claim (and between processes and queues sharing a limit): a small claim beside
// big ones counted only the committed jobs and passed the limit (a claim of 1 beside three
// uncommitted claims of 20 under a limit of 80 made 81).

const t = useTestDatabase('rtroom');
t.migrateBeforeAll();

const job = defineJob({ kind: 'rr', payload: z.object({ n: z.number() }), concurrency: { limit: 80 }, run: async () => undefined });
const NAME = 'kind:rr:c';
const MAX = 80;

function claim(on: pg.Client, n: number, room: boolean): Promise<{ id: string | null; room: boolean | null }[]> {
  return on.query(`SELECT id, room FROM "${t.schema}".claim_limited('default', ARRAY['rr'], $1, 'test', 30000, 0, ARRAY[$2], '{}'::jsonb, '{}'::text[], $3)`, [n, NAME, room]).then((r) => r.rows);
}

async function running(): Promise<number> {
  return (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs WHERE state = 'running'`)).rows[0].n;
}

async function setup(): Promise<void> {
  const s = `"${t.schema}"`;
  await t.sql.query(`DELETE FROM ${s}.jobs`);
  await t.sql.query(`INSERT INTO ${s}.limits (name, type, max, keyed) VALUES ($1, 'concurrency', $2, false) ON CONFLICT (name) DO NOTHING`, [NAME, MAX]);
  await t.client({ jobs: [job] }).enqueueMany(
    job,
    Array.from({ length: 400 }, (_, n) => ({ n })),
  );
}

async function sessions(n: number): Promise<pg.Client[]> {
  const out: pg.Client[] = [];
  for (let i = 0; i < n; i++) {
    const c = new pg.Client({ connectionString: t.url });
    await c.connect();
    out.push(c);
  }
  return out;
}

describe('room mode with claims of different batch sizes', () => {
  it('a small claim beside uncommitted big ones does not pass the limit', async () => {
    await setup();
    const open = await sessions(5);
    try {
      for (const c of open) await c.query('BEGIN');
      const [a, b, c, d, e] = open as [pg.Client, pg.Client, pg.Client, pg.Client, pg.Client];
      // Four claims of 20 in room mode, beside each other (whatever the mode lets them take).
      for (const x of [a, b, c, d]) await claim(x, 20, true);
      await a.query('COMMIT');
      // A claim of 1 takes a's slot lock: it sees only a's jobs committed.
      await claim(e, 1, true);
      for (const x of [b, c, d, e]) await x.query('COMMIT');
      expect(await running()).toBeLessThanOrEqual(MAX);
    } finally {
      for (const c of open) await c.end();
    }
  });
});
