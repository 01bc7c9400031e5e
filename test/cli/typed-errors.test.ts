import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { CLI_APP } from '../support/cli.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { cliInProcess as cli, withProcessEnv } from './in-process.js';

// Bug 12 of issue 11, the CLI's side: each of these printed a raw error with its stack, or the
// wrong code, or the wrong exit code. Now: `error NS_…: message` with a hint, no stack, and the
// exit code of docs/errors.md.

const t = useTestDatabase('cli_typed');
// The CLI runs in this process; its config (test/fixtures/cli-app) reads NS_SCHEMA from process.env.
process.env.NS_SCHEMA = t.schema;
const env = () => ({ DATABASE_URL: t.url });
const STACK = /^\s+at /m;

describe('typed errors from the CLI', () => {
  it('a command on a schema never migrated: NS_NOT_MIGRATED, exit 1', async () => {
    for (const args of [['jobs', 'list'], ['enqueue', 'send-email', '--payload', '{"to":"a@example.com"}'], ['workers']]) {
      const r = await withProcessEnv({ NS_SCHEMA: `${t.schema}_none` }, () => cli(args, { env: env() }));
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain('error NS_NOT_MIGRATED: schema');
      expect(r.stderr).not.toMatch(STACK);
    }
  });

  it("migrate into a schema holding the app's own jobs table: NS_MIGRATION_FAILED, exit 1, no stack", async () => {
    const schema = `${t.schema}_app`;
    await t.sql.query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".jobs (id serial PRIMARY KEY, title text)`);
    try {
      const r = await withProcessEnv({ NS_SCHEMA: schema }, () => cli(['migrate'], { env: env() }));
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toContain('error NS_MIGRATION_FAILED: migration 0001 jobs failed');
      expect(r.stderr).toContain('a schema of its own');
      expect(r.stderr).not.toMatch(STACK);
    } finally {
      await t.sql.query(`DROP SCHEMA "${schema}" CASCADE`);
    }
  });

  describe('with the schema migrated', () => {
    let holder: Server | undefined;
    const dir = mkdtempSync(join(tmpdir(), 'nightshift-over-budget-'));
    afterAll(async () => {
      rmSync(dir, { recursive: true, force: true });
      await new Promise<void>((r) => (holder ? holder.close(() => r()) : r()));
    });

    it('a busy --metrics-port: NS_PORT_UNAVAILABLE, exit 2, no stack', async () => {
      expect((await cli(['migrate'], { env: env() })).code).toBe(0);
      holder = createServer();
      const port = await new Promise<number>((resolve) => holder!.listen(0, '127.0.0.1', () => resolve((holder!.address() as { port: number }).port)));
      const r = await cli(['worker', '--roles', 'api', '--metrics-port', String(port)], { env: env() });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`error NS_PORT_UNAVAILABLE: 127.0.0.1:${port} is in use by another process`);
      expect(r.stderr).not.toMatch(STACK);
    });

    it('over budget: `budget` and `worker` both exit 2', async () => {
      writeFileSync(
        join(dir, 'nightshift.config.ts'),
        `import base from ${JSON.stringify(join(CLI_APP, 'nightshift.config.ts'))};
import { defineConfig } from ${JSON.stringify(join(process.cwd(), 'src', 'index.ts'))};
export default defineConfig({ ...base, database: { ...base.database, budget: { replicas: 5000 } } });
`,
      );
      const config = ['--config', join(dir, 'nightshift.config.ts')];
      const budget = await cli([...config, 'budget', '--replicas', '5000'], { env: env() });
      expect(budget.code, budget.stderr).toBe(2);
      expect(budget.stdout).toContain('OVER BUDGET');
      const worker = await cli([...config, 'worker', '--roles', 'api'], { env: env() });
      expect(worker.code, worker.stderr).toBe(2);
      expect(worker.stderr).toContain('error NS_BUDGET_EXCEEDED');
    });

    it('jobs list: a completed job shows no error of an earlier attempt; a retrying one shows its last', async () => {
      let calls = 0;
      const flaky = defineJob({
        kind: 'flaky-import',
        payload: z.object({ ok: z.boolean() }),
        maxAttempts: 3,
        backoff: () => 0,
        run: async ({ ok }) => {
          calls++;
          if (!ok || calls === 1) throw new Error('upstream timed out');
        },
      });
      const ns = t.client({ jobs: [flaky], pollIntervalMs: 50 });
      const { id: done } = await ns.enqueue(flaky, { ok: true });
      await ns.start();
      await waitFor('the job to complete on its second attempt', async () => (await ns.getJob(done)).state === 'completed');
      await ns.stop();
      const { id: failing } = await t.client({ jobs: [flaky] }).enqueue(flaky, { ok: false }, { runAt: new Date(Date.now() + 3_600_000) });
      await t.sql.query(`UPDATE "${t.schema}".jobs SET errors = (SELECT errors FROM "${t.schema}".jobs_all WHERE id = $1), attempt = 1 WHERE id = $2`, [done, failing]);
      const r = await cli(['jobs', 'list', '--kind', 'flaky-import'], { env: env() });
      expect(r.code, r.stderr).toBe(0);
      const line = (id: string) => r.stdout.split('\n').find((l) => l.startsWith(`${id} `)) ?? '';
      expect(line(done)).toContain('completed');
      expect(line(done)).not.toContain('upstream timed out');
      expect(line(failing)).toContain('upstream timed out');
    });
  });
});
