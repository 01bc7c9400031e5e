import { readFileSync } from 'node:fs';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CONFIG_OPTION_PATHS, configPathOf, toClientOptions } from '../../src/config/define-config.js';
import { defineConfig, defineJob, isNightshiftError, type NightshiftConfig, type NightshiftError } from '../../src/index.js';
import { DaemonRunner } from '../../src/leadership/daemon-runner.js';
import { defineDaemon } from '../../src/leadership/define-daemon.js';
import { CLIENT_OPTION_KEYS, resolveOptions } from '../../src/runtime/client-options.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { openDatabase } from '../leadership/helpers.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

// Bug 10 of issue 11: combinations of options that each worked alone. `queues` replaced what a
// process's roles claim (a pod whose role ran `outbox-event` claimed from `mail` only and never
// ran it); the connection budget counted `maxConnections` for a pool the user handed in; config
// files could not set `prefetch`, `listen`, `maintenance` and other client options; and a
// required variable set to blanks counted as set.

const t = useTestDatabase('compose');
t.migrateBeforeAll();
const payload = z.object({ n: z.number() });

function configError(fn: () => unknown): NightshiftError {
  try {
    fn();
  } catch (err) {
    expect(isNightshiftError(err), String(err)).toBe(true);
    return err as NightshiftError;
  }
  throw new Error('expected a NightshiftError');
}

describe('queues and roles together', () => {
  it('roles decide the queues a process claims; queues only sets their concurrency', async () => {
    let running = 0;
    let peak = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const outbox = defineJob({
      kind: 'outbox-event',
      payload,
      queue: 'outbox',
      run: async () => {
        peak = Math.max(peak, ++running);
        await gate;
        running--;
      },
    });
    const mail = defineJob({ kind: 'send-mail', payload, queue: 'mail', run: async () => undefined });
    const roles = { 'outbox-worker': { jobs: ['outbox-event'] }, mailer: { jobs: ['send-mail'] } };
    const ns = t.client({ jobs: [outbox, mail], roles, activeRoles: ['outbox-worker'], queues: { mail: { concurrency: 5 }, outbox: { concurrency: 2 } }, pollIntervalMs: 100 });
    const ids = (await ns.enqueueMany(outbox, [{ n: 1 }, { n: 2 }, { n: 3 }])).map((r) => r.id);
    await ns.start();
    expect(ns.workedQueues).toEqual(['outbox']);
    await waitFor('two outbox jobs to run (the queue limit)', () => running === 2);
    release();
    await waitFor('every outbox job to complete', async () => (await Promise.all(ids.map((id) => ns.getJob(id)))).every((j) => j.state === 'completed'));
    expect(peak).toBe(2);
    const [registered] = await ns.listProcesses();
    expect(registered!.info.queues).toEqual(['outbox']);
  });

  it('a queue list names queues, it never narrows what the roles plan', async () => {
    const a = defineJob({ kind: 'in-a', payload, queue: 'a', run: async () => undefined });
    const b = defineJob({ kind: 'in-b', payload, queue: 'b', run: async () => undefined });
    const ns = t.client({ jobs: [a, b], queues: ['a'], pollIntervalMs: 100 });
    const ids = (await Promise.all([ns.enqueue(a, { n: 1 }), ns.enqueue(b, { n: 2 })])).map((r) => r.id);
    await ns.start();
    expect(ns.workedQueues.sort()).toEqual(['a', 'b']);
    await waitFor('the jobs of both queues to complete', async () => (await Promise.all(ids.map((id) => ns.getJob(id)))).every((j) => j.state === 'completed'));
  });

  it('a queue no kind and no role uses is a config error with a did-you-mean', () => {
    const job = defineJob({ kind: 'k', payload, queue: 'outbox', run: async () => undefined });
    const api = configError(() => resolveOptions({ databaseUrl: t.url, jobs: [job], roles: { r: { queues: ['psp'] } }, queues: { outbx: { concurrency: 1 }, psp: { concurrency: 2 } } }));
    expect(api.code).toBe('NS_CONFIG_INVALID');
    expect(api.issues).toEqual([{ path: 'queues.outbx', message: expect.stringContaining('did you mean "outbox"') }]);
    const file = configError(() => defineConfig({ jobs: [job], worker: { queues: ['outbox', 'nowhere'] } }));
    expect(file.issues.map((i) => i.path)).toEqual(['worker.queues.1']);
    expect(file.issues[0]!.message).toContain("name it in a role's queues");
  });
});

describe('the connection budget of a pool handed in', () => {
  it("counts the pool's own size, not maxConnections", async () => {
    const pool = new pg.Pool({ connectionString: t.url, max: 3 });
    try {
      const job = defineJob({ kind: 'budgeted', payload, run: async () => undefined });
      const ns = t.client({ databaseUrl: undefined, pool, jobs: [job], budget: { replicas: 1, maxConnectionsPerProcess: 4 } });
      expect(await ns.connectionBudget()).toMatchObject({ perProcess: { pool: 3, listener: 1, total: 4 } });
      // 3 + the listener fits a cap of 4; the default maxConnections (10) would not.
      await ns.start();
      await ns.stop();
    } finally {
      await pool.end();
    }
  });
});

describe('every client option from a config file', () => {
  it('each option but pool and activeRoles has a place in the config, and docs/config.md names it', () => {
    const docs = readFileSync('docs/config.md', 'utf8');
    const missing = CLIENT_OPTION_KEYS.filter((k) => !['pool', 'activeRoles'].includes(k) && !CONFIG_OPTION_PATHS[k]);
    expect(missing).toEqual([]);
    for (const [option, path] of Object.entries(CONFIG_OPTION_PATHS)) expect(docs, `docs/config.md names ${path} (${option})`).toContain(`\`${path}\``);
  });

  it('prefetch, listen, maintenance, owner, redact, logErrorMessages, actor, enqueueBatchInFlight and registerProcess reach the client', () => {
    const config: NightshiftConfig = {
      worker: { prefetch: 3, listen: false, maintenance: false, owner: 'pod-7', registerProcess: false },
      redact: ['iban'],
      logErrorMessages: true,
      actor: 'ops-bot',
      enqueueBatchInFlight: 4,
    };
    const resolved = resolveOptions(toClientOptions(defineConfig(config), { databaseUrl: t.url }));
    expect(resolved).toMatchObject({
      prefetch: 3,
      listen: false,
      maintenance: false,
      owner: 'pod-7',
      registerProcess: false,
      redact: ['iban'],
      logErrorMessages: true,
      actor: 'ops-bot',
      enqueueBatchInFlight: 4,
    });
  });

  it('a bad value is reported under its path in the file', () => {
    const err = configError(() => defineConfig({ worker: { prefetch: -1, listen: 'yes' as never }, enqueueBatchInFlight: 0 }));
    expect(err.issues.map((i) => i.path).sort()).toEqual(['enqueueBatchInFlight', 'worker.listen', 'worker.prefetch']);
    expect(configPathOf('prefetch')).toBe('worker.prefetch');
  });
});

describe('required environment set to blanks', () => {
  it('counts as missing for the client', async () => {
    process.env.NS_TEST_BLANK = '   ';
    try {
      const ns = t.client({ requiredEnv: ['NS_TEST_BLANK'] });
      await expect(ns.start()).rejects.toMatchObject({ code: 'NS_MISSING_ENV', message: expect.stringContaining('NS_TEST_BLANK') });
    } finally {
      delete process.env.NS_TEST_BLANK;
    }
  });

  it('counts as missing for a daemon', async () => {
    const { database, close } = openDatabase(t.url, t.schema);
    try {
      const daemon = defineDaemon({ name: 'needs-rpc', everyMs: 1_000, requiredEnv: ['RPC_URL'], run: async () => undefined });
      const runner = new DaemonRunner({ database, daemons: [daemon], logger: silentLogger(), env: { RPC_URL: ' \t\n' } });
      await expect(runner.start()).rejects.toMatchObject({ code: 'NS_CONFIG_INVALID', message: expect.stringContaining('RPC_URL') });
      await runner.stop();
    } finally {
      await close();
    }
  });
});
