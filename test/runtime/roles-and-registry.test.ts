import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { startScript } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const job = defineJob({ kind: 'rr-job', payload: z.object({}), queue: 'rr', run: async () => undefined });

describe('roles, the process registry and the connection budget', () => {
  it('a process with only an API role enqueues but claims nothing', async () => {
    const api = t.client({ jobs: [job], roles: { api: {}, worker: { jobs: ['rr-job'] } }, activeRoles: ['api'] });
    await api.start();
    expect(api.workedQueues).toEqual([]);
    const { id } = await api.enqueue(job, {});
    const worker = t.client({ jobs: [job], roles: { api: {}, worker: { jobs: ['rr-job'] } }, activeRoles: ['worker'] });
    await worker.start();
    expect(worker.workedQueues).toEqual(['rr']);
    await waitFor('the worker role to run it', async () => (await api.getJob(id)).state === 'completed');
    const processes = await api.listProcesses();
    expect(processes.map((p) => p.roles).sort()).toEqual([['api'], ['worker']]);
  });

  it('removes a process whose heartbeat lapsed (killed), and keeps the live ones', async () => {
    const proc = startScript('test/fixtures/effect-worker.ts', { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_HEARTBEAT_MS: '300', NS_LEASE_MS: '1000' });
    await t.sql.query(`CREATE TABLE IF NOT EXISTS ${q()}.effects (job_id bigint, attempt int, pid int, token bigint, at timestamptz DEFAULT now())`);
    try {
      await proc.waitForLine('ready');
      const watcher = t.client({ heartbeatMs: 300, leaseMs: 1_000 });
      await watcher.start();
      await waitFor('the worker to be registered', async () => (await watcher.listProcesses()).some((p) => p.pid === proc.pid));
      proc.kill('SIGKILL');
      await proc.exited;
      // The watcher's own heartbeats clean up processes not seen for three of theirs.
      await waitFor('the killed process to be removed', async () => !(await watcher.listProcesses()).some((p) => p.pid === proc.pid));
      expect((await watcher.listProcesses()).some((p) => p.pid === process.pid)).toBe(true);
    } finally {
      proc.kill('SIGKILL');
      await proc.exited;
    }
  });

  it('fails start-up closed when the configured fleet would exceed the server connections', async () => {
    const max = Number((await t.sql.query(`SELECT current_setting('max_connections') AS m`)).rows[0].m);
    const ns = t.client({ jobs: [job], maxConnections: 10, budget: { replicas: Math.ceil(max / 11) + 1 } });
    await expect(ns.start()).rejects.toMatchObject({ code: 'NS_BUDGET_EXCEEDED' });
    const capped = t.client({ jobs: [job], maxConnections: 10, budget: { replicas: 1, maxConnectionsPerProcess: 5 } });
    await expect(capped.start()).rejects.toMatchObject({ code: 'NS_BUDGET_EXCEEDED' });
    const fits = t.client({ jobs: [job], maxConnections: 10, budget: { replicas: 2 } });
    await fits.start();
    const report = await fits.connectionBudget({ replicas: 2 });
    expect(report).toMatchObject({ perProcess: { pool: 10, listener: 1, total: 11 }, fleet: 22, ok: true });
  });

  it('fails start-up naming every missing environment variable and who needs it', async () => {
    const needy = defineJob({ kind: 'rr-needy', payload: z.object({}), requiredEnv: ['NS_TEST_MISSING_A'], run: async () => undefined });
    const ns = t.client({ jobs: [needy], requiredEnv: ['NS_TEST_MISSING_B'], roles: { r: { jobs: ['rr-needy'], requiredEnv: ['NS_TEST_MISSING_C'] } }, activeRoles: ['r'] });
    const err = (await ns.start().catch((e: unknown) => e)) as Error & { code: string };
    expect(err.code).toBe('NS_MISSING_ENV');
    for (const v of ['NS_TEST_MISSING_A (required by job rr-needy)', 'NS_TEST_MISSING_B (required by the config)', 'NS_TEST_MISSING_C (required by role r)']) expect(err.message).toContain(v);
  });
});
