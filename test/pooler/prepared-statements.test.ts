import pg from 'pg';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { PreparedStatementsError } from '../../src/errors.js';
import { defineJob, type NightshiftEvent } from '../../src/index.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { useTestDatabase } from '../support/db.js';
import { describeWithPgBouncer, usePgBouncer } from '../support/pgbouncer.js';

// PgBouncer with ONE server connection: every client shares it, so a statement named by one
// client exists for every other — the second client's Parse of that name collides (42P05) every
// time, not by the luck of which server connection a transaction gets.
const t = useTestDatabase('prep');
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });
const job = defineJob({ kind: 'prepared', payload, run: async () => undefined });

describeWithPgBouncer('named statements through a transaction-mode pooler', () => {
  const b = usePgBouncer(() => t.url, { poolSize: 1 });
  const client = (options: Parameters<typeof t.client>[0] = {}) => t.client({ databaseUrl: b.bouncer().url, jobs: [job], ...options });
  const jobs = async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all`)).rows[0].n as number;

  /** How many of nightshift's statement names the one server connection holds. */
  async function namedOnServer(): Promise<number> {
    const probe = new pg.Client({ connectionString: b.bouncer().url });
    await probe.connect();
    try {
      return (await probe.query(`SELECT count(*)::int AS n FROM pg_prepared_statements WHERE name LIKE 'ns\\_%'`)).rows[0].n;
    } finally {
      await probe.end();
    }
  }

  /**
   * Makes the shared server connection hold nightshift's statement names, as a first client's
   * enqueue does. (A collision on a pool makes pg drop that connection mid-reply, and PgBouncer
   * then closes the server connection too: a test after one starts with a fresh server connection.)
   */
  async function prime(): Promise<void> {
    if ((await namedOnServer()) > 0) return;
    const first = client({ preparedStatements: true });
    await first.enqueue(job, { n: 0 });
    await first.stop();
    expect(await namedOnServer(), 'statements named on the one server connection').toBeGreaterThan(0);
  }

  it("'auto' (the default) notices the pooler before anything collides, and one warning names the setting", async () => {
    await prime();
    const before = await jobs();
    const lines: string[] = [];
    const c = client({ logger: createLogger({ level: 'warn', destination: { write: (line: string) => lines.push(line) } }) });
    const off: NightshiftEvent[] = [];
    c.on((e) => {
      if (e.type === 'database.prepared-statements-off') off.push(e);
    });
    // Named, each of these would collide with the names on the one server connection.
    for (let i = 1; i <= 5; i++) await c.enqueue(job, { n: i });
    await c.enqueueMany(job, [{ n: 6 }, { n: 7 }]);
    expect(await jobs()).toBe(before + 7);
    expect(off).toHaveLength(1);
    expect(off[0]).toMatchObject({ cause: 'pooler' });
    const warned = lines.map((l) => JSON.parse(l)).filter((l) => l.event === 'database.prepared-statements-off');
    expect(warned).toHaveLength(1);
    expect(warned[0].level).toBe(40);
    expect(warned[0].hint).toContain('preparedStatements: false');
    expect(warned[0].hint).toContain('database.preparedStatements');
  });

  it("'auto': an enqueue with { db } in the caller's transaction through the pooler works (the client is checked, and statements go unnamed)", async () => {
    await prime();
    const c = client();
    const app = new pg.Pool({ connectionString: b.bouncer().url, max: 1 });
    try {
      const tx = await app.connect();
      try {
        await tx.query('BEGIN');
        const one = await c.enqueue(job, { n: 1 }, { db: tx });
        const many = await c.enqueueMany(job, [{ n: 2 }, { n: 3 }], { db: tx });
        await tx.query('COMMIT');
        const ids = [one.id, ...many.map((r) => r.id)];
        expect((await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE id = ANY($1::bigint[])`, [ids])).rows[0].n).toBe(3);
      } finally {
        tx.release();
      }
    } finally {
      await app.end();
    }
  });

  it("forced on: a { db } enqueue in the caller's transaction fails with NS_PREPARED_STATEMENTS and a hint, and writes nothing", async () => {
    await prime();
    const before = await jobs();
    const c = client({ preparedStatements: true });
    const app = new pg.Pool({ connectionString: b.bouncer().url, max: 1 });
    try {
      const tx = await app.connect();
      try {
        await tx.query('BEGIN');
        const err = await c.enqueue(job, { n: 1 }, { db: tx }).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(PreparedStatementsError);
        const e = err as PreparedStatementsError;
        expect(e.code).toBe('NS_PREPARED_STATEMENTS');
        expect(e.sqlState).toBe('42P05');
        expect(e.hint).toContain('preparedStatements: false');
        expect(e.hint).toContain('database.preparedStatements');
        expect(e.message).toContain('PgBouncer');
        // The failure aborted the caller's transaction, as any statement error does.
        await expect(tx.query('SELECT 1')).rejects.toThrow(/current transaction is aborted/);
        await tx.query('ROLLBACK');
      } finally {
        tx.release();
      }
    } finally {
      await app.end();
    }
    expect(await jobs()).toBe(before);
  });

  it('forced on: the pool path gives the typed error too, and does not switch by itself', async () => {
    await prime();
    const c = client({ preparedStatements: true });
    const off: NightshiftEvent[] = [];
    c.on((e) => {
      if (e.type === 'database.prepared-statements-off') off.push(e);
    });
    await expect(c.enqueue(job, { n: 1 })).rejects.toMatchObject({ code: 'NS_PREPARED_STATEMENTS', sqlState: '42P05' });
    // Still named afterwards: with the names on the server connection again, it collides again.
    await prime();
    await expect(c.enqueue(job, { n: 2 })).rejects.toMatchObject({ code: 'NS_PREPARED_STATEMENTS', sqlState: '42P05' });
    expect(off).toEqual([]);
  });

  it('off: nothing is named, nothing collides', async () => {
    await prime();
    const before = await jobs();
    const c = client({ preparedStatements: false });
    const off: NightshiftEvent[] = [];
    c.on((e) => {
      if (e.type === 'database.prepared-statements-off') off.push(e);
    });
    for (let i = 0; i < 3; i++) await c.enqueue(job, { n: i });
    expect(await jobs()).toBe(before + 3);
    expect(off).toEqual([]);
  });
});
