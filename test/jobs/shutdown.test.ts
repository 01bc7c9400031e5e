import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, type NightshiftEvent } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });
const q = () => `"${t.schema}"`;

async function states(ids: string[]) {
  const r = await t.sql.query(`SELECT id::text, state, attempt, lease_owner FROM ${q()}.jobs_all WHERE id = ANY($1::bigint[]) ORDER BY id`, [ids]);
  return r.rows as { id: string; state: string; attempt: number; lease_owner: string | null }[];
}

describe('graceful, bounded shutdown', () => {
  it('lets running jobs finish within the grace period', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = 0;
    const job = defineJob({
      kind: 'finishes',
      payload,
      queue: 'sd1',
      run: async () => {
        started++;
        await gate;
      },
    });
    const ns = t.client({ jobs: [job], shutdownGraceMs: 60_000 });
    const ids = (await ns.enqueueMany(job, [{ n: 1 }, { n: 2 }])).map((r) => r.id);
    await ns.start();
    await waitFor('both to run', () => started === 2);
    const stopping = ns.stop();
    release();
    await stopping;
    expect((await states(ids)).map((s) => s.state)).toEqual(['completed', 'completed']);
  });

  it('after the grace period aborts the rest and hands them back at once', async () => {
    const aborted: number[] = [];
    const honours = (n: number) => (_p: unknown, ctx: { signal: AbortSignal }) =>
      new Promise<void>((_resolve, reject) => ctx.signal.addEventListener('abort', () => (aborted.push(n), reject(ctx.signal.reason))));
    const alo = defineJob({ kind: 'sd-alo', payload, queue: 'sd2', run: honours(1) });
    const amo = defineJob({ kind: 'sd-amo', payload, queue: 'sd2', delivery: 'at-most-once', run: honours(2) });
    // A handler that ignores its signal entirely is handed back after the abort grace too.
    const deaf = defineJob({ kind: 'sd-deaf', payload, queue: 'sd2', run: () => new Promise<void>(() => undefined) });
    const ns = t.client({ jobs: [alo, amo, deaf], shutdownGraceMs: 100, concurrency: 3 });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    const ids = [(await ns.enqueue(alo, { n: 1 })).id, (await ns.enqueue(amo, { n: 2 })).id, (await ns.enqueue(deaf, { n: 3 })).id];
    await ns.start();
    await waitFor('all to run', async () => (await states(ids)).every((s) => s.state === 'running'));
    await ns.stop();
    expect(aborted.sort()).toEqual([1, 2]);
    const after = await states(ids);
    // At-least-once jobs are available again at once for another process; the started
    // at-most-once job may have acted, so it is abandoned for an operator, never re-run.
    expect(after.map((s) => [s.state, s.lease_owner])).toEqual([
      ['available', null],
      ['abandoned', null],
      ['available', null],
    ]);
    expect(
      events
        .filter((e) => e.type === 'job.released')
        .map((e) => (e as { state: string }).state)
        .sort(),
    ).toEqual(['abandoned', 'available', 'available']);
    const r = await t.sql.query(`SELECT errors->-1->>'kind' AS kind, run_at <= now() AS due FROM ${q()}.jobs_all WHERE id = $1`, [ids[0]]);
    expect(r.rows[0]).toEqual({ kind: 'shutdown', due: true });
  });

  it('is safe before start and twice', async () => {
    const ns = t.client();
    await Promise.all([ns.stop(), ns.stop()]);
    await ns.stop();
  });

  it('refuses to enqueue on the pool after stop, with NS_STOPPED', async () => {
    const job = defineJob({ kind: 'late', payload, run: async () => undefined });
    const ns = t.client({ jobs: [job] });
    await ns.stop();
    await expect(ns.enqueue(job, { n: 1 })).rejects.toMatchObject({ code: 'NS_STOPPED' });
  });
});
