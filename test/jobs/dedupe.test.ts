import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const notify = defineJob({ kind: 'notify', payload: z.object({ v: z.number() }), run: async () => undefined });

async function jobsWithKey(key: string) {
  const r = await t.sql.query(`SELECT id::text, state, payload, run_at FROM "${t.schema}".jobs_all WHERE kind = 'notify' AND dedupe_key = $1 ORDER BY id`, [key]);
  return r.rows as { id: string; state: string; payload: { v: number }; run_at: Date }[];
}

describe('dedupe keys', () => {
  it('returns the pending job for a repeat and leaves it unchanged', async () => {
    const ns = t.client({ jobs: [notify] });
    const a = await ns.enqueue(notify, { v: 1 }, { dedupeKey: 'k1' });
    const b = await ns.enqueue(notify, { v: 2 }, { dedupeKey: 'k1' });
    expect(b).toEqual({ id: a.id, deduped: true });
    const rows = await jobsWithKey('k1');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.payload).toEqual({ v: 1 });
  });

  it('creates a new job when the job holding the key is running or finished', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started: number[] = [];
    const slow = defineJob({
      kind: 'notify',
      payload: z.object({ v: z.number() }),
      run: async ({ v }) => {
        started.push(v);
        if (v === 201) await gate;
      },
    });
    // One slot, held by the first job while it runs, and no claiming ahead, so the follow-up stays pending.
    const ns = t.client({ jobs: [slow], concurrency: 1, prefetch: 0 });
    const first = await ns.enqueue(slow, { v: 201 }, { dedupeKey: 'k2' });
    await ns.start();
    await waitFor('the first job to run', () => started.includes(201));
    // Running: the running job may have read stale state, so a repeat is a new pending job.
    const second = await ns.enqueue(slow, { v: 202 }, { dedupeKey: 'k2' });
    expect(second.deduped).toBe(false);
    expect(second.id).not.toBe(first.id);
    // And a burst while it runs collapses into that one follow-up.
    const third = await ns.enqueue(slow, { v: 203 }, { dedupeKey: 'k2' });
    expect(third).toEqual({ id: second.id, deduped: true });
    release();
    await waitFor('both jobs to complete', async () => (await jobsWithKey('k2')).every((r) => r.state === 'completed'));
    // Finished: the key is free again.
    const fourth = await ns.enqueue(slow, { v: 204 }, { dedupeKey: 'k2' });
    expect(fourth.deduped).toBe(false);
    expect((await jobsWithKey('k2')).map((r) => r.id)).toEqual([first.id, second.id, fourth.id]);
  });

  it('holds under concurrent enqueue from many connections, with rolled-back transactions', async () => {
    const ns = t.client({ jobs: [notify] });
    const keys = ['c1', 'c2', 'c3', 'c4'];
    const pool = new pg.Pool({ connectionString: t.url, max: 32 });
    try {
      const outcomes = await Promise.all(
        Array.from({ length: 96 }, async (_, i) => {
          const client = await pool.connect();
          try {
            await client.query('BEGIN');
            const r = await ns.enqueue(notify, { v: i }, { dedupeKey: keys[i % keys.length]!, db: client });
            if (i % 10 === 3) {
              await client.query('ROLLBACK');
              return { ...r, committed: false };
            }
            await client.query('COMMIT');
            return { ...r, committed: true };
          } finally {
            client.release();
          }
        }),
      );
      for (const key of keys) {
        const rows = await jobsWithKey(key);
        expect(rows, `jobs with key ${key}`).toHaveLength(1);
        // Every committed enqueue of the key points at that one job.
        const committed = outcomes.filter((o, i) => o.committed && keys[i % keys.length] === key);
        expect(new Set(committed.map((o) => o.id))).toEqual(new Set([rows[0]!.id]));
      }
    } finally {
      await pool.end();
    }
  });

  it('treats a repeated key within one enqueueMany like repeated enqueues', async () => {
    const ns = t.client({ jobs: [notify] });
    const results = await ns.enqueueMany(notify, [{ v: 1 }, { v: 2 }, { v: 3 }], (p) => ({ dedupeKey: p.v === 2 ? 'm-other' : 'm-same' }));
    expect(results[0]!.deduped).toBe(false);
    expect(results[2]).toEqual({ id: results[0]!.id, deduped: true });
    expect(results[1]!.deduped).toBe(false);
  });
});

describe('debounce', () => {
  it('moves the pending job to now + window and keeps the latest payload', async () => {
    const ns = t.client({ jobs: [notify] });
    const a = await ns.enqueue(notify, { v: 1 }, { dedupeKey: 'd1', debounceMs: 1_800_000 });
    const [before] = await jobsWithKey('d1');
    const b = await ns.enqueue(notify, { v: 2 }, { dedupeKey: 'd1', debounceMs: 1_800_000 });
    expect(b).toEqual({ id: a.id, deduped: true });
    const [after] = await jobsWithKey('d1');
    expect(after!.payload).toEqual({ v: 2 });
    expect(after!.run_at.getTime()).toBeGreaterThan(before!.run_at.getTime());
    const r = await t.sql.query(`SELECT (run_at - now()) > interval '29 minutes' AS later FROM "${t.schema}".jobs_all WHERE id = $1`, [a.id]);
    expect(r.rows[0].later).toBe(true);
  });
});
