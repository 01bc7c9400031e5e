import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { Database } from '../../src/db/database.js';
import { isKeyRace } from '../../src/db/dedupe-sql.js';
import { run, sql } from '../../src/db/executor.js';
import type { JobInsertResult, JobInsertRow } from '../../src/db/jobs-insert.js';
import { createPool, type PoolHandle } from '../../src/db/pool.js';
import { freePort } from '../../src/dev/embedded-postgres.js';
import { DatabaseError } from '../../src/errors.js';
import { InsertBatcher } from '../../src/jobs/insert-batcher.js';
import { useTestDatabase } from '../support/db.js';

// Issue 12: a lost connection is told by the error's code and class where the driver's error is
// translated (DatabaseError.unavailable), not by matching its message.

const t = useTestDatabase('unavail');
t.migrateBeforeAll();

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

function pool(connectionString: string): PoolHandle {
  const handle = createPool({ connectionString, max: 2, applicationName: 'unavailable-test' });
  closers.push(() => handle.close());
  return handle;
}

async function failure(p: Promise<unknown>): Promise<DatabaseError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DatabaseError);
  return err as DatabaseError;
}

const row = (kind: string, maxAttempts = 1): JobInsertRow => ({
  kind,
  queue: 'unavail',
  priority: 0,
  runAt: null,
  delayMs: null,
  payload: '{}',
  maxAttempts,
  atMostOnce: false,
  dedupeKey: null,
  expiresAt: null,
  maxAgeMs: null,
  traceContext: null,
  dedupeScope: 'pending',
});

describe('a lost connection, told by code and class', () => {
  it('a refused connection (nothing listens on the port) is unavailable', async () => {
    const port = await freePort();
    const err = await failure(run(pool(`postgres://nobody@127.0.0.1:${port}/none`).pool, sql('SELECT 1'), []));
    expect(err.unavailable).toBe(true);
    expect(err.code).toBe('NS_DATABASE');
  });

  it('a backend the server terminates (SQLSTATE 57P01) is unavailable', async () => {
    const client = new pg.Client({ connectionString: t.url });
    client.on('error', () => undefined);
    await client.connect();
    closers.push(() => client.end().catch(() => undefined));
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const sleeping = failure(run(client, sql('SELECT pg_sleep(30)'), []));
    await t.sql.query('SELECT pg_terminate_backend($1)', [pid]);
    const err = await sleeping;
    expect(err.sqlState).toBe('57P01');
    expect(err.unavailable).toBe(true);
  });

  it("a connection cut under a query (the driver's own error, no code) is unavailable", async () => {
    const client = new pg.Client({ connectionString: t.url });
    client.on('error', () => undefined);
    await client.connect();
    closers.push(() => client.end().catch(() => undefined));
    const sleeping = failure(run(client, sql('SELECT pg_sleep(30)'), []));
    // The socket goes as a network failure would take it.
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    const err = await sleeping;
    expect(err.sqlState).toBeUndefined();
    expect(err.unavailable).toBe(true);
  });

  it('the database refusing a statement is not unavailable: a syntax error, a wrong number of parameters (08P01)', async () => {
    const db = pool(t.url).pool;
    const syntax = await failure(run(db, sql('SELEC 1'), []));
    expect(syntax).toMatchObject({ sqlState: '42601', unavailable: false });
    const params = await failure(run(db, sql<unknown, [number]>('SELECT $1::int, $2::int'), [1]));
    expect(params.sqlState).toBe('08P01');
    expect(params.unavailable).toBe(false);
  });

  it('a coalesced insert fails at once for every row when the database is unavailable, and row by row otherwise', async () => {
    const port = await freePort();
    const down = new Database(pool(`postgres://nobody@127.0.0.1:${port}/none`), t.schema);
    const up = new Database(pool(t.url), t.schema);
    for (const [db, rows, calls] of [
      // Unavailable: one statement, every caller gets its error.
      [down, [row('unavail.a'), row('unavail.b'), row('unavail.c')], 1],
      // A row the database refuses (0 attempts, against a CHECK constraint) fails alone; the others are written.
      [up, [row('unavail.ok'), row('unavail.bad', 0), row('unavail.ok')], 4],
    ] as const) {
      let n = 0;
      const insert = (r: JobInsertRow[]): Promise<JobInsertResult[]> => {
        n++;
        return db.inserts.insert({ rows: r, debounced: false });
      };
      const batcher = new InsertBatcher({ insert, maxInFlight: 1, maxBatch: 10 });
      const results = await Promise.allSettled(rows.map((r) => batcher.add(r)));
      expect(n).toBe(calls);
      if (db === down) expect(results.every((r) => r.status === 'rejected' && (r.reason as DatabaseError).unavailable)).toBe(true);
      else {
        expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
        expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ sqlState: '23514', unavailable: false });
      }
    }
  });

  it('a dedupe key taken by a concurrent commit is told by the index the server names, not by the message', async () => {
    const db = pool(t.url).pool;
    const insert = `INSERT INTO "${t.schema}".jobs (kind, queue, payload, max_attempts, dedupe_key) VALUES ($1, 'unavail', '{}', 1, $2)`;
    await run(db, sql<unknown, [string, string]>(insert), ['unavail.key', 'k1']);
    const race = await failure(run(db, sql<unknown, [string, string]>(insert), ['unavail.key', 'k1']));
    expect(race.sqlState).toBe('23505');
    expect(isKeyRace(race)).toBe(true);
    expect(race.unavailable).toBe(false);
  });
});
