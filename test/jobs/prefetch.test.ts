import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Database } from '../../src/db/database.js';
import { createPool } from '../../src/db/pool.js';
import { defineJob, type NightshiftEvent } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });
const q = () => `"${t.schema}"`;

async function rows(ids: string[]) {
  const r = await t.sql.query(`SELECT id::text, state, attempt, lease_token::text, started_at, reason, errors FROM ${q()}.jobs_all WHERE id = ANY($1::bigint[]) ORDER BY id`, [ids]);
  return r.rows as { id: string; state: string; attempt: number; lease_token: string | null; started_at: Date | null; reason: string | null; errors: { message: string }[] | null }[];
}

async function countIn(ids: string[], state: string): Promise<number> {
  return (await rows(ids)).filter((r) => r.state === state).length;
}

describe('claiming ahead of free slots (prefetch)', () => {
  it('claims more than the free slots once jobs run fast, and runs every job once', async () => {
    const runs = new Map<number, number>();
    const job = defineJob({ kind: 'pf-fast', payload, queue: 'pf-fast', run: ({ n }) => void runs.set(n, (runs.get(n) ?? 0) + 1) });
    const ns = t.client({ jobs: [job], concurrency: 1 });
    const asked: number[] = [];
    ns.on((e) => {
      if (e.type === 'worker.claimed' && e.queue === 'pf-fast') asked.push(e.asked);
    });
    const ids = (
      await ns.enqueueMany(
        job,
        Array.from({ length: 300 }, (_, n) => ({ n })),
      )
    ).map((r) => r.id);
    await ns.start();
    await waitFor('all jobs to complete', async () => (await countIn(ids, 'completed')) === 300);
    expect(Math.max(...asked)).toBeGreaterThan(1);
    expect(runs.size).toBe(300);
    expect([...runs.values()].every((c) => c === 1)).toBe(true);
  });

  it('does not claim ahead for handlers that do not finish', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = 0;
    const job = defineJob({
      kind: 'pf-stalled',
      payload,
      queue: 'pf-stalled',
      run: async () => {
        started++;
        await gate;
      },
    });
    const ns = t.client({ jobs: [job], concurrency: 2 });
    const ids = (
      await ns.enqueueMany(
        job,
        Array.from({ length: 20 }, (_, n) => ({ n })),
      )
    ).map((r) => r.id);
    await ns.start();
    await waitFor('two handlers to run', () => started === 2);
    // Nothing finished, so the recent rate is zero and no job is held beyond the two slots.
    expect(await countIn(ids, 'running')).toBe(2);
    expect(ns.runningCount).toBe(2);
    release();
    await waitFor('all jobs to complete', async () => (await countIn(ids, 'completed')) === 20);
  });

  it('hands held jobs back unrun on stop, with their attempt returned', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ran = new Set<number>();
    const BLOCK = 30;
    const job = defineJob({
      kind: 'pf-handback',
      payload,
      queue: 'pf-handback',
      run: async ({ n }) => {
        ran.add(n);
        if (n === BLOCK) await gate;
      },
    });
    const ns = t.client({ jobs: [job], concurrency: 1, shutdownGraceMs: 0 });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    const ids = (
      await ns.enqueueMany(
        job,
        Array.from({ length: 200 }, (_, n) => ({ n })),
      )
    ).map((r) => r.id);
    await ns.start();
    // The jobs before BLOCK ran fast, so the worker claims ahead while BLOCK holds the only slot.
    await waitFor('the blocking job to run', () => ran.has(BLOCK));
    await waitFor('the jobs before it to complete', async () => (await countIn(ids.slice(0, BLOCK), 'completed')) === BLOCK);
    await waitFor('a job held ahead of the slot', async () => (await countIn(ids.slice(BLOCK + 1), 'running')) > 0);
    const held = (await rows(ids.slice(BLOCK + 1))).filter((r) => r.state === 'running').map((r) => r.id);
    // No grace: the blocking handler is aborted and handed back too; the held jobs never start.
    await ns.stop();
    const after = await rows(held);
    for (const r of after) {
      expect(r).toMatchObject({ state: 'available', attempt: 0 });
      expect(ran.has(ids.indexOf(r.id))).toBe(false);
    }
    const released = events.filter((e) => e.type === 'job.released').map((e) => (e as { jobId: string; state: string }).jobId);
    expect(released).toEqual(expect.arrayContaining(held));
    release();
  });

  it('expires a held job whose deadline passes before a slot frees, without running it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const ran = new Set<number>();
    const BLOCK = 30;
    const job = defineJob({
      kind: 'pf-deadline',
      payload,
      queue: 'pf-deadline',
      run: async ({ n }) => {
        ran.add(n);
        if (n === BLOCK) await gate;
      },
    });
    const ns = t.client({ jobs: [job], concurrency: 1 });
    const ids = (
      await ns.enqueueMany(
        job,
        Array.from({ length: 100 }, (_, n) => ({ n })),
        (p) => (p.n > BLOCK ? { maxAgeMs: 3_000 } : {}),
      )
    ).map((r) => r.id);
    await ns.start();
    await waitFor('the blocking job to run', () => ran.has(BLOCK));
    await waitFor('a job held ahead of the slot', async () => (await countIn(ids.slice(BLOCK + 1), 'running')) > 0);
    await waitFor(
      'the deadlines to pass on the database clock',
      async () => (await t.sql.query(`SELECT now() > max(expires_at) AS past FROM ${q()}.jobs_all WHERE id = ANY($1::bigint[])`, [ids])).rows[0].past,
      { timeoutMs: 20_000, everyMs: 100 },
    );
    release();
    const late = ids.slice(BLOCK + 1);
    await waitFor('every late job to expire', async () => (await countIn(late, 'expired')) === late.length);
    const expired = await rows(late);
    // Held jobs carry the token of their claim; they were expired by the worker, never run.
    expect(expired.some((r) => r.lease_token !== null)).toBe(true);
    for (const r of expired) {
      expect(r.attempt).toBe(0);
      expect(r.reason).toContain('not started before its deadline');
      expect(ran.has(ids.indexOf(r.id))).toBe(false);
    }
  });

  it('rescues an at-most-once job whose start was never recorded back to the queue, and abandons one that started', async () => {
    const amo = defineJob({ kind: 'pf-amo', payload, queue: 'pf-amo', delivery: 'at-most-once', run: () => undefined });
    const ns = t.client({ jobs: [amo], maintenance: false });
    const ids = (await ns.enqueueMany(amo, [{ n: 1 }, { n: 2 }])).map((r) => r.id);
    // A process that claimed both, recorded the start of the second only, then died.
    const pool = createPool({ connectionString: t.url, max: 1, applicationName: 'pf-crashed' });
    try {
      const db = new Database(pool, t.schema);
      const claimed = await db.jobs.claim({ queue: 'pf-amo', kinds: ['pf-amo'], limit: 2, owner: 'crashed', leaseMs: 60_000 });
      expect(claimed.map((r) => r.id).sort()).toEqual([...ids].sort());
      const second = claimed.find((r) => r.id === ids[1])!;
      expect([...(await db.jobs.start({ ids: [second.id], tokens: [second.lease_token] }))]).toEqual([second.lease_token]);
    } finally {
      await pool.close();
    }
    expect((await rows(ids)).map((r) => r.started_at === null)).toEqual([true, false]);
    await t.sql.query(`UPDATE ${q()}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ANY($1::bigint[])`, [ids]);
    expect((await ns.runMaintenance()).rescued).toBe(2);
    const [never, begun] = await rows(ids);
    expect(never).toMatchObject({ state: 'available', attempt: 0 });
    expect(never!.errors!.at(-1)!.message).toContain('before the handler started');
    expect(begun).toMatchObject({ state: 'abandoned', attempt: 1 });
    expect(begun!.reason).toContain('at-most-once');
  });
});
