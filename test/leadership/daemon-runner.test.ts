import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/database.js';
import { ConfigError, FencedError } from '../../src/errors.js';
import { DaemonRunner, type DaemonRunnerOptions } from '../../src/leadership/daemon-runner.js';
import { defineDaemon, type DaemonContext } from '../../src/leadership/define-daemon.js';
import { listLeases } from '../../src/leadership/lease-listing.js';
import { EventBus, type NightshiftEvent } from '../../src/telemetry/events.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { openDatabase } from './helpers.js';

const t = useTestDatabase('daemon');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

let seq = 0;
const uniqueName = (what: string) => `${what}-${++seq}`;

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function runner(options: Partial<DaemonRunnerOptions> & Pick<DaemonRunnerOptions, 'daemons'>): DaemonRunner {
  const { database, close } = openDatabase(t.url, t.schema);
  cleanups.push(close);
  const r = new DaemonRunner({ database, ttlMs: 1_500, retryMs: 100, logger: silentLogger(), ...options });
  cleanups.push(() => r.stop());
  return r;
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errorOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

let shared: { database: Database; close: () => Promise<void> };
beforeAll(async () => {
  shared = openDatabase(t.url, t.schema, 'daemon-runner-test-shared', 2);
  await t.sql.query(`CREATE TABLE ${q()}.daemon_writes (id serial PRIMARY KEY, daemon text, token bigint, at timestamptz DEFAULT now())`);
});

afterAll(async () => {
  await shared.close();
});

describe('DaemonRunner', () => {
  it('runs a loop daemon on exactly one of two processes and fails over, with a larger token, when the leader stops', async () => {
    const name = uniqueName('loop');
    const terms: { token: string; ended: boolean }[] = [];
    const daemon = defineDaemon({
      name,
      run: async (ctx) => {
        const term = { token: ctx.fencingToken, ended: false };
        terms.push(term);
        await untilAborted(ctx.signal);
        term.ended = true;
      },
    });
    const r1 = runner({ daemons: [daemon], holder: 'p1' });
    const r2 = runner({ daemons: [daemon], holder: 'p2' });
    await r1.start();
    await r2.start();
    await waitFor('the daemon to start', () => terms.length > 0);
    const leaders = [r1, r2].filter((r) => r.status()[0]!.leader);
    expect(leaders).toHaveLength(1);
    const [leader, other] = leaders[0] === r1 ? [r1, r2] : [r2, r1];
    const [lease] = await listLeases(shared.database, { prefix: `daemon:${name}` });
    expect(lease).toMatchObject({ name: `daemon:${name}`, token: terms[0]!.token, expired: false });
    expect(leader.status()[0]).toMatchObject({ leader: true, token: terms[0]!.token, running: true });
    expect(other.status()[0]).toMatchObject({ leader: false, running: false });
    expect(terms).toHaveLength(1);

    await leader.stop();
    expect(terms[0]!.ended).toBe(true);
    await waitFor('the other process to take over', () => terms.length === 2);
    expect(BigInt(terms[1]!.token)).toBeGreaterThan(BigInt(terms[0]!.token));
    expect(other.status()[0]).toMatchObject({ leader: true, token: terms[1]!.token });
  });

  it('calls an everyMs daemon again and again while leader, never overlapping itself', async () => {
    let active = 0;
    let most = 0;
    let runs = 0;
    const tokens = new Set<string>();
    const daemon = defineDaemon({
      name: uniqueName('every'),
      everyMs: 1,
      run: async (ctx) => {
        active++;
        most = Math.max(most, active);
        tokens.add(ctx.fencingToken);
        await pause(5); // work that takes longer than everyMs
        active--;
        runs++;
      },
    });
    const r = runner({ daemons: [daemon] });
    await r.start();
    await waitFor('five runs', () => runs >= 5);
    expect(most).toBe(1);
    expect(tokens.size).toBe(1);
  });

  it('restarts a failing run with back-off while it stays the leader', async () => {
    const events = new EventBus();
    const failures: NightshiftEvent[] = [];
    events.on((e) => e.type === 'daemon.failed' && failures.push(e));
    const tokens: string[] = [];
    const name = uniqueName('crashy');
    const daemon = defineDaemon({
      name,
      run: async (ctx) => {
        tokens.push(ctx.fencingToken);
        if (tokens.length <= 2) throw new Error(`boom ${tokens.length}`);
        await untilAborted(ctx.signal);
      },
    });
    const r = runner({ daemons: [daemon], events, restartDelay: { initialMs: 10, maxMs: 50 } });
    await r.start();
    await waitFor('a third start', () => tokens.length >= 3);
    expect(new Set(tokens).size).toBe(1);
    expect(failures).toHaveLength(2);
    expect(failures[0]).toMatchObject({ type: 'daemon.failed', name, token: tokens[0], error: 'boom 1' });
    expect(r.status()[0]).toMatchObject({ leader: true, running: true, failures: 2, lastError: 'boom 2' });
  });

  it('refuses a fenced write once the lease has passed to someone else, and ends the term', async () => {
    const events = new EventBus();
    const failed: NightshiftEvent[] = [];
    events.on((e) => e.type === 'daemon.failed' && failed.push(e));
    const name = uniqueName('fenced');
    let first: DaemonContext | undefined;
    const daemon = defineDaemon({
      name,
      run: async (ctx) => {
        first ??= ctx;
        while (!ctx.signal.aborted) {
          await ctx.transaction((tx) => tx.query({ text: `INSERT INTO ${q()}.daemon_writes (daemon, token) VALUES ($1, $2)`, values: [name, ctx.fencingToken] }));
          await pause(10);
        }
      },
    });
    const r = runner({ daemons: [daemon], events, restartDelay: { initialMs: 10, maxMs: 50 } });
    await r.start();
    await waitFor('fenced writes', async () => (await t.sql.query(`SELECT 1 FROM ${q()}.daemon_writes WHERE daemon = $1`, [name])).rowCount! >= 2);
    const ctx = first!;
    // Another process takes the lease over (as after an expiry this holder did not notice).
    const { rows: stolen } = await t.sql.query(`UPDATE ${q()}.leases SET holder = 'thief', token = nextval('${q()}.leader_token_seq') WHERE name = $1 RETURNING clock_timestamp() AS at`, [`daemon:${name}`]);
    await waitFor('the refusal', () => failed.length > 0);
    expect(failed[0]).toMatchObject({ name, token: ctx.fencingToken });
    expect((failed[0] as { error: string }).error).toContain('write refused by fencing');
    await waitFor('the term to end', () => ctx.signal.aborted);
    const { rows } = await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.daemon_writes WHERE daemon = $1 AND token = $2 AND at >= $3`, [name, ctx.fencingToken, stolen[0].at]);
    expect(rows[0].n).toBe(0);
    // ctx.fence outside the runner's transaction helper refuses the same way.
    const err = await t.sql.connect().then(async (c) => {
      try {
        await c.query('BEGIN');
        return await ctx.fence(c).then(
          () => undefined,
          (e: unknown) => e,
        );
      } finally {
        await c.query('ROLLBACK');
        c.release();
      }
    });
    expect(err).toBeInstanceOf(FencedError);
  });

  it('stop aborts the run, waits for it to return, then releases the lease', async () => {
    const name = uniqueName('graceful');
    let cleanedUp = false;
    const daemon = defineDaemon({
      name,
      ttlMs: 60_000,
      run: async (ctx) => {
        await untilAborted(ctx.signal);
        await ctx.db.query({ text: 'SELECT pg_sleep(0.05)' }); // cleanup work after the abort
        cleanedUp = true;
      },
    });
    const r = runner({ daemons: [daemon] });
    await r.start();
    await waitFor('the run to start', () => r.status()[0]!.running);
    await r.stop();
    expect(cleanedUp).toBe(true);
    const [lease] = await listLeases(shared.database, { prefix: `daemon:${name}` });
    expect(lease).toMatchObject({ expired: true });
  });

  it('stop is bounded when a run ignores its signal, and leaves that lease to expire rather than release it', async () => {
    const name = uniqueName('stubborn');
    const daemon = defineDaemon({
      name,
      ttlMs: 60_000,
      run: () => new Promise<void>(() => undefined),
    });
    const r = runner({ daemons: [daemon], stopTimeoutMs: 50 });
    await r.start();
    await waitFor('the run to start', () => r.status()[0]!.running);
    await r.stop();
    const { rows } = await t.sql.query(`SELECT expires_at > now() AS held FROM ${q()}.leases WHERE name = $1`, [`daemon:${name}`]);
    expect(rows).toEqual([{ held: true }]);
  });

  it('fails closed when required environment is missing, listing every variable, and starts nothing', async () => {
    const a = defineDaemon({ name: uniqueName('needs'), run: () => undefined, requiredEnv: ['NS_TEST_SECRET_A', 'NS_TEST_PRESENT'] });
    const b = defineDaemon({ name: uniqueName('needs'), run: () => undefined, requiredEnv: ['NS_TEST_SECRET_B'] });
    const r = runner({ daemons: [a, b], env: { NS_TEST_PRESENT: 'yes' } });
    const err = await r.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues.map((i) => i.path)).toEqual([`${a.name}.requiredEnv.NS_TEST_SECRET_A`, `${b.name}.requiredEnv.NS_TEST_SECRET_B`]);
    const { rows } = await t.sql.query(`SELECT name FROM ${q()}.leases WHERE name IN ($1, $2)`, [`daemon:${a.name}`, `daemon:${b.name}`]);
    expect(rows).toEqual([]);
  });

  it('rejects duplicate daemon names and invalid options, listing every problem', () => {
    const { database, close } = openDatabase(t.url, t.schema);
    cleanups.push(close);
    const d = defineDaemon({ name: 'twice', run: () => undefined });
    const err = errorOf(() => new DaemonRunner({ database, daemons: [d, d, {} as never], stopTimeoutMs: -1, restartDelay: { intialMs: 5 } } as never));
    expect(err).toBeInstanceOf(ConfigError);
    const issues = (err as ConfigError).issues;
    expect(issues.map((i) => i.path)).toEqual(['daemons.1', 'daemons.2', 'stopTimeoutMs', 'restartDelay.intialMs']);
    expect(issues[3]!.message).toContain('did you mean "initialMs"');
  });
});
