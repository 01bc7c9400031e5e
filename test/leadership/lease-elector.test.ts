import { afterEach, describe, expect, it } from 'vitest';
import { LeadershipLostError } from '../../src/errors.js';
import { LeaseElector, type LeaseElectorOptions } from '../../src/leadership/lease-elector.js';
import { listLeases } from '../../src/leadership/lease-listing.js';
import { EventBus, type NightshiftEvent } from '../../src/telemetry/events.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { useTestDatabase } from '../support/db.js';
import { TcpProxy } from '../support/tcp-proxy.js';
import { waitFor } from '../support/wait.js';
import { openDatabase } from './helpers.js';

const t = useTestDatabase('lead');
t.migrateBeforeAll();

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

let seq = 0;
function uniqueName(): string {
  return `lease-${process.pid}-${++seq}`;
}

function db(url = t.url) {
  const d = openDatabase(url, t.schema);
  cleanups.push(d.close);
  return d.database;
}

function elector(options: Partial<LeaseElectorOptions> & { name: string; holder: string }, database = db()): LeaseElector {
  const e = new LeaseElector({ database, ttlMs: 1_500, logger: silentLogger(), ...options });
  cleanups.push(() => e.stop());
  return e;
}

type Stamped = NightshiftEvent & { at: number };
function record(bus: EventBus): Stamped[] {
  const seen: Stamped[] = [];
  bus.on((e) => seen.push(e));
  return seen;
}

describe('lease statements', () => {
  it('acquire takes a free or expired lease, refuses a held one, and always starts a term with a larger token', async () => {
    const d = db();
    const leases = d.leases;
    const name = uniqueName();
    const first = await leases.acquire({ name, holder: 'a', ttlMs: 60_000 });
    expect(first).toBeDefined();
    expect(await leases.acquire({ name, holder: 'b', ttlMs: 60_000 })).toBeUndefined();
    // The same holder without its last token is refused too: terms are told apart by token, not by holder.
    expect(await leases.acquire({ name, holder: 'a', ttlMs: 60_000 })).toBeUndefined();
    expect(await leases.acquire({ name, holder: 'a', ttlMs: 60_000, lastToken: String(BigInt(first!.token) + 1000n) })).toBeUndefined();
    // With its own last token (a renewal lost in flight) it starts a new term at once.
    const again = await leases.acquire({ name, holder: 'a', ttlMs: 60_000, lastToken: first!.token });
    expect(BigInt(again!.token)).toBeGreaterThan(BigInt(first!.token));
    // The earlier term can no longer renew or release.
    expect(await leases.renew({ name, token: first!.token, ttlMs: 60_000 })).toBe(false);
    expect(await leases.release({ name, token: first!.token })).toBe(false);
    expect(await leases.renew({ name, token: again!.token, ttlMs: 60_000 })).toBe(true);
    // Released: the next contender takes it, with a larger token still.
    expect(await leases.release({ name, token: again!.token })).toBe(true);
    expect(await leases.renew({ name, token: again!.token, ttlMs: 60_000 })).toBe(false);
    const other = await leases.acquire({ name, holder: 'b', ttlMs: 60_000 });
    expect(BigInt(other!.token)).toBeGreaterThan(BigInt(again!.token));
    const [row] = await listLeases(d, { prefix: name });
    expect(row).toMatchObject({ name, holder: 'b', token: other!.token, expired: false });
  });
});

describe('LeaseElector', () => {
  it('elects exactly one of two contenders, and the same one keeps it across renewals', async () => {
    const name = uniqueName();
    const d = db();
    const a = elector({ name, holder: 'a' }, d);
    const b = elector({ name, holder: 'b' });
    await Promise.all([a.start(), b.start()]);
    const leaders = [a, b].filter((e) => e.term);
    expect(leaders).toHaveLength(1);
    const leader = leaders[0]!;
    const token = leader.term!.token;
    const [row] = await listLeases(d, { prefix: name });
    expect(row).toMatchObject({ holder: leader.holder, token, expired: false });
    // Wait for two renewals by the database's own record, then look again.
    const renewed = row!.renewedAt.getTime();
    await waitFor('two renewals', async () => {
      const [r] = await listLeases(d, { prefix: name });
      return r!.renewedAt.getTime() > renewed && r;
    });
    const [later] = await listLeases(d, { prefix: name });
    await waitFor('another renewal', async () => {
      const [r] = await listLeases(d, { prefix: name });
      return r!.renewedAt.getTime() > later!.renewedAt.getTime();
    });
    expect([a, b].filter((e) => e.term)).toEqual([leader]);
    expect(leader.term!.token).toBe(token);
    expect(leader.term!.signal.aborted).toBe(false);
  });

  it('stop releases the lease, so the other contender takes over without waiting for expiry, with a larger token', async () => {
    const name = uniqueName();
    const events = new EventBus();
    const seen = record(events);
    // A long lease: only a release lets B in before the waitFor below gives up.
    const a = elector({ name, holder: 'a', ttlMs: 120_000, retryMs: 100, events });
    await a.start();
    const b = elector({ name, holder: 'b', ttlMs: 120_000, retryMs: 100, events });
    await b.start();
    expect(a.term).toBeDefined();
    expect(b.term).toBeUndefined();
    const first = a.term!;
    await a.stop();
    expect(first.signal.aborted).toBe(true);
    expect(first.signal.reason).toBeInstanceOf(LeadershipLostError);
    expect((first.signal.reason as LeadershipLostError).why).toBe('released');
    expect(a.term).toBeUndefined();
    await waitFor('b to take over', () => b.term);
    expect(BigInt(b.term!.token)).toBeGreaterThan(BigInt(first.token));
    const deposedAt = seen.findIndex((e) => e.type === 'leader.deposed' && e.holder === 'a');
    const electedAt = seen.findIndex((e) => e.type === 'leader.elected' && e.holder === 'b');
    expect(seen[deposedAt]).toMatchObject({ type: 'leader.deposed', name, token: first.token, reason: 'released' });
    expect(deposedAt).toBeLessThan(electedAt);
  });

  it('hands out strictly increasing tokens across terms', async () => {
    const name = uniqueName();
    const tokens: bigint[] = [];
    for (let i = 0; i < 4; i++) {
      const e = elector({ name, holder: `h${i}`, retryMs: 50 });
      await e.start();
      await waitFor(`term ${i}`, () => e.term);
      tokens.push(BigInt(e.term!.token));
      await e.stop();
    }
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1]!);
  });

  it('a holder cut off from the database steps down (aborting its signal) before the other contender is elected', async () => {
    const name = uniqueName();
    const events = new EventBus();
    const seen = record(events);
    const proxy = TcpProxy.for(t.url);
    await proxy.listen();
    const cut = db(proxy.url(t.url));
    cleanups.push(() => proxy.close());
    const a = elector({ name, holder: 'a', retryMs: 100, events }, cut);
    await a.start();
    const term = a.term!;
    expect(term).toBeDefined();
    const b = elector({ name, holder: 'b', retryMs: 100, events });
    await b.start();
    expect(b.term).toBeUndefined();

    proxy.blackhole();
    await waitFor('a to step down', () => term.signal.aborted);
    expect((term.signal.reason as LeadershipLostError).why).toBe('expired');
    await waitFor('b to be elected', () => b.term);
    expect(BigInt(b.term!.token)).toBeGreaterThan(BigInt(term.token));
    const order = seen.filter((e) => e.type === 'leader.elected' || e.type === 'leader.deposed').map((e) => `${e.type} ${(e as { holder: string }).holder}`);
    expect(order).toEqual(['leader.elected a', 'leader.deposed a', 'leader.elected b']);
    expect(seen.find((e) => e.type === 'leader.deposed')).toMatchObject({ reason: 'expired', token: term.token });
    // Let a's hung calls fail, so its stop and its pool end promptly.
    await proxy.close();
  });

  it('a holder whose lease was taken from it is deposed at its next renewal', async () => {
    const name = uniqueName();
    const events = new EventBus();
    const seen = record(events);
    const a = elector({ name, holder: 'a', retryMs: 50, events });
    await a.start();
    const term = a.term!;
    // Another process takes the lease (as one would after an expiry a's clock did not see).
    await t.sql.query(`UPDATE "${t.schema}".leases SET holder = 'thief', token = nextval('"${t.schema}".leader_token_seq') WHERE name = $1`, [name]);
    await waitFor('a to be deposed', () => term.signal.aborted);
    expect((term.signal.reason as LeadershipLostError).why).toBe('lost');
    expect(seen.find((e) => e.type === 'leader.deposed')).toMatchObject({ reason: 'lost', holder: 'a', token: term.token });
    expect(a.term).toBeUndefined();
  });

  it('notifies onChange listeners of election and deposition', async () => {
    const name = uniqueName();
    const a = elector({ name, holder: 'a' });
    const changes: (string | undefined)[] = [];
    a.onChange((term) => changes.push(term?.token));
    await a.start();
    const token = a.term!.token;
    await a.stop();
    expect(changes).toEqual([token, undefined]);
    await a.stop();
  });

  it('rejects invalid options, listing every problem', () => {
    const d = db();
    let error: unknown;
    try {
      new LeaseElector({ database: d, name: '', ttlMs: 1_000, renewMs: 900, retryMs: -1, tllMs: 5 } as unknown as LeaseElectorOptions);
    } catch (err) {
      error = err;
    }
    expect(error).toMatchObject({ code: 'NS_CONFIG_INVALID' });
    const issues = (error as { issues: { path: string; message: string }[] }).issues;
    expect(issues.map((i) => i.path).sort()).toEqual(['name', 'renewMs', 'retryMs', 'tllMs']);
    expect(issues.find((i) => i.path === 'tllMs')!.message).toContain('did you mean "ttlMs"');
  });
});
