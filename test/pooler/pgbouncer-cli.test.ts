import { beforeAll, expect, it } from 'vitest';
import { cli, CLI_APP, CLI_ENTRY } from '../support/cli.js';
import { useTestDatabase } from '../support/db.js';
import { describeWithPgBouncer, usePgBouncer } from '../support/pgbouncer.js';
import { startScript } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

// The CLI spawns a short process per command: each is a new client of the pooler, landing on
// server connections where earlier processes named their statements. Every command must work.
const t = useTestDatabase('pcli');

describeWithPgBouncer('the CLI through PgBouncer in transaction mode', () => {
  const b = usePgBouncer(() => t.url);
  const env = () => ({ DATABASE_URL: b.bouncer().url, NS_SCHEMA: t.schema });
  const run = async (args: string[]) => {
    const r = await cli(args, { env: env() });
    expect(r.code, `nightshift ${args.join(' ')}\n${r.stderr}`).toBe(0);
    return r;
  };
  const json = async (args: string[]) => JSON.parse((await run([...args, '--json'])).stdout);

  beforeAll(async () => {
    await run(['migrate']);
  });

  it('several enqueues in a row succeed, and the admin commands list what they wrote', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      // --json output is one JSON document: no warning mixed into it.
      const r = await json(['enqueue', 'send-email', '--payload', JSON.stringify({ to: `user${i}@example.com` })]);
      expect(r.deduped).toBe(false);
      ids.push(r.id);
    }
    expect(new Set(ids).size).toBe(5);
    const listed = (await json(['jobs', 'list', '--kind', 'send-email'])).map((j: { id: string }) => j.id);
    expect(listed.sort()).toEqual([...ids].sort());
    expect(await json(['jobs', 'show', ids[0]!])).toMatchObject({ id: ids[0], kind: 'send-email', state: 'available' });
    expect((await json(['queues', 'list'])).some((q: { name: string }) => q.name === 'mail')).toBe(true);
    expect((await json(['stats'])).some((s: { kind: string }) => s.kind === 'send-email')).toBe(true);
    expect((await json(['schedules', 'list'])).map((s: { name: string }) => s.name)).toContain('nightly-digest');
    const triggered = await json(['schedules', 'trigger', 'nightly-digest']);
    expect(triggered.jobId).toBeTruthy();
    await run(['queues', 'pause', 'mail', '--reason', 'pooler test']);
    await run(['queues', 'resume', 'mail']);
    expect((await json(['audit', '--target', 'queue:mail'])).length).toBeGreaterThanOrEqual(2);
    await run(['jobs', 'cancel', ids[4]!]);
    expect(await json(['jobs', 'show', ids[4]!])).toMatchObject({ state: 'cancelled' });
    expect(Array.isArray(await json(['workers']))).toBe(true);
    expect(Array.isArray(await json(['daemons']))).toBe(true);
    expect(await json(['budget'])).toMatchObject({ perProcess: { listener: 1 } });
  });

  it('a worker drains the queue by polling and says why it cannot rely on notifications', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await json(['enqueue', 'send-email', '--payload', JSON.stringify({ to: `w${i}@example.com` })])).id);
    const proc = startScript(CLI_ENTRY, { ...env(), NIGHTSHIFT_LOG_LEVEL: 'warn', OPENROUTER_API_KEY: 'unused' }, ['worker', '--roles', 'psp-worker', '--metrics-port', '0'], CLI_APP);
    try {
      await proc.waitForLine('started');
      await waitFor('the worker to complete every job', async () => {
        const { rows } = await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE id = ANY($1::bigint[]) AND state = 'completed'`, [ids]);
        return rows[0].n === ids.length;
      });
      await proc.waitForLine('"event":"listener.unproven"');
      const port = Number(/metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(proc.output())?.[1]);
      const ready = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as Record<string, unknown>;
      expect(ready).toMatchObject({ ready: true, wakeups: 'polling' });
      // Enqueued while it runs: found by polling.
      const late = (await json(['enqueue', 'send-email', '--payload', '{"to":"late@example.com"}'])).id;
      await waitFor('the late job to complete', async () => (await t.sql.query(`SELECT state FROM "${t.schema}".jobs_all WHERE id = $1`, [late])).rows[0].state === 'completed');
      expect(proc.output()).not.toContain('"event":"worker.error"');
      proc.kill('SIGTERM');
      expect((await proc.exited).code).toBe(0);
    } finally {
      proc.kill('SIGKILL');
      await proc.exited;
    }
  });
});
