import { afterEach, describe, expect, it } from 'vitest';
import { Database } from '../../src/db/database.js';
import { run, sql } from '../../src/db/executor.js';
import type { JobInsertRow } from '../../src/db/jobs-insert.js';
import type { RunRow } from '../../src/db/pipelines-runs.js';
import { createPool, type PoolHandle } from '../../src/db/pool.js';
import { StatementSet } from '../../src/db/statements.js';
import { useTestDatabase } from '../support/db.js';

// Issue 12: statements are bound to the database once and take their parameters by name, with the
// row type carried by the statement's definition. The type checks below are part of `npm test`
// (npm run typecheck compiles the tests): each @ts-expect-error fails the build if the mistake
// it names would compile.

const t = useTestDatabase('bound');
t.migrateBeforeAll();

const pools: PoolHandle[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

function database(): Database {
  const pool = createPool({ connectionString: t.url, max: 2, applicationName: 'bound-queries' });
  pools.push(pool);
  return new Database(pool, t.schema);
}

const row = (kind: string, queue: string): JobInsertRow => ({
  kind,
  queue,
  priority: 0,
  runAt: null,
  delayMs: null,
  payload: '{}',
  maxAttempts: 3,
  atMostOnce: false,
  dedupeKey: null,
  expiresAt: null,
  maxAgeMs: null,
  traceContext: null,
  dedupeScope: 'pending',
});

/** Never called: its body only has to compile, or fail to where marked. */
function typeChecks(db: Database): void {
  const set = new StatementSet('x');
  const stmt = set.plain<{ n: number }, [a: number, b: string]>(() => 'SELECT $1::int AS n, $2::text');
  const rows: Promise<{ n: number }[]> = run(db.executor, stmt, [1, 'b']);
  void rows;
  // @ts-expect-error parameters in the wrong order
  void run(db.executor, stmt, ['b', 1]);
  // @ts-expect-error a parameter missing
  void run(db.executor, stmt, [1]);
  // @ts-expect-error the rows are of the statement's type, not whatever the caller says
  const wrong: Promise<{ m: string }[]> = run(db.executor, stmt, [1, 'b']);
  void wrong;
  // @ts-expect-error a claim names every parameter (owner and leaseMs are missing)
  void db.jobs.claim({ queue: 'q', kinds: ['k'], limit: 1 });
  // @ts-expect-error a parameter of the wrong type
  void db.jobs.claim({ queue: 'q', kinds: 'k', limit: 1, owner: 'o', leaseMs: 1 });

  // Pipelines: a transition's statement runs only in the caller's transaction, named as `tx`.
  void db.transaction(async (tx) => {
    const run: RunRow | undefined = await db.pipelines.runs.lock({ tx, id: '1' });
    void run;
    // @ts-expect-error the run's lock is taken in a transaction: without `tx` it does not compile
    void db.pipelines.runs.lock({ id: '1' });
    // @ts-expect-error a step's end names the state it may end from (`from` missing)
    void db.pipelines.steps.setMain({ tx, runId: '1', step: 's', state: 'skipped', error: null });
    // @ts-expect-error not a step state
    void db.pipelines.steps.setMain({ tx, runId: '1', step: 's', state: 'done', error: null, from: ['blocked'] });
    // @ts-expect-error the recording write names its step by a StepRef, not loose fields
    void db.pipelines.steps.succeed({ tx, runId: '1', step: 's', item: '', jobId: '2', output: '{}', bytes: 2 });
  });
  // @ts-expect-error the rows are the statement's: a run listing has no `graph`
  const listed: Promise<{ graph: unknown }[]> = db.pipelines.runs.list({ filter: { pipeline: null, states: null, key: null, dryRun: null, beforeId: null }, limit: 1 });
  void listed;
  // @ts-expect-error an id is text (a bigint as the database returns it), not a number
  void db.pipelines.runs.get({ id: 1 });
}
void typeChecks;

describe('statements bound to the database', () => {
  it('a statement returns the rows its definition declares, with its parameters in order', async () => {
    const stmt = sql<{ n: number; s: string }, [a: number, b: string]>('SELECT $1::int + 1 AS n, $2::text AS s');
    expect(await run(t.sql, stmt, [41, 'x'])).toEqual([{ n: 42, s: 'x' }]);
  });

  it('db.jobs.claim takes its parameters by name and claims on the database it was bound to', async () => {
    const db = database();
    const [inserted] = await db.inserts.insert({ rows: [row('bound.claim', 'bound-q')], debounced: false });
    const claimed = await db.jobs.claim({ queue: 'bound-q', kinds: ['bound.claim'], limit: 5, owner: 'me', leaseMs: 60_000 });
    expect(claimed.map((r) => [r.id, r.state, r.attempt])).toEqual([[inserted!.id, 'running', 1]]);
    const { rows } = await t.sql.query(`SELECT lease_owner, started_at IS NOT NULL AS started FROM "${t.schema}".jobs_all WHERE id = $1`, [inserted!.id]);
    // The claim records no start: the worker records it when the handler runs (issue 11, bug 3).
    expect(rows).toEqual([{ lease_owner: 'me', started: false }]);
    const held = await db.jobs.heartbeat({ ids: [claimed[0]!.id], tokens: [claimed[0]!.lease_token], leaseMs: 60_000 });
    expect([...held]).toEqual([claimed[0]!.lease_token]);
  });

  it('db.pipelines: a run started in a transaction is gone on rollback; its lock and steps are bound to the same database', async () => {
    const db = database();
    const start = (tx: Parameters<Parameters<Database['transaction']>[0]>[0]) =>
      db.pipelines.runs.start({
        tx,
        run: { pipeline: 'bound.p', key: 'k1', dryRun: false, input: null, graph: '{"steps":[]}', traceContext: null, startedBy: 'test', deadlineMs: null },
      });
    await expect(
      db.transaction(async (tx) => {
        await start(tx);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await db.pipelines.runs.find({ pipeline: 'bound.p', key: 'k1', dryRun: null })).toBeUndefined();
    const started = await db.transaction(async (tx) => {
      const row = await start(tx);
      await db.pipelines.steps.insertMain({ tx, runId: row.id, steps: ['a', 'b'] });
      return row;
    });
    expect(started.created).toBe(true);
    const again = await db.transaction((tx) => start(tx));
    expect([again.id, again.created]).toEqual([started.id, false]);
    const locked = await db.transaction((tx) => db.pipelines.runs.lock({ tx, id: started.id }));
    expect(locked?.state).toBe('running');
    expect((await db.pipelines.steps.list({ runId: started.id, limit: 10 })).map((r) => [r.step, r.state])).toEqual([
      ['a', 'blocked'],
      ['b', 'blocked'],
    ]);
  });

  it("an insert given the caller's transaction as db is part of it: gone on rollback, there on commit", async () => {
    const db = database();
    const count = async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind = 'bound.tx'`)).rows[0].n as number;
    await expect(
      db.transaction(async (tx) => {
        await db.inserts.insert({ rows: [row('bound.tx', 'bound-tx')], debounced: false, db: tx });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await count()).toBe(0);
    await db.transaction((tx) => db.inserts.insert({ rows: [row('bound.tx', 'bound-tx')], debounced: false, db: tx }));
    expect(await count()).toBe(1);
  });
});
