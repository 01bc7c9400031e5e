import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, discard, hold, retryAfter } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

// Entry point: what a handler throws or returns. Whatever it is, the attempt's outcome is stored
// (cleaned and bounded) and the job moves on: a job must never get stuck because its failure
// could not be recorded.

const t = useTestDatabase('bad_handler');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

function hostileError(part: 'message' | 'stack' | 'name'): Error {
  const e = new Error('hostile');
  Object.defineProperty(e, part, {
    get() {
      throw new Error(`${part} getter throws`);
    },
  });
  return e;
}

const throwingProxy = () =>
  new Proxy(
    {},
    {
      get() {
        throw new Error('proxy get');
      },
      getPrototypeOf() {
        throw new Error('proxy getPrototypeOf');
      },
      ownKeys() {
        throw new Error('proxy ownKeys');
      },
    },
  );

const table: [what: string, make: () => unknown, how: 'throw' | 'return', state: string][] = [
  ['an error whose message has NUL bytes and lone surrogates', () => new Error('nul\u0000 and \ud800 lone'), 'throw', 'discarded'],
  ['a string with NUL bytes', () => 'plain\u0000string', 'throw', 'discarded'],
  ['a megabyte-long message', () => new Error('x'.repeat(1_048_576)), 'throw', 'discarded'],
  [
    'an object whose toJSON and toString throw',
    () => ({
      toJSON() {
        throw new Error('toJSON');
      },
      toString() {
        throw new Error('toString');
      },
    }),
    'throw',
    'discarded',
  ],
  ['an object with no prototype', () => Object.create(null), 'throw', 'discarded'],
  ['a symbol', () => Symbol('sym'), 'throw', 'discarded'],
  ['undefined', () => undefined, 'throw', 'discarded'],
  ['an error whose message is an object without a prototype', () => Object.assign(new Error('x'), { message: Object.create(null) }), 'throw', 'discarded'],
  ['an error whose message getter throws', () => hostileError('message'), 'throw', 'discarded'],
  ['an error whose stack getter throws', () => hostileError('stack'), 'throw', 'discarded'],
  ['a proxy that throws on every access', throwingProxy, 'throw', 'discarded'],
  // Awaiting a returned value reads its `then`: the trap throws, so the run failed.
  ['a proxy that throws on every access, returned', throwingProxy, 'return', 'discarded'],
  ['discard() with a NUL byte in its reason', () => discard('bad\u0000reason'), 'return', 'discarded'],
  ['hold() with a lone surrogate in its reason', () => hold('bad \udc00 reason'), 'return', 'held'],
  ['retryAfter(NaN)', () => retryAfter(Number.NaN), 'return', 'available'],
  ['retryAfter(-5)', () => retryAfter(-5), 'return', 'available'],
  // Issue 11, bug 7: a delay past what the database's time arithmetic holds failed the write.
  ['retryAfter(Infinity)', () => retryAfter(Number.POSITIVE_INFINITY), 'return', 'available'],
  ['retryAfter(1e300)', () => retryAfter(1e300), 'return', 'available'],
];

const cases = table.map(([what, make, how, state]) => ({ what, make, how, state }));

describe('a handler’s failure is always stored', () => {
  it.each(cases)('$how $what: the job becomes $state and its error is stored', async ({ make, how, state }) => {
    const kind = `hostile-${Math.random().toString(36).slice(2, 10)}`;
    const job = defineJob({
      kind,
      queue: kind,
      payload: z.object({}),
      maxAttempts: 1,
      run: () => {
        const value = make();
        if (how === 'throw') throw value;
        return value;
      },
    });
    const ns = t.client({ jobs: [job], pollIntervalMs: 100 });
    const { id } = await ns.enqueue(job, {});
    await ns.start();
    const row = await waitFor(`job ${id} to leave running`, async () => {
      const r = await t.sql.query(`SELECT state::text, reason, errors FROM ${q()}.jobs_all WHERE id = $1`, [id]);
      const j = r.rows[0] as { state: string; reason: string | null; errors: { message: string }[] | null };
      return j.state !== 'available' && j.state !== 'running' ? j : state === 'available' && j.errors ? j : undefined;
    });
    // A retry asked with no delay is claimed again at once: it may already be running again.
    if (state === 'available') expect(['available', 'running']).toContain(row.state);
    else expect(row.state).toBe(state);
    if (state !== 'completed') {
      expect(row.errors?.length).toBeGreaterThan(0);
      const last = row.errors!.at(-1)!;
      expect(typeof last.message).toBe('string');
      expect(last.message).not.toContain('\u0000');
      expect(last.message.isWellFormed()).toBe(true);
    }
  });
});
