import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineConsumer, defineDaemon, defineJob, defineStream, isNightshiftError, type NightshiftError } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { describeWithRedis, useRedisServer } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { cliInProcess as cli } from './in-process.js';

// What users asked for while rebuilding the seeds (issue 11): `jobs run-now` for a job due later
// or debounced, an audited `enqueue` from the CLI, and `workers` showing what each process runs
// now, stream consumers included.

const t = useTestDatabase('ops_asks');
t.migrateBeforeAll();
// The CLI runs in this process; its config (test/fixtures/cli-app) reads NS_SCHEMA from process.env.
process.env.NS_SCHEMA = t.schema;
const env = () => ({ DATABASE_URL: t.url });
const payload = z.object({ n: z.number() });

async function audit(target: string): Promise<{ actor: string; action: string; reason: string | null; details: Record<string, unknown> }[]> {
  return (await t.sql.query(`SELECT actor, action, reason, details FROM "${t.schema}".audit_log WHERE target = $1 ORDER BY id`, [target])).rows;
}

async function rejection(p: Promise<unknown>): Promise<NightshiftError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isNightshiftError(err), String(err)).toBe(true);
  return err as NightshiftError;
}

describe('runJobNow / jobs run-now', () => {
  const later = defineJob({ kind: 'report-later', payload, run: async () => undefined });

  it('moves a job due in an hour to now, audited, and a worker runs it', async () => {
    const ns = t.client({ jobs: [later], pollIntervalMs: 100 });
    const { id } = await ns.enqueue(later, { n: 1 }, { delayMs: 3_600_000 });
    const moved = await ns.runJobNow(id, { actor: 'ops@example', reason: 'customer waiting' });
    expect(moved.state).toBe('available');
    expect(moved.runAt.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(await audit(`job:${id}`)).toEqual([{ actor: 'ops@example', action: 'run-now', reason: 'customer waiting', details: { kind: 'report-later', from: 'available', to: 'available' } }]);
    await ns.start();
    await waitFor('the job to run', async () => (await ns.getJob(id)).state === 'completed');
  });

  it('runs a debounced job now; a job already due keeps its run time', async () => {
    const ns = t.client({ jobs: [later] });
    const { id } = await ns.enqueue(later, { n: 2 }, { dedupeKey: `d-${randomBytes(3).toString('hex')}`, debounceMs: 3_600_000 });
    expect((await ns.getJob(id)).runAt.getTime()).toBeGreaterThan(Date.now() + 3_000_000);
    expect((await ns.runJobNow(id)).runAt.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    const { id: due } = await ns.enqueue(later, { n: 3 }, { runAt: new Date(Date.now() - 60_000) });
    const before = (await ns.getJob(due)).runAt.getTime();
    expect((await ns.runJobNow(due)).runAt.getTime()).toBe(before);
  });

  it('a job that is not pending: NS_INVALID_TRANSITION; none: NS_JOB_NOT_FOUND; from the CLI: exit 1', async () => {
    const ns = t.client({ jobs: [later] });
    const { id } = await ns.enqueue(later, { n: 4 });
    await ns.cancelJob(id);
    const err = await rejection(ns.runJobNow(id));
    expect(err.code).toBe('NS_INVALID_TRANSITION');
    expect(err.message).toContain(`cannot run now job ${id}: it is cancelled`);
    expect((await rejection(ns.runJobNow('987654321'))).code).toBe('NS_JOB_NOT_FOUND');
    const r = await cli(['jobs', 'run-now', id], { env: env() });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('NS_INVALID_TRANSITION');
  });

  it('jobs run-now <id> from the CLI, with the actor and reason in the audit log', async () => {
    const { id } = await t.client({ jobs: [later] }).enqueue(later, { n: 5 }, { delayMs: 3_600_000 });
    const r = await cli(['--actor', 'oncall@example', 'jobs', 'run-now', id, '--reason', 'stuck report', '--json'], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    expect(new Date((JSON.parse(r.stdout) as { runAt: string }).runAt).getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    expect(await audit(`job:${id}`)).toEqual([expect.objectContaining({ actor: 'oncall@example', action: 'run-now', reason: 'stuck report' })]);
  });
});

describe('nightshift enqueue is audited', () => {
  it('writes who enqueued which job of which kind, and never the payload', async () => {
    const canary = `canary-${randomBytes(4).toString('hex')}@example.com`;
    const r = await cli(['--actor', 'ops@example', 'enqueue', 'send-email', '--payload', JSON.stringify({ to: canary }), '--reason', 'resend', '--json'], { env: env() });
    expect(r.code, r.stderr).toBe(0);
    const { id, deduped } = JSON.parse(r.stdout) as { id: string; deduped: boolean };
    const entries = await audit(`job:${id}`);
    expect(entries).toEqual([{ actor: 'ops@example', action: 'enqueue', reason: 'resend', details: { kind: 'send-email', deduped } }]);
    expect(JSON.stringify(entries)).not.toContain(canary);
  });

  it('a kind only the database knows is audited too; a failed enqueue writes no entry', async () => {
    const elsewhere = defineJob({ kind: 'registered-elsewhere', payload, run: async () => undefined });
    await t.client({ jobs: [elsewhere] }).migrate();
    const ok = await cli(['enqueue', 'registered-elsewhere', '--payload', '{"n":1}', '--json'], { env: env() });
    expect(ok.code, ok.stderr).toBe(0);
    expect((await audit(`job:${(JSON.parse(ok.stdout) as { id: string }).id}`))[0]).toMatchObject({ action: 'enqueue', details: { kind: 'registered-elsewhere' } });
    const count = async () => (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".audit_log WHERE action = 'enqueue'`)).rows[0].n as number;
    const before = await count();
    const bad = await cli(['enqueue', 'no-such-kind', '--payload', '{}'], { env: env() });
    expect(bad.code).toBe(2);
    expect(await count()).toBe(before);
  });
});

describeWithRedis('nightshift workers', () => {
  const redis = useRedisServer();

  it('shows what each process runs now: jobs, queues, the daemons it leads and its stream consumers', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = defineJob({ kind: 'slow-export', payload, queue: 'exports', run: () => gate });
    const stream = defineStream({ name: `orders:${randomBytes(3).toString('hex')}`, payload: z.object({ id: z.string() }) });
    const orders = defineConsumer({ stream, group: 'billing', handler: async () => undefined });
    const audits = defineConsumer({ stream, group: 'audit', name: 'order-audit', singleton: true, handler: async () => undefined });
    const beat = defineDaemon({ name: 'pot-sync', everyMs: 60_000, run: async () => undefined });
    const ns = t.client({ jobs: [slow], consumers: [orders, audits], streams: [stream], daemons: [beat], redisUrl: redis.server().url, heartbeatMs: 200, leaseMs: 1_000, concurrency: 4 });
    try {
      await ns.enqueue(slow, { n: 1 });
      await ns.start();
      const me = async () => (await ns.listProcesses()).find((p) => p.id === ns.processId)!;
      await waitFor('the registry row to show the running job and the leadership', async () => {
        const info = (await me()).info;
        return info.running === 1 && (info.leading as string[]).includes('daemon:pot-sync') && (info.activeConsumers as string[]).includes('order-audit');
      });
      expect((await me()).info).toMatchObject({ kinds: ['slow-export'], queues: ['exports'], daemons: ['pot-sync'], consumers: ['billing', 'order-audit'], concurrency: 4 });

      const listed = await cli(['workers', '--json'], { env: env() });
      expect(listed.code, listed.stderr).toBe(0);
      const row = (JSON.parse(listed.stdout) as { id: string; info: Record<string, unknown> }[]).find((p) => p.id === ns.processId);
      expect(row?.info).toMatchObject({ running: 1, consumers: ['billing', 'order-audit'], activeConsumers: expect.arrayContaining(['billing', 'order-audit']) });
      const table = await cli(['workers'], { env: env() });
      const line = table.stdout.split('\n').find((l) => l.startsWith(ns.processId!)) ?? '';
      for (const text of ['1/4', 'exports', 'daemon:pot-sync', 'billing,order-audit']) expect(line, table.stdout).toContain(text);
    } finally {
      release();
      await ns.stop();
    }
  });
});
