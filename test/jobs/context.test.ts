import { Writable } from 'node:stream';
import pino from 'pino';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, hold, type JobContext } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const payload = z.object({ v: z.number() });

beforeAll(async () => {
  await t.sql.query(`CREATE TABLE ${q()}.psp (id int PRIMARY KEY, status text NOT NULL)`);
  await t.sql.query(`CREATE TABLE ${q()}.side_effects (job_id bigint, v int)`);
});

async function state(id: string): Promise<string> {
  return (await t.sql.query(`SELECT state::text FROM ${q()}.jobs_all WHERE id = $1`, [id])).rows[0].state;
}

describe('what a handler gets besides its payload', () => {
  it('ctx.transaction commits writes and follow-up jobs together while the lease holds', async () => {
    const followUp = defineJob({ kind: 'ctx-follow', payload, queue: 'ctx-follow-q', run: () => undefined });
    const k = defineJob({
      kind: 'ctx-tx',
      payload,
      queue: 'ctx-tx',
      run: ({ v }, ctx) =>
        ctx.transaction(async (tx) => {
          await tx.query({ text: `INSERT INTO ${q()}.side_effects VALUES ($1, $2)`, values: [ctx.jobId, v] });
          await ctx.enqueue(followUp, { v }, { db: tx });
        }),
    });
    const ns = t.client({ jobs: [k, followUp], queues: ['ctx-tx'] });
    const { id } = await ns.enqueue(k, { v: 7 });
    await ns.start();
    await waitFor('the job to complete', async () => (await state(id)) === 'completed');
    expect((await t.sql.query(`SELECT v FROM ${q()}.side_effects WHERE job_id = $1`, [id])).rows).toEqual([{ v: 7 }]);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE kind = 'ctx-follow'`)).rows[0].n).toBe(1);
  });

  it('ctx.transaction rolls back, with LeaseLostError, when the lease was lost before it committed', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let seen: unknown;
    const k = defineJob({
      kind: 'ctx-tx-lost',
      payload,
      queue: 'ctx-tx-lost',
      maxAttempts: 1,
      run: async ({ v }, ctx) => {
        try {
          await ctx.transaction(async (tx) => {
            await tx.query({ text: `INSERT INTO ${q()}.side_effects VALUES ($1, $2)`, values: [ctx.jobId, v] });
            await gate;
          });
        } catch (err) {
          seen = err;
          throw err;
        }
      },
    });
    const ns = t.client({ jobs: [k] });
    const { id } = await ns.enqueue(k, { v: 8 });
    await ns.start();
    await waitFor('the handler to be inside its transaction', async () => (await state(id)) === 'running');
    // Another party takes the job from the worker: a new token, so this attempt's lease is gone.
    await t.sql.query(`UPDATE ${q()}.jobs SET lease_token = nextval('${t.schema}.lease_token_seq') WHERE id = $1`, [id]);
    release();
    await waitFor('the handler to see the refusal', () => seen !== undefined);
    expect(seen).toMatchObject({ code: 'NS_LEASE_LOST' });
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.side_effects WHERE job_id = $1`, [id])).rows[0].n).toBe(0);
  });

  it('ctx.progress is visible while the job runs and keeps its last value; bad values throw NS_OPTIONS_INVALID', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const errors: string[] = [];
    const k = defineJob({
      kind: 'ctx-progress',
      payload,
      queue: 'ctx-progress',
      run: async (_p, ctx) => {
        ctx.progress({ done: 1, of: 3 });
        await gate;
        for (const bad of [() => undefined, { big: 'x'.repeat(5_000) }]) {
          try {
            ctx.progress(bad);
          } catch (err) {
            errors.push((err as { code: string }).code);
          }
        }
        ctx.progress({ done: 2, of: 3 });
        ctx.progress({ done: 3, of: 3 });
      },
    });
    const ns = t.client({ jobs: [k] });
    const { id } = await ns.enqueue(k, { v: 1 });
    await ns.start();
    await waitFor('the progress to show', async () => (await ns.getJob(id)).progress !== null);
    expect((await ns.getJob(id)).progress).toEqual({ done: 1, of: 3 });
    release();
    await waitFor('the job to complete', async () => (await state(id)) === 'completed');
    expect((await ns.getJob(id)).progress).toEqual({ done: 3, of: 3 });
    expect(errors).toEqual(['NS_OPTIONS_INVALID', 'NS_OPTIONS_INVALID']);
  });

  it('onResolve runs in the resolve’s transaction: its writes and the resolve commit or fail together', async () => {
    await t.sql.query(`INSERT INTO ${q()}.psp VALUES (1, 'MANUAL_REVIEW'), (2, 'MANUAL_REVIEW')`);
    const review = defineJob({
      kind: 'ctx-review',
      payload: z.object({ pspId: z.number() }),
      queue: 'ctx-review',
      run: () => hold('orphan rqUID: needs an operator'),
      onResolve: async ({ as, payload: p, actor }, tx) => {
        if (p.pspId === 2) throw new Error('the PSP row is locked by an audit');
        await tx.query({ text: `UPDATE ${q()}.psp SET status = $2 WHERE id = $1`, values: [p.pspId, as === 'completed' ? `CONFIRMED by ${actor}` : 'FAILED'] });
      },
    });
    const ns = t.client({ jobs: [review] });
    const a = await ns.enqueue(review, { pspId: 1 });
    const b = await ns.enqueue(review, { pspId: 2 });
    await ns.start();
    await waitFor('both jobs to be held', async () => (await state(a.id)) === 'held' && (await state(b.id)) === 'held');
    const resolved = await ns.resolveJob(a.id, { as: 'completed', actor: 'ops@example.com', reason: 'checked with the PSP' });
    expect(resolved.state).toBe('completed');
    expect((await t.sql.query(`SELECT status FROM ${q()}.psp WHERE id = 1`)).rows[0].status).toBe('CONFIRMED by ops@example.com');
    await expect(ns.resolveJob(b.id, { as: 'failed' })).rejects.toThrow('locked by an audit');
    // Nothing changed: the job is still held, and no audit entry was written for it.
    expect(await state(b.id)).toBe('held');
    expect(await ns.listAudit({ target: `job:${b.id}` })).toEqual([]);
  });
});

describe('trace ids', () => {
  const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
  const PARENT = `00-${TRACE}-00f067aa0ba902b7-01`;

  it("are carried from a SQL caller's nightshift.traceparent setting, and into the job's log lines", async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk, _enc, cb) {
        for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
        cb();
      },
    });
    let ctxTrace: string | undefined;
    const k = defineJob({
      kind: 'ctx-traced',
      payload,
      queue: 'ctx-traced',
      run: (_p, ctx: JobContext) => {
        ctxTrace = ctx.traceId;
        ctx.log.info('working');
      },
    });
    const ns = t.client({ jobs: [k], logger: pino({ level: 'debug' }, sink) });
    await ns.migrate();
    const client = await t.sql.connect();
    let id: string;
    try {
      await client.query('BEGIN');
      await client.query(`SELECT set_config('nightshift.traceparent', $1, true)`, [PARENT]);
      id = String((await client.query(`SELECT ${q()}.enqueue('ctx-traced', '{"v":1}') AS id`)).rows[0].id);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
    await ns.start();
    await waitFor('the job to complete', async () => (await state(id)) === 'completed');
    expect((await ns.getJob(id)).traceContext).toEqual({ traceparent: PARENT });
    expect(ctxTrace).toBe(TRACE);
    await waitFor('the job’s log lines', () => lines.some((l) => l.event === 'job.completed' && l.jobId === id));
    for (const l of lines.filter((x) => x.jobId === id && (x.event === 'job.started' || x.event === 'job.completed' || x.msg === 'working'))) {
      expect(l.traceId).toBe(TRACE);
    }
  });
});
