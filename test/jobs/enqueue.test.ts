import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, NightshiftError } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const email = defineJob({
  kind: 'send-email',
  payload: z.object({ to: z.string().email(), body: z.string().optional() }),
  queue: 'mail',
  priority: 5,
  maxAttempts: 3,
  run: async () => undefined,
});
const any = defineJob({ kind: 'any-json', payload: z.unknown(), run: async () => undefined });

async function count(where = 'true', values: unknown[] = []): Promise<number> {
  const r = await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE ${where}`, values);
  return r.rows[0].n;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(NightshiftError);
    return (err as NightshiftError).code;
  }
  throw new Error('expected a rejection');
}

describe('enqueue', () => {
  it('writes a job with the kind defaults and returns its id', async () => {
    const ns = t.client({ jobs: [email] });
    const { id, deduped } = await ns.enqueue(email, { to: 'a@example.com' });
    expect(deduped).toBe(false);
    const job = await ns.getJob(id);
    expect(job).toMatchObject({ kind: 'send-email', queue: 'mail', priority: 5, maxAttempts: 3, state: 'available', attempt: 0, payload: { to: 'a@example.com' }, delivery: 'at-least-once' });
  });

  it('applies runAt, delayMs, priority, queue, maxAttempts, expiresAt and maxAgeMs', async () => {
    const ns = t.client({ jobs: [email] });
    const runAt = new Date(Date.now() + 3_600_000);
    const a = await ns.getJob((await ns.enqueue(email, { to: 'b@example.com' }, { runAt, priority: -3, queue: 'urgent', maxAttempts: 7 })).id);
    expect(a.runAt.getTime()).toBe(runAt.getTime());
    expect(a).toMatchObject({ priority: -3, queue: 'urgent', maxAttempts: 7 });
    const b = await ns.getJob((await ns.enqueue(email, { to: 'c@example.com' }, { delayMs: 60_000, maxAgeMs: 120_000 })).id);
    // Both are computed on the database clock from the same now(): the gap is exact.
    expect(b.runAt.getTime() - b.createdAt.getTime()).toBe(60_000);
    expect(b.expiresAt!.getTime() - b.createdAt.getTime()).toBe(120_000);
    const expiresAt = '2099-01-01T00:00:00Z';
    const c = await ns.getJob((await ns.enqueue(email, { to: 'd@example.com' }, { expiresAt })).id);
    expect(c.expiresAt!.toISOString()).toBe('2099-01-01T00:00:00.000Z');
  });

  it('rejects an invalid payload with NS_PAYLOAD_INVALID and writes nothing', async () => {
    const ns = t.client({ jobs: [email, any] });
    const before = await count();
    const cases: unknown[] = [{ to: 'not-an-email' }, { too: 'x@example.com' }, null, 'str'];
    for (const payload of cases) expect(await codeOf(ns.enqueue(email, payload as never))).toBe('NS_PAYLOAD_INVALID');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const unstorable: unknown[] = [
      { s: 'nul\u0000byte' },
      { s: 'lone \ud800 surrogate' },
      { ['key\u0000']: 1 },
      { n: Number.NaN },
      { n: Infinity },
      { b: 10n },
      { f: () => 1 },
      { m: new Map([[1, 2]]) },
      [1, undefined, 3],
      circular,
      undefined,
    ];
    for (const payload of unstorable) expect(await codeOf(ns.enqueue(any, payload))).toBe('NS_PAYLOAD_INVALID');
    expect(await count()).toBe(before);
  });

  it('rejects a payload over the configured limit with NS_PAYLOAD_TOO_LARGE', async () => {
    const ns = t.client({ jobs: [any], maxPayloadBytes: 1_000 });
    const before = await count();
    expect(await codeOf(ns.enqueue(any, { big: 'x'.repeat(1_000) }))).toBe('NS_PAYLOAD_TOO_LARGE');
    // Multi-byte characters count as bytes, not characters.
    expect(await codeOf(ns.enqueue(any, { big: 'é'.repeat(500) }))).toBe('NS_PAYLOAD_TOO_LARGE');
    await ns.enqueue(any, { small: 'x'.repeat(900) });
    expect(await count()).toBe(before + 1);
  });

  it('rejects an unknown kind with NS_UNKNOWN_KIND and a did-you-mean', async () => {
    const ns = t.client({ jobs: [email] });
    const err = await ns.enqueue('send-emial', { to: 'x@example.com' } as never).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'NS_UNKNOWN_KIND' });
    expect((err as Error).message).toContain('did you mean "send-email"');
  });

  it.each([
    [{ delayMs: -1 }, 'delayMs'],
    [{ delayMs: Number.NaN }, 'delayMs'],
    [{ delayMs: Infinity }, 'delayMs'],
    [{ runAt: new Date('nonsense') }, 'runAt'],
    [{ runAt: '2026-01-01 10:00' }, 'runAt'],
    [{ runAt: new Date(), delayMs: 5 }, 'delayMs'],
    [{ priority: 1.5 }, 'priority'],
    [{ priority: 5000 }, 'priority'],
    [{ maxAttempts: 0 }, 'maxAttempts'],
    [{ maxAttempts: 1001 }, 'maxAttempts'],
    [{ queue: "x'; DROP TABLE jobs; --" }, 'queue'],
    [{ queue: 'q'.repeat(129) }, 'queue'],
    [{ queue: '' }, 'queue'],
    [{ dedupeKey: '' }, 'dedupeKey'],
    [{ dedupeKey: 'k'.repeat(513) }, 'dedupeKey'],
    [{ debounceMs: 1000 }, 'debounceMs'],
    [{ maxAgeMs: 0 }, 'maxAgeMs'],
    [{ expiresAt: new Date(Date.now() - 1000), runAt: new Date() }, 'expiresAt'],
    [{ dedupKey: 'typo' }, 'dedupKey'],
    [{ db: {} }, 'db'],
  ])('rejects invalid options %o naming %s, and writes nothing', async (options, field) => {
    const ns = t.client({ jobs: [email] });
    const before = await count();
    const err = (await ns.enqueue(email, { to: 'x@example.com' }, options as never).catch((e: unknown) => e)) as NightshiftError;
    expect(err.code).toBe('NS_OPTIONS_INVALID');
    expect(err.issues.map((i) => i.path)).toContain(field);
    expect(await count()).toBe(before);
  });

  it('suggests the right option name for a typo', async () => {
    const ns = t.client({ jobs: [email] });
    const err = (await ns.enqueue(email, { to: 'x@example.com' }, { dedupKey: 'a' } as never).catch((e: unknown) => e)) as Error;
    expect(err.message).toContain('did you mean "dedupeKey"');
  });
});

describe('enqueue inside the caller transaction (outbox)', () => {
  it('commits the job with the business write, and a rollback leaves no job', async () => {
    const ns = t.client({ jobs: [email] });
    const client = new pg.Client({ connectionString: t.url });
    await client.connect();
    try {
      await client.query('BEGIN');
      const kept = await ns.enqueue(email, { to: 'kept@example.com' }, { db: client });
      await client.query('COMMIT');
      await client.query('BEGIN');
      const dropped = await ns.enqueue(email, { to: 'dropped@example.com' }, { db: client });
      // Not visible to others before commit.
      expect(await count('id = $1', [dropped.id])).toBe(0);
      await client.query('ROLLBACK');
      expect(await count('id = $1', [kept.id])).toBe(1);
      expect(await count('id = $1', [dropped.id])).toBe(0);
      await client.query('BEGIN');
      const many = await ns.enqueueMany(email, [{ to: 'm1@example.com' }, { to: 'm2@example.com' }], { db: client });
      await client.query('ROLLBACK');
      expect(await count('id = ANY($1::bigint[])', [many.map((m) => m.id)])).toBe(0);
    } finally {
      await client.end();
    }
  });
});

describe('enqueueMany', () => {
  it('writes all jobs in input order, atomically', async () => {
    const ns = t.client({ jobs: [any] });
    const payloads = Array.from({ length: 12_000 }, (_, i) => ({ i }));
    const results = await ns.enqueueMany(any, payloads);
    expect(results).toHaveLength(12_000);
    const rows = await t.sql.query(`SELECT id::text, payload FROM "${t.schema}".jobs_all WHERE id = ANY($1::bigint[])`, [results.map((r) => r.id)]);
    const byId = new Map(rows.rows.map((r: { id: string; payload: unknown }) => [r.id, r.payload]));
    results.forEach((r, i) => expect(byId.get(r.id)).toEqual({ i }));
  });

  it('writes nothing when one payload is invalid, and names its index', async () => {
    const ns = t.client({ jobs: [email] });
    const before = await count();
    const err = (await ns.enqueueMany(email, [{ to: 'a@example.com' }, { to: 'bad' }]).catch((e: unknown) => e)) as Error;
    expect(err).toMatchObject({ code: 'NS_PAYLOAD_INVALID' });
    expect(err.message).toContain('payloads[1]');
    expect(await count()).toBe(before);
  });

  it('accepts options computed per payload', async () => {
    const ns = t.client({ jobs: [any] });
    const results = await ns.enqueueMany(any, [{ p: 1 }, { p: 2 }], (p) => ({ priority: (p as { p: number }).p }));
    const jobs = await Promise.all(results.map((r) => ns.getJob(r.id)));
    expect(jobs.map((j) => j.priority)).toEqual([1, 2]);
  });
});

describe('coalesced enqueues', () => {
  it('commits every concurrent enqueue before it resolves, each with its own id', async () => {
    const ns = t.client({ jobs: [any] });
    const observer = new pg.Pool({ connectionString: t.url, max: 8 });
    try {
      const visibleOnResolve = await Promise.all(
        Array.from({ length: 300 }, async (_, i) => {
          const { id } = await ns.enqueue(any, { i });
          // Another connection sees it the moment the promise resolves: it is committed.
          const r = await observer.query(`SELECT payload FROM "${t.schema}".jobs_all WHERE id = $1`, [id]);
          return { id, payload: r.rows[0]?.payload, i };
        }),
      );
      expect(new Set(visibleOnResolve.map((v) => v.id)).size).toBe(300);
      for (const v of visibleOnResolve) expect(v.payload).toEqual({ i: v.i });
    } finally {
      await observer.end();
    }
  });
});
