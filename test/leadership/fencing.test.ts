import type pg from 'pg';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LeaseQueries } from '../../src/db/leases.js';
import { translateDbError } from '../../src/db/pg-errors.js';
import { FencedError } from '../../src/errors.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { openDatabase } from './helpers.js';

const t = useTestDatabase('fence');
t.migrateBeforeAll();

let seq = 0;
const uniqueName = () => `fence-${++seq}`;
const q = () => `"${t.schema}"`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function setup(): { pool: pg.Pool; leases: LeaseQueries } {
  const { database, close } = openDatabase(t.url, t.schema);
  cleanups.push(close);
  return { pool: database.pool.pool, leases: database.leases };
}

/** A client in an open transaction; rolled back and released after the test if still open. */
async function begin(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  let broken = false;
  client.on('error', () => (broken = true));
  await client.query('BEGIN');
  cleanups.push(async () => {
    await client.query('ROLLBACK').catch(() => (broken = true));
    client.release(broken);
  });
  return client;
}

async function refusal(p: Promise<unknown>): Promise<FencedError> {
  try {
    await p;
  } catch (err) {
    const e = translateDbError(err);
    if (e instanceof FencedError) return e;
    throw e;
  }
  throw new Error('expected the write to be refused, it was not');
}

beforeAll(async () => {
  await t.sql.query(`CREATE TABLE ${q()}.fenced_writes (id serial PRIMARY KEY, lease text, token bigint, at timestamptz DEFAULT now())`);
});

describe('fencing with assert_lease', () => {
  it('lets the current holder write inside its transaction', async () => {
    const { pool, leases } = setup();
    const name = uniqueName();
    const term = (await leases.acquire({ name, holder: 'a', ttlMs: 60_000 }))!;
    const tx = await begin(pool);
    await leases.assert({ tx, name, token: term.token });
    await tx.query(`INSERT INTO ${q()}.fenced_writes (lease, token) VALUES ($1, $2)`, [name, term.token]);
    await tx.query('COMMIT');
    const { rows } = await t.sql.query(`SELECT token::text FROM ${q()}.fenced_writes WHERE lease = $1`, [name]);
    expect(rows).toEqual([{ token: term.token }]);
    expect(await leases.check({ name, token: term.token })).toBe(true);
  });

  it('refuses a deposed holder with NS_FENCED, and its write in the same transaction rolls back', async () => {
    const { pool, leases } = setup();
    const name = uniqueName();
    const old = (await leases.acquire({ name, holder: 'a', ttlMs: 60_000 }))!;
    await leases.release({ name, token: old.token });
    const current = (await leases.acquire({ name, holder: 'b', ttlMs: 60_000 }))!;

    const tx = await begin(pool);
    await tx.query(`INSERT INTO ${q()}.fenced_writes (lease, token) VALUES ($1, $2)`, [name, old.token]);
    const err = await refusal(leases.assert({ tx, name, token: old.token }));
    expect(err.code).toBe('NS_FENCED');
    expect(err.lease).toBe(name);
    expect(err.token).toBe(old.token);
    expect(err.message).toContain(`passed to token ${current.token}`);
    await tx.query('ROLLBACK');
    const { rows } = await t.sql.query(`SELECT * FROM ${q()}.fenced_writes WHERE lease = $1`, [name]);
    expect(rows).toEqual([]);
    expect(await leases.check({ name, token: old.token })).toBe(false);
  });

  it('refuses the holder once its lease has expired, and a lease that does not exist', async () => {
    const { pool, leases } = setup();
    const name = uniqueName();
    const term = (await leases.acquire({ name, holder: 'a', ttlMs: 60_000 }))!;
    await t.sql.query(`UPDATE ${q()}.leases SET expires_at = now() - interval '1 second' WHERE name = $1`, [name]);
    const tx = await begin(pool);
    expect((await refusal(leases.assert({ tx, name, token: term.token }))).message).toContain('expired at');
    await tx.query('ROLLBACK');
    const err = await refusal(leases.assert({ tx: pool, name: 'no-such-lease', token: '1' }));
    expect(err.message).toContain('no such lease');
    // Plain SQL callers get SQLSTATE NS005 and the NS_FENCED prefix.
    const raw = await t.sql.query(`SELECT ${q()}.assert_lease($1, $2)`, ['no-such-lease', 1]).catch((e: { code: string; message: string }) => e);
    expect(raw).toMatchObject({ code: 'NS005' });
    expect((raw as { message: string }).message).toMatch(/^NS_FENCED: /);
  });

  it('keeps a takeover from committing until the fenced transaction ends', async () => {
    const { pool, leases } = setup();
    const name = uniqueName();
    const old = (await leases.acquire({ name, holder: 'a', ttlMs: 2_000 }))!;
    const tx = await begin(pool);
    // Our own idle timeout, so assert_lease leaves it alone and the transaction may outlive the lease.
    await tx.query(`SET LOCAL idle_in_transaction_session_timeout = '60s'`);
    await leases.assert({ tx, name, token: old.token });
    await waitFor('the lease to expire by the database clock', async () => {
      const { rows } = await t.sql.query(`SELECT expires_at < clock_timestamp() AS gone FROM ${q()}.leases WHERE name = $1`, [name]);
      return rows[0]?.gone === true;
    });
    // A contender arrives after expiry; it must wait for the fenced transaction.
    let settled = false;
    const takeover = leases.acquire({ name, holder: 'b', ttlMs: 60_000, db: t.sql }).finally(() => (settled = true));
    await waitFor('the takeover to wait on the lease row lock', async () => {
      const { rows } = await t.sql.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO ${q()}.leases%'`);
      return rows[0].n > 0;
    });
    expect(settled).toBe(false);
    await tx.query(`INSERT INTO ${q()}.fenced_writes (lease, token) VALUES ($1, $2)`, [name, old.token]);
    await tx.query('COMMIT');
    const won = await takeover;
    expect(won).toBeDefined();
    expect(BigInt(won!.token)).toBeGreaterThan(BigInt(old.token));
    const { rows } = await t.sql.query(`SELECT token::text FROM ${q()}.fenced_writes WHERE lease = $1`, [name]);
    expect(rows).toEqual([{ token: old.token }]);
    // From now on the old token is refused.
    await expect(refusal(leases.assert({ tx: pool, name, token: old.token }))).resolves.toBeInstanceOf(FencedError);
  });

  it('ends a fenced transaction left idle past its lease, so a frozen holder cannot block a takeover', async () => {
    const { pool, leases } = setup();
    const name = uniqueName();
    const term = (await leases.acquire({ name, holder: 'a', ttlMs: 1_000 }))!;
    const tx = await begin(pool);
    const { rows: me } = await tx.query('SELECT pg_backend_pid() AS pid');
    await leases.assert({ tx, name, token: term.token });
    await waitFor('the server to end the idle transaction', async () => {
      const { rows } = await t.sql.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [me[0].pid]);
      return rows[0].n === 0;
    });
    await expect(tx.query(`INSERT INTO ${q()}.fenced_writes (lease, token) VALUES ($1, $2)`, [name, term.token])).rejects.toThrow();
    const { rows } = await t.sql.query(`SELECT * FROM ${q()}.fenced_writes WHERE lease = $1`, [name]);
    expect(rows).toEqual([]);
    // The row lock is gone with it: the next contender gets the lease.
    const won = await waitFor('a takeover', () => leases.acquire({ name, holder: 'b', ttlMs: 60_000, db: t.sql }));
    expect(BigInt(won.token)).toBeGreaterThan(BigInt(term.token));
  });
});
