import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../../test/support/cli.js';
import { useTestDatabase } from '../../test/support/db.js';
import { startScript, type Proc } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait.js';
import { FakeExpo, FakeOpenRouter } from './fake-providers.js';

// Seed 003's operations worker on three real worker processes: outbox rows as keyed jobs, the
// session digest as a schedule (once per tick), queue_pack_change in SQL with the 30-minute
// debounce, Expo ticket errors as failures, notification_id = the outbox (job) id, fleet-wide
// provider bounds, the media janitor with one owner, and the fail-closed production start.
const t = useTestDatabase('ops');
const CONFIG = 'examples/operations-worker/nightshift.config.ts';
const ROOT = new URL('../..', import.meta.url).pathname;
const MEDIA = mkdtempSync(join(tmpdir(), 'ops-media-'));
const expo = new FakeExpo();
const openrouter = new FakeOpenRouter();
let env: Record<string, string>;
const q = () => `"${t.schema}"`;
const procs: Proc[] = [];
const worker = async (more: Record<string, string> = {}) => {
  const p = startScript('src/cli/main.ts', { ...env, ...more }, ['--config', CONFIG, 'worker', '--roles', 'operations-worker']);
  procs.push(p);
  await p.waitForLine('started');
  return p;
};

beforeAll(async () => {
  expo.badTokens.add('tok-bad');
  env = {
    DATABASE_URL: t.url,
    NS_SCHEMA: t.schema,
    OPS_FAST: '1',
    EXPO_URL: await expo.start(),
    OPENROUTER_URL: await openrouter.start(),
    OPENROUTER_API_KEY: 'or-test-key',
    OPENROUTER_CONCURRENCY: '2',
    MEDIA_DIR: MEDIA,
    NIGHTSHIFT_LOG_LEVEL: 'warn',
  };
  const m = startScript('examples/operations-worker/migrate.ts', env);
  expect((await m.exited).code, m.output()).toBe(0);
  await t.sql.query(`INSERT INTO ${q()}.ops_members VALUES ('c1', 'ann', 'tok-ann'), ('c1', 'bob', 'tok-bob'), ('c2', 'cat', 'tok-bad'), ('c2', 'dan', 'tok-dan')`);
});
afterAll(async () => {
  for (const p of procs) p.kill('SIGTERM');
  await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000))])));
  for (const p of procs) p.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
  await Promise.all([expo.stop(), openrouter.stop()]);
});

describe('seed 003: the operations worker', () => {
  it('fails closed in production without OPENROUTER_API_KEY, and without ADMIN_PRIVATE_KEY_JWK when messages are encrypted', async () => {
    const run = (more: Record<string, string | undefined>) => cli(['--config', CONFIG, 'worker', '--roles', 'operations-worker'], { env: { ...env, NODE_ENV: 'production', ...more }, cwd: ROOT });
    const noKey = await run({ OPENROUTER_API_KEY: undefined });
    expect(noKey.code).not.toBe(0);
    expect(noKey.stderr).toContain('NS_MISSING_ENV');
    expect(noKey.stderr).toContain('OPENROUTER_API_KEY');
    const noJwk = await run({ ENCRYPTED_MESSAGES: 'true' });
    expect(noJwk.code).not.toBe(0);
    expect(noJwk.stderr).toContain('ADMIN_PRIVATE_KEY_JWK');
    expect(noJwk.stderr).not.toContain('OPENROUTER_API_KEY');
  });

  it('queue_pack_change refuses a non-member with a clear SQL error and writes nothing; members are debounced 30 minutes into one job', async () => {
    const before = await t.jobCount('pack-change');
    await expect(t.sql.query(`SELECT ${q()}.queue_pack_change('c1', 'mallory')`)).rejects.toThrow('user mallory is not a member of couple c1');
    expect(await t.jobCount('pack-change')).toBe(before);
    const a = (await t.sql.query(`SELECT ${q()}.queue_pack_change('c1', 'ann') AS id`)).rows[0].id as string;
    const b = (await t.sql.query(`SELECT ${q()}.queue_pack_change('c1', 'bob') AS id`)).rows[0].id as string;
    expect(b).toBe(a);
    const ns = t.client();
    const job = await ns.getJob(a);
    expect(job.state).toBe('available');
    expect(job.payload).toEqual({ coupleId: 'c1', userId: 'bob' });
    const waitMs = job.runAt.getTime() - Date.now();
    expect(waitMs).toBeGreaterThan(25 * 60_000);
    expect(waitMs).toBeLessThanOrEqual(30 * 60_000 + 5_000);
    // Run now (as the debounce would in 30 minutes) on the fleet below: ann hears of bob's change, once.
    await ns.runJobNow(a);
  });

  it('on three workers: the digest ticks once per tick, one response session notifies each partner once with its outbox id; a ticket error is retried five times', async () => {
    const ns = t.client();
    await Promise.all([worker(), worker(), worker()]);
    // Session s1: ann and bob both answer (a match) — one push each, not a match push and an activity push.
    await t.sql.query(`INSERT INTO ${q()}.ops_responses (session_id, couple_id, user_id) VALUES ('s1', 'c1', 'ann'), ('s1', 'c1', 'bob'), ('s2', 'c2', 'dan')`);
    await waitFor('the digest pushes', () => expo.messages.filter((m) => m.data.kind === 'session-digest' && m.to !== 'tok-bad').length >= 3, { timeoutMs: 60_000 });
    // cat's token is unregistered: Expo's ticket says so, every attempt fails, five in all, then discarded.
    const bad = await waitFor('the bad push discarded', async () => (await ns.listJobs({ kind: 'send-push', state: ['discarded'], limit: 100 }))[0]);
    expect(bad.attempt).toBe(5);
    expect(bad.errors.at(-1)?.message).toContain('DeviceNotRegistered');
    expect(expo.messages.filter((m) => m.to === 'tok-bad')).toHaveLength(5);
    // Two more ticks after the digest: nothing is sent twice.
    const ticks = async () => (await ns.scheduleTicks('session-digest', { limit: 1000 })).length;
    const n = await ticks();
    await waitFor('two more ticks', async () => (await ticks()) >= n + 2);
    const digest = expo.messages.filter((m) => m.data.kind === 'session-digest');
    expect(
      digest
        .map((m) => `${m.to} ${m.title} ${m.body}`)
        .sort()
        .filter((x, i, all) => all.indexOf(x) === i),
    ).toEqual(["tok-ann It's a match session s1", "tok-bob It's a match session s1", 'tok-bad Your partner answered session s2', 'tok-dan Your partner answered session s2'].sort());
    expect(digest.filter((m) => m.to !== 'tok-bad')).toHaveLength(3);
    // notification_id is the outbox row's (job's) id, stable across retries.
    const pushes = await ns.listJobs({ kind: 'send-push', limit: 100 });
    for (const m of expo.messages) expect(pushes.map((j) => j.id)).toContain(m.data.notification_id);
    expect(new Set(expo.messages.filter((m) => m.to === 'tok-bad').map((m) => m.data.notification_id)).size).toBe(1);
    // The digest job ran once per tick: one job per tick, every tick recorded once.
    const digests = await ns.listJobs({ kind: 'session-digest', limit: 1000 });
    const slots = digests.map((j) => (j.payload as { at: string }).at);
    expect(new Set(slots).size).toBe(slots.length);
    // The pack change run at once above reached ann, once (bob changed it).
    await waitFor('the pack-change push', () => expo.messages.some((m) => m.data.kind === 'pack-change'));
    expect(expo.messages.filter((m) => m.data.kind === 'pack-change').map((m) => m.to)).toEqual(['tok-ann']);
    // The legacy senders are gone: no kind of theirs exists.
    expect((await ns.listJobs({ limit: 1000 })).map((j) => j.kind).filter((k) => /partner-activity|match/.test(k))).toEqual([]);
  });

  it('bounds OpenRouter across the fleet: never more calls in flight than the shared limit, with the key', async () => {
    openrouter.holdMs = 150;
    const ids = (await t.sql.query(`INSERT INTO ${q()}.ops_messages (couple_id, body) SELECT 'c1', 'hello ' || g FROM generate_series(1, 12) g RETURNING id::text`)).rows.map((r) => r.id as string);
    for (const id of ids) await t.sql.query(`SELECT ${q()}.enqueue('classify-message', jsonb_build_object('messageId', $1::text))`, [id]);
    await waitFor('all classified', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.ops_messages WHERE label IS NOT NULL`)).rows[0].n === 12, { timeoutMs: 60_000 });
    expect(openrouter.maxInFlight).toBeLessThanOrEqual(2);
    expect(openrouter.keys).toEqual(new Set(['Bearer or-test-key']));
    const limits = await t.client().listLimits();
    expect(limits.map((l) => l.name)).toEqual(expect.arrayContaining(['limit:openrouter', 'limit:openrouter-rate']));
  });

  it('runs the media janitor on exactly one worker, and another takes over when it dies', async () => {
    writeFileSync(join(MEDIA, 'kept.jpg'), 'x');
    writeFileSync(join(MEDIA, 'orphan-1.jpg'), 'x');
    await t.sql.query(`INSERT INTO ${q()}.ops_media VALUES ('kept.jpg')`);
    await waitFor('the orphan deleted', () => readdirSync(MEDIA).join(',') === 'kept.jpg');
    const ns = t.client();
    const holders = async () => (await ns.listLeases({ prefix: 'daemon:' })).filter((l) => l.name === 'daemon:media-janitor' && !l.expired);
    const [lease] = await waitFor('one holder', async () => ((await holders()).length === 1 ? holders() : undefined));
    const recentPids = async () => new Set((await t.sql.query(`SELECT pid FROM ${q()}.ops_janitor_runs WHERE at > now() - interval '1 second'`)).rows.map((r) => r.pid as number));
    await waitFor('runs from one pid', async () => (await recentPids()).size === 1);
    const owner = [...(await recentPids())][0]!;
    const victim = procs.find((p) => p.pid === owner)!;
    expect(lease).toBeDefined();
    victim.kill('SIGKILL');
    await victim.exited;
    writeFileSync(join(MEDIA, 'orphan-2.jpg'), 'x');
    await waitFor('the new owner deleted it', () => readdirSync(MEDIA).join(',') === 'kept.jpg', { timeoutMs: 30_000 });
    // The janitor records its run after its sweep: wait for the new owner's record too.
    const afterPids = async () =>
      (await t.sql.query(`SELECT DISTINCT pid FROM ${q()}.ops_janitor_runs WHERE at > (SELECT max(at) FROM ${q()}.ops_janitor_runs WHERE pid = $1)`, [owner])).rows.map((r) => r.pid as number);
    const after = await waitFor('the new owner’s run recorded', async () => ((await afterPids()).length > 0 ? afterPids() : undefined), { timeoutMs: 30_000 });
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(owner);
  });
});
