import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cli, CLI_ENTRY } from '../support/cli.js';
import { useTestDatabase } from '../support/db.js';
import { startScript } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

// Bug 11 of issue 11: a `nightshift.config.ts` in a CommonJS package (no "type": "module") was
// loaded through a tsx namespace that hands Node the transpiled file as a `data:` URL, so every
// stack frame of code in the config quoted the whole config — secrets included — into the job's
// error history and the logs. And a daemon's failure was logged with its message and stack,
// although messages stay out of logs by default. A real CLI worker on such a config: no secret of
// the config file is in a log line or a stored error, and no error message is in a log line.

const t = useTestDatabase('cfg_secret');
const SRC = resolve('src/index.ts');
const dir = mkdtempSync(join(tmpdir(), 'nightshift-cjs-app-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tag = randomBytes(4).toString('hex');
const canaries = { config: `CANARY-CONFIG-${tag}`, jobError: `CANARY-JOB-ERROR-${tag}`, daemonError: `CANARY-DAEMON-ERROR-${tag}` };

// No "type": "module": TypeScript in this package is CommonJS.
writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'cjs-app', private: true }));
// An application has its dependencies at hand (tsx among them, for the CLI run from source).
symlinkSync(resolve('node_modules'), join(dir, 'node_modules'), 'dir');
writeFileSync(
  join(dir, 'nightshift.config.ts'),
  `import { defineConfig, defineDaemon, defineJob } from ${JSON.stringify(SRC)};
const providerKey: string = ${JSON.stringify(canaries.config)};
const charge = defineJob({
  kind: 'charge',
  payload: { '~standard': { version: 1, vendor: 'test', validate: (value: unknown) => ({ value }) } },
  maxAttempts: 1,
  run: async () => {
    throw new Error('provider said no: ${canaries.jobError} (key length ' + providerKey.length + ')');
  },
});
const watcher = defineDaemon({
  name: 'watcher',
  everyMs: 200,
  run: async () => {
    throw new Error('watcher broke: ${canaries.daemonError}');
  },
});
export default defineConfig({
  database: { schema: process.env.NS_SCHEMA },
  jobs: [charge],
  daemons: [watcher],
  worker: { pollIntervalMs: 100 },
});
`,
);

describe('secrets of a CommonJS config file', () => {
  it('appear in no log line and no stored error; error messages appear in no log line', async () => {
    const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NIGHTSHIFT_LOG_LEVEL: 'trace' };
    const migrated = await cli(['migrate'], { cwd: dir, env });
    expect(migrated.code, migrated.stderr).toBe(0);
    const worker = startScript(CLI_ENTRY, env, ['worker'], dir);
    try {
      await worker.waitForLine('started');
      const enqueued = await cli(['enqueue', 'charge', '--payload', '{}'], { cwd: dir, env });
      expect(enqueued.code, enqueued.stderr).toBe(0);
      const id = /job (\d+) enqueued/.exec(enqueued.stdout)?.[1];
      expect(id, enqueued.stdout).toBeDefined();
      const errors = await waitFor('the job to be discarded with its error', async () => {
        const { rows } = await t.sql.query(`SELECT state, errors FROM "${t.schema}".jobs_all WHERE id = $1`, [id]);
        return rows[0]?.state === 'discarded' ? (rows[0].errors as { message: string; stack?: string }[]) : undefined;
      });
      await worker.waitForLine('daemon run failed');
      worker.kill('SIGTERM');
      await worker.exited;

      const stored = JSON.stringify(errors);
      // The failure is kept with the job, message and all, and its stack names the config file…
      expect(errors[0]!.message).toContain(canaries.jobError);
      expect(errors[0]!.stack).toContain(join(dir, 'nightshift.config.ts'));
      // …but not the config's text.
      expect(stored).not.toContain(canaries.config);
      expect(stored).not.toContain('data:');

      const logs = [worker.output(), enqueued.stdout, enqueued.stderr, migrated.stdout, migrated.stderr].join('\n');
      expect(logs).toContain('job.failed');
      for (const [what, canary] of Object.entries(canaries)) expect(logs.includes(canary), `${what} canary in the logs:\n${logs}`).toBe(false);
      expect(logs).not.toContain('data:text');
    } finally {
      worker.kill('SIGKILL');
      await worker.exited;
    }
  });
});
