import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, type Nightshift, type NightshiftEvent, type NightshiftOptions } from '../../src/index.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { useTestDatabase } from '../support/db.js';
import { describeWithPgBouncer, usePgBouncer } from '../support/pgbouncer.js';
import { nextEvent, waitFor } from '../support/wait.js';

// A LISTEN through a transaction-mode pooler registers on whichever server connection ran it and
// then hears nothing. The listener proves its channel after connecting — a NOTIFY with a unique
// payload sent through the pool — and says when the echo does not come.
const t = useTestDatabase('lsn');
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });

async function readyz(port: number): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`http://127.0.0.1:${port}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

async function metrics(port: number): Promise<string> {
  return (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
}

describeWithPgBouncer('the listener behind PgBouncer in transaction mode', () => {
  const b = usePgBouncer(() => t.url);

  it('reports that it is not proven — event, warning, metric, /readyz — and jobs still run by polling', async () => {
    const ran: number[] = [];
    const job = defineJob({ kind: 'polled', payload, queue: 'polled', run: async ({ n }) => void ran.push(n) });
    const lines: string[] = [];
    const ns = t.client({
      databaseUrl: b.bouncer().url,
      jobs: [job],
      pollIntervalMs: 200,
      logger: createLogger({ level: 'warn', destination: { write: (line: string) => lines.push(line) } }),
    });
    const unproven = nextEvent<NightshiftEvent>(
      (l) => ns.on(l),
      (e) => e.type === 'listener.unproven',
    );
    const proven: NightshiftEvent[] = [];
    ns.on((e) => {
      if (e.type === 'listener.proven') proven.push(e);
    });
    const { port } = await ns.serveOps({ port: 0 });
    await ns.start();
    const event = await unproven;
    expect(event).toMatchObject({ type: 'listener.unproven' });
    expect((event as { reason: string }).reason).toContain('PgBouncer');
    expect((event as { hint: string }).hint).toContain('listenDatabaseUrl');
    expect(proven).toEqual([]);
    // Logged at warn, naming the way out.
    const warned = lines.map((l) => JSON.parse(l)).find((l) => l.event === 'listener.unproven');
    expect(warned).toMatchObject({ level: 40 });
    expect(warned.hint).toContain('database.listenUrl');
    // Still ready — polling is the correctness path — but /readyz says how wake-ups work, and why.
    const ready = await readyz(port);
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ ready: true, wakeups: 'polling' });
    expect(String(ready.body.wakeupsReason)).toContain('transaction-mode pooler');
    expect(ns.wakeups).toMatchObject({ mode: 'polling' });
    expect(await metrics(port)).toMatch(/^nightshift_listener_proven 0$/m);
    // And jobs run.
    await ns.enqueue(job, { n: 1 });
    await ns.enqueueMany(job, [{ n: 2 }, { n: 3 }]);
    for (let n = 4; n <= 20; n++) await ns.enqueue(job, { n });
    await waitFor('the jobs to run by polling', () => ran.length === 20);
    expect(new Set(ran).size).toBe(20);
    // The job channel was never LISTENed through the pooler: no pooled server connection got the
    // jobs' notifications (PgBouncer warns of each one it gets while not linked to a client).
    // At most the proof's own notification reached one.
    expect(
      b
        .bouncer()
        .output()
        .match(/got packet 'A' from server when not linked/g)?.length ?? 0,
    ).toBeLessThanOrEqual(1);
  });

  it('with a direct listener URL (listenDatabaseUrl) the listener is proven, and notifications wake the worker', async () => {
    const ran: number[] = [];
    const job = defineJob({ kind: 'notified', payload, queue: 'notified', run: async ({ n }) => void ran.push(n) });
    // The idle poll is an hour: a job can only start soon through a notification.
    const ns = t.client({ databaseUrl: b.bouncer().url, listenDatabaseUrl: t.url, jobs: [job], pollIntervalMs: 3_600_000 });
    const proven = nextEvent<NightshiftEvent>(
      (l) => ns.on(l),
      (e) => e.type === 'listener.proven',
    );
    let idle = false;
    ns.on((e) => {
      if (e.type === 'worker.claimed' && e.queue === 'notified' && e.count === 0) idle = true;
    });
    const { port } = await ns.serveOps({ port: 0 });
    await ns.start();
    expect(await proven).toMatchObject({ type: 'listener.proven' });
    const ready = await readyz(port);
    expect(ready.body).toMatchObject({ ready: true, wakeups: 'notify' });
    expect(ready.body.wakeupsReason).toBeUndefined();
    expect(await metrics(port)).toMatch(/^nightshift_listener_proven 1$/m);
    await waitFor('the worker to find its queue empty', () => idle);
    // Enqueued through the pooler; heard on the direct connection.
    await ns.enqueue(job, { n: 1 });
    await waitFor('the notified job to run', () => ran.length === 1, { timeoutMs: 20_000 });
  });

  it("another process's proof wakes no worker: it is sent on a channel of the proving listener alone", async () => {
    const job = defineJob({ kind: 'quiet', payload, queue: 'quiet', run: async () => undefined });
    const first = t.client({ databaseUrl: b.bouncer().url, listenDatabaseUrl: t.url, jobs: [job], pollIntervalMs: 3_600_000 });
    const firstProven = nextEvent<NightshiftEvent>(
      (l) => first.on(l),
      (e) => e.type === 'listener.proven',
    );
    await first.start();
    await firstProven;
    const heard: NightshiftEvent[] = [];
    first.on((e) => {
      if (e.type === 'listener.notified') heard.push(e);
    });
    // A second process proves its own listener: its NOTIFY reaches the first one's connection too.
    const second = t.client({ databaseUrl: b.bouncer().url, listenDatabaseUrl: t.url, jobs: [job], pollIntervalMs: 3_600_000 });
    const secondProven = nextEvent<NightshiftEvent>(
      (l) => second.on(l),
      (e) => e.type === 'listener.proven',
    );
    await second.start();
    await secondProven;
    // Then a real wake-up, which the first process must hear: everything before it was heard too.
    const woken = nextEvent<NightshiftEvent>(
      (l) => first.on(l),
      (e) => e.type === 'listener.notified',
    );
    await second.enqueue(job, { n: 1 });
    await woken;
    expect(heard[0]).toMatchObject({ type: 'listener.notified', queue: 'quiet' });
  });

  it('the example of docs/poolers.md, run as written: the listener on its direct URL is proven', async () => {
    const doc = readFileSync(fileURLToPath(new URL('../../docs/poolers.md', import.meta.url)), 'utf8');
    const block = /<!-- example: listen-url -->\s*```ts\n([\s\S]*?)```/.exec(doc);
    expect(block, 'example block in docs/poolers.md').toBeTruthy();
    const js = ts.transpileModule(block![1]!, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText;
    // The test's client factory adds only this file's schema and a quiet logger (and stops it after the test).
    const modules: Record<string, unknown> = { nightshift: { createNightshift: (o: NightshiftOptions) => t.client(o), defineJob }, zod: { z } };
    const exports: { ns?: Nightshift } = {};
    const env = { DATABASE_URL: process.env.DATABASE_URL, DATABASE_LISTEN_URL: process.env.DATABASE_LISTEN_URL };
    process.env.DATABASE_URL = b.bouncer().url;
    process.env.DATABASE_LISTEN_URL = t.url;
    try {
      new Function('require', 'exports', js)((name: string) => modules[name], exports);
    } finally {
      for (const [k, v] of Object.entries(env)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    const ns = exports.ns!;
    expect(ns.options.databaseUrl).toBe(b.bouncer().url);
    const proven = nextEvent<NightshiftEvent>(
      (l) => ns.on(l),
      (e) => e.type === 'listener.proven',
    );
    await ns.start();
    await proven;
    // On a machine loaded enough to make the listener reconnect, a new proof may be under way: the
    // mode settles on notify once it is heard.
    await waitFor('the listener to be proven', () => ns.wakeups?.mode === 'notify');
    expect(ns.wakeups).toEqual({ mode: 'notify' });
  });
});
