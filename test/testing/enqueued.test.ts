// enqueued / assertEnqueued / refuteEnqueued: what waits in the queue, also through a caller's transaction.
import { AssertionError } from 'node:assert';
import { defineJob } from 'nightshift';
import { assertEnqueued, createTestSchema, drain, enqueued, refuteEnqueued, type TestSchema } from 'nightshift/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';

const notify = defineJob({
  kind: 'notify',
  payload: z.object({ user: z.object({ id: z.number(), tags: z.array(z.string()) }), channel: z.string() }),
  run: async () => undefined,
});

let t: TestSchema;
let pool: pg.Pool;
beforeAll(async () => {
  t = await createTestSchema({ databaseUrl: inject('databaseUrl'), options: { jobs: [notify] }, prefix: 'enq' });
  pool = new pg.Pool({ connectionString: t.databaseUrl, max: 2 });
});
afterAll(async () => {
  await pool?.end();
  await t?.drop();
});

describe('enqueued', () => {
  it('matches payloads partially at every depth, arrays element by element, or by a predicate', async () => {
    await t.ns.enqueue(notify, { user: { id: 1, tags: ['a', 'b'] }, channel: 'mail' });
    await t.ns.enqueue(notify, { user: { id: 2, tags: [] }, channel: 'sms' }, { priority: 3 });
    expect((await enqueued(t.ns, notify)).map((j) => (j.payload as { channel: string }).channel)).toEqual(['mail', 'sms']);
    expect(await enqueued(t.ns, notify, { user: { id: 1 } })).toHaveLength(1);
    expect(await enqueued(t.ns, notify, { user: { tags: ['a', 'b'] } })).toHaveLength(1);
    expect(await enqueued(t.ns, notify, { user: { tags: ['a'] } })).toHaveLength(0);
    expect(await enqueued(t.ns, 'notify', (j) => j.priority === 3)).toHaveLength(1);
    await assertEnqueued(t.ns, notify, { channel: 'sms' }, { count: 1 });
    await refuteEnqueued(t.ns, notify, { channel: 'push' });
  });

  it('fails with a message that lists the jobs of that kind it found', async () => {
    const err = await assertEnqueued(t.ns, notify, { channel: 'push' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AssertionError);
    expect((err as Error).message).toMatch(/expected a job of kind "notify" \(available\) with a payload matching \{"channel":"push"\}; found 0 matching; jobs of that kind: #\d+ available .*"mail"/);
    await expect(assertEnqueued(t.ns, notify, undefined, { count: 5 })).rejects.toThrow(/5 time\(s\); found 2 matching/);
    await expect(refuteEnqueued(t.ns, notify, { channel: 'mail' })).rejects.toThrow(/expected no job of kind "notify".*found 1/);
  });

  it('counts waiting jobs by default, other states when asked', async () => {
    await drain(t.ns);
    await refuteEnqueued(t.ns, notify);
    expect(await enqueued(t.ns, notify, { channel: 'mail' }, { states: ['completed'] })).toHaveLength(1);
  });

  it("sees a transaction's uncommitted jobs through its client, and nothing once it rolls back", async () => {
    const tx = await pool.connect();
    try {
      await tx.query('BEGIN');
      await t.ns.enqueue(notify, { user: { id: 9, tags: [] }, channel: 'tx' }, { db: tx });
      await assertEnqueued(t.ns, notify, { channel: 'tx' }, { db: tx, count: 1 });
      await refuteEnqueued(t.ns, notify, { channel: 'tx' });
      await tx.query('ROLLBACK');
      await refuteEnqueued(t.ns, notify, { channel: 'tx' }, { db: tx });
    } finally {
      tx.release();
    }
  });
});
