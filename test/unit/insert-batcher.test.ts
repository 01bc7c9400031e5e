import { describe, expect, it } from 'vitest';
import type { JobInsertResult, JobInsertRow } from '../../src/db/jobs-insert.js';
import { DatabaseError } from '../../src/errors.js';
import { InsertBatcher } from '../../src/jobs/insert-batcher.js';

// The coalescing of single enqueues into multi-row INSERTs. The statement itself is covered against
// PostgreSQL by test/jobs/enqueue.test.ts; here a fake `insert` stands in for it, so that the
// batching decisions — which rows share a statement, what a failure does to the others — can be
// driven exactly. Each call of the fake is a "statement": it stays in flight until the test
// settles it.

const row = (payload: string): JobInsertRow => ({
  kind: 'k',
  queue: 'q',
  priority: 0,
  runAt: null,
  delayMs: null,
  payload,
  maxAttempts: 3,
  atMostOnce: false,
  dedupeKey: null,
  expiresAt: null,
  maxAgeMs: null,
  traceContext: null,
  dedupeScope: 'pending',
});

interface Call {
  payloads: string[];
  ok(): void;
  fail(err: unknown): void;
}

/** A fake statement: records every call; each returns ids `id-<payload>` when settled with ok(). */
function fakeInsert(options: { autoOk?: boolean; failWhen?: (payloads: string[]) => unknown } = {}) {
  const calls: Call[] = [];
  const waiters: (() => void)[] = [];
  const insert = (rows: JobInsertRow[]): Promise<JobInsertResult[]> =>
    new Promise((resolve, reject) => {
      const payloads = rows.map((r) => r.payload);
      const call: Call = { payloads, ok: () => resolve(payloads.map((p) => ({ id: `id-${p}`, deduped: false }))), fail: reject };
      calls.push(call);
      waiters.splice(0).forEach((w) => w());
      const err = options.failWhen?.(payloads);
      if (err) call.fail(err);
      else if (options.autoOk) call.ok();
    });
  /** Resolves once `n` statements have been sent. */
  const sent = async (n: number) => {
    while (calls.length < n) await new Promise<void>((r) => waiters.push(r));
  };
  return { insert, calls, sent };
}

/** The batcher under test (one place that knows its constructor). */
function batcher(o: { insert: (rows: JobInsertRow[]) => Promise<JobInsertResult[]>; maxInFlight: number; maxBatch: number; maxBytes?: number }): InsertBatcher {
  return new InsertBatcher(o);
}

const connectionLost = () => new DatabaseError('database unavailable: connection terminated', undefined, new Error('ECONNRESET'), undefined, true);

describe('InsertBatcher: which rows share a statement', () => {
  it('puts rows added in the same turn of the event loop into one statement, and routes each result to its caller', async () => {
    const f = fakeInsert({ autoOk: true });
    const b = batcher({ insert: f.insert, maxInFlight: 2, maxBatch: 100 });
    const results = await Promise.all(['a', 'b', 'c'].map((p) => b.add(row(p))));
    expect(f.calls.map((c) => c.payloads)).toEqual([['a', 'b', 'c']]);
    expect(results.map((r) => r.id)).toEqual(['id-a', 'id-b', 'id-c']);
  });

  it('splits by maxBatch rows, and sends up to maxInFlight statements at once', async () => {
    const f = fakeInsert();
    const b = batcher({ insert: f.insert, maxInFlight: 2, maxBatch: 2 });
    const all = Promise.all(['a', 'b', 'c', 'd', 'e'].map((p) => b.add(row(p))));
    await f.sent(2);
    expect(f.calls.map((c) => c.payloads)).toEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    // The fifth row waits for a statement to finish (two are in flight).
    await new Promise((r) => setImmediate(r));
    expect(f.calls).toHaveLength(2);
    f.calls[0]!.ok();
    await f.sent(3);
    expect(f.calls[2]!.payloads).toEqual(['e']);
    f.calls[1]!.ok();
    f.calls[2]!.ok();
    expect((await all).map((r) => r.id)).toEqual(['id-a', 'id-b', 'id-c', 'id-d', 'id-e']);
    expect(b.size).toBe(0);
  });

  it('gathers the rows that arrive while maxInFlight statements run into the next statement', async () => {
    const f = fakeInsert();
    const b = batcher({ insert: f.insert, maxInFlight: 1, maxBatch: 100 });
    const first = b.add(row('a'));
    await f.sent(1);
    const later = ['b', 'c', 'd'].map((p) => b.add(row(p)));
    f.calls[0]!.ok();
    await f.sent(2);
    expect(f.calls.map((c) => c.payloads)).toEqual([['a'], ['b', 'c', 'd']]);
    f.calls[1]!.ok();
    await expect(first).resolves.toMatchObject({ id: 'id-a' });
    expect((await Promise.all(later)).map((r) => r.id)).toEqual(['id-b', 'id-c', 'id-d']);
  });

  it('closes a statement before its payloads pass maxBytes; a row larger than maxBytes goes alone', async () => {
    const f = fakeInsert({ autoOk: true });
    const b = batcher({ insert: f.insert, maxInFlight: 1, maxBatch: 100, maxBytes: 10 });
    const payloads = ['aaaa', 'bbbb', 'cccc', 'x'.repeat(25), 'dd', 'ee'];
    await Promise.all(payloads.map((p) => b.add(row(p))));
    expect(f.calls.map((c) => c.payloads)).toEqual([['aaaa', 'bbbb'], ['cccc'], ['x'.repeat(25)], ['dd', 'ee']]);
  });
});

describe('InsertBatcher: failures', () => {
  it("retries a failed batch row by row, so only the bad row's caller gets the error", async () => {
    const refused = new DatabaseError('value too long', '22001', new Error('22001'));
    const f = fakeInsert({ autoOk: true, failWhen: (payloads) => (payloads.includes('bad') ? refused : undefined) });
    const b = batcher({ insert: f.insert, maxInFlight: 1, maxBatch: 100 });
    const outcomes = await Promise.allSettled(['a', 'bad', 'c'].map((p) => b.add(row(p))));
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.id : o.reason))).toEqual(['id-a', refused, 'id-c']);
    expect(f.calls.map((c) => c.payloads)).toEqual([['a', 'bad', 'c'], ['a'], ['bad'], ['c']]);
  });

  it('fails every row of a batch that lost its connection at once, without retrying them one by one', async () => {
    const lost = connectionLost();
    const f = fakeInsert({ failWhen: () => lost });
    const b = batcher({ insert: f.insert, maxInFlight: 1, maxBatch: 100 });
    const outcomes = await Promise.allSettled(['a', 'b', 'c'].map((p) => b.add(row(p))));
    expect(outcomes.map((o) => o.status === 'rejected' && o.reason)).toEqual([lost, lost, lost]);
    expect(f.calls).toHaveLength(1);
  });

  it('fails a batch of one with its error, without sending it again', async () => {
    const refused = new DatabaseError('check violation', '23514', new Error('23514'));
    const f = fakeInsert({ failWhen: () => refused });
    const b = batcher({ insert: f.insert, maxInFlight: 1, maxBatch: 100 });
    await expect(b.add(row('a'))).rejects.toBe(refused);
    expect(f.calls).toHaveLength(1);
  });

  it('goes on with the rows queued behind a failed statement', async () => {
    const lost = connectionLost();
    let failNext = true;
    const f = fakeInsert({
      autoOk: true,
      failWhen: () => {
        if (!failNext) return undefined;
        failNext = false;
        return lost;
      },
    });
    const b = batcher({ insert: f.insert, maxInFlight: 1, maxBatch: 2 });
    const outcomes = await Promise.allSettled(['a', 'b', 'c'].map((p) => b.add(row(p))));
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.id : 'lost'))).toEqual(['lost', 'lost', 'id-c']);
    expect(f.calls.map((c) => c.payloads)).toEqual([['a', 'b'], ['c']]);
  });
});
