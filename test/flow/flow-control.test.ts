import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, defineQueue, type Nightshift } from '../../src/index.js';
import { cliInProcess } from '../cli/in-process.js';
import { useTestDatabase } from '../support/db.js';
import { nextEvent, waitFor } from '../support/wait.js';
import { limitRunsTable } from './fixtures/limit-jobs.js';
import { rateStarts } from './runs.js';

const t = useTestDatabase('flowc');
t.migrateBeforeAll();

/** Handlers that run until the test lets them finish: overlaps and waits are steered, not timed. */
function gate() {
  const waiting = new Map<string, () => void>();
  return {
    hold: (id: string) => new Promise<void>((resolve) => waiting.set(id, resolve)),
    running: () => [...waiting.keys()],
    release(id: string) {
      waiting.get(id)?.();
      waiting.delete(id);
    },
    releaseAll() {
      for (const id of [...waiting.keys()]) this.release(id);
    },
  };
}

async function state(id: string): Promise<string> {
  return (await t.sql.query(`SELECT state::text FROM "${t.schema}".jobs_all WHERE id = $1`, [id])).rows[0].state;
}

const payload = z.object({ account: z.string() });

describe('a job waiting for a limit says so', () => {
  it('jobLimits, listLimits, jobs show, nightshift limits, the event and the gauge tell "limited" from "stuck"', async () => {
    const g = gate();
    const psp = defineJob({ kind: 'psp-call', payload, concurrency: { limit: 1, key: (p) => p.account }, run: (_p, ctx) => g.hold(ctx.jobId) });
    const registry = new Registry();
    const ns = t.client({ jobs: [psp], concurrency: 5 });
    ns.metrics({ registry });
    const first = await ns.enqueue(psp, { account: 'acme' });
    const second = await ns.enqueue(psp, { account: 'acme' });
    const other = await ns.enqueue(psp, { account: 'globex' });
    const limited = nextEvent(ns.on.bind(ns), (e) => e.type === 'worker.limited' && e.waiting > 0);
    await ns.start();
    await waitFor('acme and globex to run', () => g.running().length === 2);
    expect(g.running().sort()).toEqual([first.id, other.id].sort());
    await limited;
    expect(await state(second.id)).toBe('available');
    expect(await ns.jobLimits(second.id)).toEqual([{ limit: 'kind:psp-call:c', type: 'concurrency', key: 'acme', max: 1, perMs: null, inUse: 1, full: true }]);
    const [rec] = await ns.listLimits();
    expect(rec).toMatchObject({ name: 'kind:psp-call:c', type: 'concurrency', max: 1, keyed: true, inUse: 2, fullKeys: 2, waiting: 1 });
    expect(rec!.top.map((x) => x.key).sort()).toEqual(['acme', 'globex']);
    const gauge = (await registry.getSingleMetric('nightshift_jobs_limited')!.get()).values.find((v) => v.labels.queue === 'default');
    expect(gauge?.value).toBe(1);
    // The CLI says the same: `jobs show` of the waiting job, and `limits`.
    const cli = (args: string[]) => cliInProcess(['--database-url', t.url, '--schema', t.schema, ...args]);
    const show = await cli(['jobs', 'show', second.id]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain('limits:\n  kind:psp-call:c key acme: 1/1 running — full: a due job of it waits for this limit');
    expect(JSON.parse((await cli(['jobs', 'show', second.id, '--json'])).stdout).limits).toEqual([{ limit: 'kind:psp-call:c', type: 'concurrency', key: 'acme', max: 1, perMs: null, inUse: 1, full: true }]);
    const running = await cli(['jobs', 'show', other.id]);
    expect(running.stdout).toContain('kind:psp-call:c key globex: 1/1 running — full');
    const limits = await cli(['limits']);
    expect(limits.code, limits.stderr).toBe(0);
    expect(limits.stdout).toMatch(/limit\s+bound\s+in use\s+full keys\s+waiting\s+busiest/);
    expect(limits.stdout).toMatch(/kind:psp-call:c\s+1 running per key\s+2\s+2\s+1\s+/);
    expect(JSON.parse((await cli(['limits', '--json'])).stdout)).toMatchObject([{ name: 'kind:psp-call:c', inUse: 2, fullKeys: 2, waiting: 1 }]);
    g.release(first.id);
    await waitFor('the waiting job to start once the slot frees', () => g.running().includes(second.id));
    g.releaseAll();
    await waitFor('both to complete', async () => (await state(second.id)) === 'completed' && (await state(other.id)) === 'completed');
    g.releaseAll();
  });
});

describe('limits and the rest of the claim', () => {
  it('several limits on one job: every one must have room', async () => {
    const g = gate();
    const call = defineJob({
      kind: 'multi-limit',
      payload,
      concurrency: [{ limit: 1, key: (p) => p.account }, { limit: 2 }],
      run: (_p, ctx) => g.hold(ctx.jobId),
    });
    const ns = t.client({ jobs: [call], concurrency: 10 });
    const ids = [];
    for (const account of ['a', 'a', 'b', 'c', 'c']) ids.push((await ns.enqueue(call, { account })).id);
    await ns.start();
    await waitFor('two to run', () => g.running().length === 2);
    // a and b: the per-key limit keeps the second a back, the total keeps c back.
    expect(g.running().sort()).toEqual([ids[0], ids[2]].sort());
    for (let done = 0; done < 5;) {
      const running = g.running();
      expect(running.length).toBeLessThanOrEqual(2);
      const id = running[0];
      if (id === undefined) {
        await waitFor('a job to start', () => g.running().length > 0);
        continue;
      }
      g.release(id);
      done++;
      await waitFor('its completion', async () => (await state(id)) === 'completed');
    }
    expect(await Promise.all(ids.map(state))).toEqual(['completed', 'completed', 'completed', 'completed', 'completed']);
  });

  it('a paused queue claims nothing, a delayed job waits for its time, a deadline still expires a limited job', async () => {
    const g = gate();
    const job = defineJob({ kind: 'limited-misc', queue: 'misc', payload, concurrency: { limit: 1 }, run: (_p, ctx) => g.hold(ctx.jobId) });
    const ns = t.client({ jobs: [job], concurrency: 5 });
    await ns.pauseQueue('misc');
    const runner = await ns.enqueue(job, { account: 'x' });
    const doomed = await ns.enqueue(job, { account: 'x' }, { maxAgeMs: 300 });
    const later = await ns.enqueue(job, { account: 'x' }, { delayMs: 3_600_000 });
    await ns.start();
    await waitFor('the deadline to pass on the database clock', async () => (await t.sql.query(`SELECT expires_at < now() AS past FROM "${t.schema}".jobs_all WHERE id = $1`, [doomed.id])).rows[0].past);
    expect(await state(runner.id)).toBe('available');
    await ns.resumeQueue('misc');
    await waitFor('the first to run', () => g.running().includes(runner.id));
    // The slot is taken, but the claim still expires a job past its deadline (or maintenance does).
    await waitFor('the late job to expire', async () => (await state(doomed.id)) === 'expired');
    g.release(runner.id);
    await waitFor('the first to complete', async () => (await state(runner.id)) === 'completed');
    expect(await state(later.id)).toBe('available');
    expect(g.running()).toEqual([]);
  });

  it('a job enqueued without its limit keys (a client that does not define the kind) is held to the limit all the same', async () => {
    const g = gate();
    const job = defineJob({ kind: 'limited-sql', payload, concurrency: { limit: 1, key: (p) => p.account }, run: (_p, ctx) => g.hold(ctx.jobId) });
    const worker = t.client({ jobs: [job], concurrency: 5 });
    const producer = t.client();
    await worker.migrate();
    await worker.start(); // registers the kind
    const a = await producer.enqueueRegistered('limited-sql', { account: 'a' });
    const b = await producer.enqueueRegistered('limited-sql', { account: 'b' });
    await waitFor('one to run', () => g.running().length === 1);
    expect(g.running()).toEqual([a.id]);
    // Both share the key of jobs without one: the second waits.
    expect(await worker.jobLimits(a.id)).toMatchObject([{ key: '', inUse: 1, full: true }]);
    g.release(a.id);
    await waitFor('the second to run', () => g.running().includes(b.id));
    g.release(b.id);
    await waitFor('both complete', async () => (await state(b.id)) === 'completed');
  });
});

describe('a freed slot wakes every claim waiting for it', () => {
  // Found by the model-based test (CI, seed 1523231043): a kind's limit holds in every queue of
  // its jobs, but the slot a job freed woke only its own queue's claimers, so a job of the same
  // kind and key in another queue waited for the next poll (30 s there, minutes in seed 003).
  it('a job of another queue, claimed by another process, starts when the slot frees (an hour between polls)', async () => {
    const g = gate();
    const job = defineJob({ kind: 'xq-limited', payload, concurrency: { limit: 1, key: (p) => p.account }, run: (_p, ctx) => g.hold(ctx.jobId) });
    const roles = { a: { queues: ['xq-a'] }, b: { queues: ['xq-b'] } };
    const a = t.client({ jobs: [job], roles, activeRoles: ['a'], concurrency: 5, pollIntervalMs: 3_600_000 });
    const b = t.client({ jobs: [job], roles, activeRoles: ['b'], concurrency: 5, pollIntervalMs: 3_600_000 });
    const first = await a.enqueue(job, { account: 'acme' }, { queue: 'xq-a' });
    await a.start();
    await waitFor('the first to run', () => g.running().includes(first.id));
    const second = await b.enqueue(job, { account: 'acme' }, { queue: 'xq-b' });
    const limited = nextEvent(b.on.bind(b), (e) => e.type === 'worker.limited' && e.queue === 'xq-b' && e.waiting > 0);
    await b.start();
    await limited; // b's claim passed it over, and b now waits: polling would take an hour
    expect(await state(second.id)).toBe('available');
    g.release(first.id);
    await waitFor('the second to start once the first frees the key', () => g.running().includes(second.id));
    expect(await state(first.id)).toBe('completed');
    g.release(second.id);
    await waitFor('the second to complete', async () => (await state(second.id)) === 'completed');
    await Promise.all([a.stop(), b.stop()]);
  });
});

describe('rate limits wake the worker when the window opens', () => {
  it('drains a backlog over the rate without polling (a minute between polls, no notifications)', async () => {
    const started: string[] = [];
    await t.sql.query(limitRunsTable(t.schema)); // records the starts the rate limit counts (at the claim)
    const job = defineJob({ kind: 'rated-wake', payload, rateLimit: { limit: 4, per: 400 }, run: (_p, ctx) => void started.push(ctx.jobId) });
    const ns = t.client({ jobs: [job], concurrency: 10, pollIntervalMs: 60_000, listen: false });
    await ns.enqueueMany(
      job,
      Array.from({ length: 12 }, () => ({ account: 'x' })),
    );
    let claims = 0;
    ns.on((e) => {
      if (e.type === 'worker.claimed' && e.queue === 'default') claims++;
    });
    await ns.start();
    await waitFor('every job to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind = 'rated-wake' AND state = 'completed'`)).rows[0].n === 12);
    // Three windows' worth: a claim per window opening (and the odd one between), not a poll every 50 ms.
    expect(claims).toBeLessThanOrEqual(8);
    // The starts as the window counts them: at the claim (the handler's own start comes after it).
    const s = await rateStarts(t.sql, t.schema, 'kind:rated-wake:r');
    expect(s).toHaveLength(12);
    for (let i = 4; i < s.length; i++) expect(s[i]! - s[i - 4]!).toBeGreaterThanOrEqual(400);
  });

  it('a queue rate limit holds across kinds', async () => {
    const a = defineJob({ kind: 'qr-a', queue: 'metered', payload, run: async () => {} });
    const b = defineJob({ kind: 'qr-b', queue: 'metered', payload, run: async () => {} });
    await t.sql.query(limitRunsTable(t.schema));
    const ns = t.client({ jobs: [a, b], concurrency: 10, queueDefinitions: [defineQueue({ name: 'metered', rateLimit: { limit: 3, per: 300 } })] });
    await ns.enqueueMany(a, [{ account: '1' }, { account: '2' }, { account: '3' }]);
    await ns.enqueueMany(b, [{ account: '1' }, { account: '2' }, { account: '3' }]);
    await ns.start();
    await waitFor('every job to complete', async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE queue = 'metered' AND state = 'completed'`)).rows[0].n === 6);
    const s = await rateStarts(t.sql, t.schema, 'queue:metered:r');
    expect(s).toHaveLength(6);
    for (let i = 3; i < s.length; i++) expect(s[i]! - s[i - 3]!).toBeGreaterThanOrEqual(300);
  });
});

describe('throttle', () => {
  async function keyExpired(ns: Nightshift, key: string): Promise<boolean> {
    void ns;
    const { rows } = await t.sql.query(`SELECT expires_at < now() AS past FROM "${t.schema}".dedupe_keys WHERE key = chr(1) || 'throttle:' || $1`, [key]);
    return rows[0]?.past === true;
  }

  it('keeps the first job, drops repeats within the window and says so, then takes a new one', async () => {
    const job = defineJob({ kind: 'notify-pack', payload, run: async () => {} });
    const ns = t.client({ jobs: [job] });
    const first = await ns.enqueue(job, { account: 'one' }, { dedupeKey: 'couple-1', throttleMs: 400 });
    expect(first).toEqual({ id: first.id, deduped: false });
    const repeat = await ns.enqueue(job, { account: 'two' }, { dedupeKey: 'couple-1', throttleMs: 400 });
    expect(repeat).toEqual({ id: first.id, deduped: true, throttled: true });
    const other = await ns.enqueue(job, { account: 'three' }, { dedupeKey: 'couple-2', throttleMs: 400 });
    expect(other.deduped).toBe(false);
    // The first payload is kept (a throttle keeps the first; debounce keeps the last).
    expect((await ns.getJob(first.id)).payload).toEqual({ account: 'one' });
    expect(await t.jobCount('notify-pack')).toBe(2);
    await waitFor('the window to pass on the database clock', () => keyExpired(ns, 'couple-1'));
    const after = await ns.enqueue(job, { account: 'four' }, { dedupeKey: 'couple-1', throttleMs: 400 });
    expect(after.deduped).toBe(false);
    expect(after.id).not.toBe(first.id);
  });

  it('concurrent repeats take one job between them', async () => {
    const job = defineJob({ kind: 'notify-race', payload, run: async () => {} });
    const ns = t.client({ jobs: [job] });
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => ns.enqueue(job, { account: String(i) }, { dedupeKey: 'same', throttleMs: 60_000 })));
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    expect(results.filter((r) => !r.deduped)).toHaveLength(1);
    expect(results.filter((r) => r.throttled)).toHaveLength(19);
    expect(await t.jobCount('notify-race')).toBe(1);
  });

  it('works in enqueueMany, in order with the batch', async () => {
    const job = defineJob({ kind: 'notify-many', payload, run: async () => {} });
    const ns = t.client({ jobs: [job] });
    const out = await ns.enqueueMany(job, [{ account: 'a' }, { account: 'b' }, { account: 'c' }], (p) => (p.account === 'c' ? {} : { dedupeKey: 'k', throttleMs: 60_000 }));
    expect(out.map((r) => r.deduped)).toEqual([false, true, false]);
    expect(out[1]).toEqual({ id: out[0]!.id, deduped: true, throttled: true });
  });
});
