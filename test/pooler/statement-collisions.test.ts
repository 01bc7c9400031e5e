import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { run } from '../../src/db/executor.js';
import { PreparedStatements, StatementSet, type PreparedStatementsMode, type PreparedStatementsOff } from '../../src/db/statements.js';
import { PreparedStatementsError } from '../../src/errors.js';
import { useTestDatabase } from '../support/db.js';

// Direct connections, where 'auto' names statements. The two collisions a transaction-mode
// pooler causes — which 'auto' avoids by noticing the pooler, see prepared-statements.test.ts —
// are made here on purpose on ONE direct connection
// (a pool of one), so each is certain: the statement was deallocated behind the client's back
// (26000, as when the next transaction lands on another server connection), or its name is taken
// by someone else's PREPARE (42P05, as when another client prepared it on this server connection).
const t = useTestDatabase('coll');

describe('named statements that collide on the server', () => {
  const pools: pg.Pool[] = [];
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.end()));
  });

  function setUp(mode: PreparedStatementsMode) {
    const pool = new pg.Pool({ connectionString: t.url, max: 1 });
    pools.push(pool);
    const off: PreparedStatementsOff[] = [];
    const set = new StatementSet(t.schema, new PreparedStatements(mode, (info) => off.push(info)));
    const stmt = set.named('collision_probe', () => 'SELECT $1::int + 1 AS n');
    const named = async () => (await pool.query(`SELECT name FROM pg_prepared_statements WHERE name = $1`, [stmt.name])).rowCount;
    return { pool, off, set, stmt, named };
  }

  it("'auto' names statements on a pool straight to PostgreSQL (parsed once per connection)", async () => {
    const { pool, off, stmt, named } = setUp('auto');
    expect(await run(pool, stmt, [1])).toEqual([{ n: 2 }]);
    expect(await named()).toBe(1);
    expect(off).toEqual([]);
  });

  it("'auto': a statement gone from the connection (26000) is re-run unnamed, reported once, and nothing is named afterwards", async () => {
    const { pool, off, set, stmt, named } = setUp('auto');
    await run(pool, stmt, [1]);
    await pool.query('DEALLOCATE ALL');
    expect(await run(pool, stmt, [2])).toEqual([{ n: 3 }]);
    expect(off).toEqual([{ cause: 'collision', statement: stmt.name, sqlState: '26000' }]);
    expect(set.prepared.active).toBe(false);
    expect(await run(pool, stmt, [3])).toEqual([{ n: 4 }]);
    expect(await named()).toBe(0);
    expect(off).toHaveLength(1);
  });

  it("'auto': a name taken on the connection (42P05) is re-run unnamed and reported", async () => {
    const { pool, off, stmt } = setUp('auto');
    await pool.query(`PREPARE "${stmt.name}" AS SELECT 'someone else''s'`);
    expect(await run(pool, stmt, [5])).toEqual([{ n: 6 }]);
    expect(off).toEqual([{ cause: 'collision', statement: stmt.name, sqlState: '42P05' }]);
  });

  it("'auto' inside a transaction on a direct connection: named too (each connection is checked once)", async () => {
    const { pool, stmt } = setUp('auto');
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      expect(await run(client, stmt, [1])).toEqual([{ n: 2 }]);
      await client.query('COMMIT');
      expect((await client.query(`SELECT name FROM pg_prepared_statements WHERE name = $1`, [stmt.name])).rowCount).toBe(1);
    } finally {
      client.release();
    }
  });

  it("'auto' inside a transaction: a collision is NS_PREPARED_STATEMENTS (the transaction is aborted) and the client stops naming statements", async () => {
    const { pool, off, set, stmt } = setUp('auto');
    const client = await pool.connect();
    try {
      await client.query(`PREPARE "${stmt.name}" AS SELECT 1`);
      await client.query('BEGIN');
      const err = await run(client, stmt, [1]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(PreparedStatementsError);
      expect(err).toMatchObject({ code: 'NS_PREPARED_STATEMENTS', sqlState: '42P05' });
      await client.query('ROLLBACK');
      expect(off).toEqual([{ cause: 'collision', statement: stmt.name, sqlState: '42P05' }]);
      expect(set.prepared.active).toBe(false);
      // The caller's retry of its transaction works: the statement goes unnamed now.
      await client.query('BEGIN');
      expect(await run(client, stmt, [1])).toEqual([{ n: 2 }]);
      await client.query('COMMIT');
    } finally {
      client.release();
    }
  });

  it('true: a collision is NS_PREPARED_STATEMENTS naming the setting, on a pool as in a transaction', async () => {
    const { pool, off, stmt } = setUp(true);
    await run(pool, stmt, [1]);
    await pool.query('DEALLOCATE ALL');
    const err = await run(pool, stmt, [2]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PreparedStatementsError);
    expect(err).toMatchObject({ code: 'NS_PREPARED_STATEMENTS', sqlState: '26000' });
    expect((err as PreparedStatementsError).hint).toContain('preparedStatements: false');
    const client = await pool.connect();
    try {
      await client.query(`PREPARE "${stmt.name}" AS SELECT 1`);
      await client.query('BEGIN');
      await expect(run(client, stmt, [1])).rejects.toMatchObject({ code: 'NS_PREPARED_STATEMENTS', sqlState: '42P05' });
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    expect(off).toEqual([]);
  });

  it('false: never named', async () => {
    const { pool, stmt, named } = setUp(false);
    expect(stmt.name).toBeUndefined();
    await run(pool, stmt, [1]);
    expect(await named()).toBe(0);
  });
});
