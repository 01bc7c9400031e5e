// The `nightshift` binary as a process: what runCli cannot show in-process — the bin file of
// package.json with its shebang, exit codes as the shell sees them, SIGTERM draining a worker, a
// second signal exiting at once, and a short command ending at Ctrl-C. Everything else about the
// commands runs in-process (cli.test.ts and the rest of test/cli).
import { execFileSync, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, CLI_APP, CLI_ENTRY } from '../support/cli.js';
import { useTestDatabase } from '../support/db.js';
import { startScript } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const t = useTestDatabase('cli_bin');
const env = () => ({ DATABASE_URL: t.url, NS_SCHEMA: t.schema });
const jobState = async (id: string) => (await t.sql.query(`SELECT state FROM "${t.schema}".jobs_all WHERE id = $1`, [id])).rows[0]?.state as string;

/** The newest modification time of a file under `dir`. */
function newest(dir: string): number {
  return Math.max(
    ...readdirSync(dir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => statSync(join(e.parentPath, e.name)).mtimeMs),
  );
}

beforeAll(async () => {
  const r = await cli(['migrate'], { env: env() });
  expect(r.code, r.stderr).toBe(0);
});

describe('the bin of package.json', () => {
  it('is an executable file with a node shebang that runs the CLI', () => {
    const bin = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin.nightshift!;
    const file = join(ROOT, bin);
    // dist/ is built by `npm ci` (prepare); built again here when the sources changed since.
    if (statSync(file, { throwIfNoEntry: false }) === undefined || newest(join(ROOT, 'src')) > statSync(file).mtimeMs) {
      execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'pipe' });
    }
    expect(readFileSync(file, 'utf8').split('\n')[0]).toBe('#!/usr/bin/env node');
    accessSync(file, constants.X_OK);
    // Run as the shell runs it: the file itself, not `node file`.
    const version = execFileSync(file, ['--version'], { cwd: CLI_APP, encoding: 'utf8' });
    expect(version.trim()).toBe((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  });
});

describe('exit codes of the process', () => {
  it('0 on success, 1 for a failed operation, 2 for a usage error or a fleet over budget', async () => {
    expect((await cli(['queues', 'list', '--json'], { env: env() })).code).toBe(0);
    const missing = await cli(['jobs', 'show', '99999999'], { env: env() });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('error NS_JOB_NOT_FOUND');
    const unknown = await cli(['frobnicate'], { env: env() });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
    // Not an error but a finding: the exit code a command sets itself reaches the shell too.
    const over = await cli(['budget', '--replicas', '1000'], { env: env() });
    expect(over.code).toBe(2);
    expect(over.stdout).toContain('OVER BUDGET');
  });
});

describe('signals', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nightshift-signals-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('SIGTERM drains a worker: the running job is handed back when the grace ends, and the process exits 0', async () => {
    const proc = startScript(CLI_ENTRY, { ...env(), NIGHTSHIFT_LOG_LEVEL: 'warn' }, ['worker', '--roles', 'reports'], CLI_APP);
    try {
      await proc.waitForLine('started');
      const { id } = JSON.parse((await cli(['enqueue', 'long-report', '--json'], { env: env() })).stdout) as { id: string };
      await waitFor('the job to run', async () => (await jobState(id)) === 'running');
      proc.kill('SIGTERM');
      expect(await proc.exited).toEqual({ code: 0, signal: null });
      expect(proc.output()).toContain('SIGTERM: stopping (grace 2000 ms)');
      expect(await jobState(id)).toBe('available');
    } finally {
      proc.kill('SIGKILL');
      await proc.exited;
    }
  });

  it('a second signal exits at once with 1, without waiting for the drain', async () => {
    // A grace far longer than the test: only the second signal can end the process.
    const config = join(dir, 'long-grace.config.ts');
    writeFileSync(
      config,
      `import base from ${JSON.stringify(join(CLI_APP, 'nightshift.config.ts'))};
import { defineConfig } from ${JSON.stringify(join(ROOT, 'src', 'index.ts'))};
export default defineConfig({ ...base, worker: { ...base.worker, shutdownGraceMs: 600_000 } });
`,
    );
    const proc = startScript(CLI_ENTRY, { ...env(), NIGHTSHIFT_LOG_LEVEL: 'warn' }, ['--config', config, 'worker', '--roles', 'reports'], CLI_APP);
    try {
      await proc.waitForLine('started');
      const { id } = JSON.parse((await cli(['enqueue', 'long-report', '--json'], { env: env() })).stdout) as { id: string };
      await waitFor('the job to run', async () => (await jobState(id)) === 'running');
      proc.kill('SIGINT');
      await proc.waitForLine('SIGINT: stopping (grace 600000 ms)');
      proc.kill('SIGTERM');
      expect(await proc.exited).toEqual({ code: 1, signal: null });
      expect(proc.output()).toContain('SIGTERM again: exiting without waiting');
      // Not handed back: the process did not wait. Its lease runs out and the rescuer takes it.
      expect(await jobState(id)).toBe('running');
    } finally {
      proc.kill('SIGKILL');
      await proc.exited;
    }
  });

  it('a short command keeps the default: Ctrl-C ends it at once', async () => {
    // A "database" that accepts the connection and never answers: the command waits on it.
    const sockets: Socket[] = [];
    const server = createServer((s) => sockets.push(s));
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    try {
      const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, CLI_ENTRY), '--database-url', `postgres://u:pw@127.0.0.1:${port}/db`, 'jobs', 'list'], {
        cwd: CLI_APP,
        env: { ...process.env, NS_SCHEMA: t.schema },
        stdio: 'ignore',
      });
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
      await waitFor('the command to connect', () => sockets.length > 0);
      child.kill('SIGINT');
      expect(await exited).toEqual({ code: null, signal: 'SIGINT' });
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
