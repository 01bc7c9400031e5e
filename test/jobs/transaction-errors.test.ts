import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

describe('a transaction whose connection the server ends while it waits', () => {
  // Found by the guard review: pg-pool drops its 'error' listener from a client it hands out, so a
  // connection ended while idle in a transaction (a fenced transaction past its idle timeout, a
  // terminated backend) raised an unhandled 'error' event — the process died instead of the
  // transaction failing.
  it('fails the transaction with a typed error; the process lives on and the pool serves again', async () => {
    const ns = t.client();
    let pid = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tx = ns.transaction(async (db) => {
      pid = Number(((await db.query({ text: 'SELECT pg_backend_pid() AS pid' })).rows[0] as { pid: number }).pid);
      await gate;
      await db.query({ text: 'SELECT 1' });
    });
    const failed = tx.then(
      () => undefined,
      (err: unknown) => err,
    );
    await waitFor('the transaction to hold its connection', () => pid > 0);
    await t.sql.query('SELECT pg_terminate_backend($1)', [pid]);
    await waitFor('the backend to be gone', async () => (await t.sql.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1', [pid])).rows[0].n === 0);
    release();
    // Which error depends on how far the client read the server's goodbye before the next
    // statement: 57P01 (a pg DatabaseError), "Connection terminated", or "Client has encountered
    // a connection error and is not queryable". An Error, whichever.
    expect(await failed).toBeInstanceOf(Error);
    // The pool hands out a healthy connection next.
    expect((await ns.db.query({ text: 'SELECT 1 AS one' })).rows).toEqual([{ one: 1 }]);
  });
});
