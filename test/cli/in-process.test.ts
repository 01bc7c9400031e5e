// runCli as a library: it writes only to the streams it is given, never exits or sets the
// process's exit code, loads the config afresh on each run, and its listings share one shape.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { StopRequests, untilStopped } from '../../src/cli/stop-requests.js';
import { useTestDatabase } from '../support/db.js';
import { cliInProcess as cli, startInProcess, withProcessEnv } from './in-process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const t = useTestDatabase('cli_lib');
t.migrateBeforeAll();
process.env.NS_SCHEMA = t.schema;
const env = () => ({ DATABASE_URL: t.url });

describe('runCli touches no process global', () => {
  it('writes to the given streams only, and leaves process.exitCode alone', async () => {
    const written: string[] = [];
    const original = { out: process.stdout.write, err: process.stderr.write };
    const spy = (name: string) => ((chunk: unknown) => (written.push(`${name}: ${String(chunk)}`), true)) as typeof process.stdout.write;
    const exitCode = process.exitCode;
    const results: { code: number; text: string }[] = [];
    process.stdout.write = spy('stdout');
    process.stderr.write = spy('stderr');
    try {
      for (const args of [['--help'], ['--version'], ['frobnicate'], ['jobs', 'list'], ['--database-url', t.url, 'jobs', 'list'], ['--database-url', t.url, 'jobs', 'show', '99999999']]) {
        let text = '';
        const sink = { write: (s: string) => (text += s) };
        results.push({ code: await runCli(args, { out: sink, err: sink, env: { NIGHTSHIFT_LOG_LEVEL: 'warn' }, cwd: join(ROOT, 'test', 'fixtures', 'cli-app') }), text });
      }
    } finally {
      process.stdout.write = original.out;
      process.stderr.write = original.err;
    }
    expect(written).toEqual([]);
    expect(process.exitCode).toBe(exitCode);
    expect(results.map((r) => r.code)).toEqual([0, 0, 2, 2, 0, 1]);
    expect(results[0]!.text).toContain('Usage: nightshift');
    expect(results[2]!.text).toContain("unknown command 'frobnicate'");
    expect(results[3]!.text).toContain('error NS_USAGE: no database URL');
    expect(results[5]!.text).toContain('error NS_JOB_NOT_FOUND');
  });

  it('no file of src/cli but the binary (main.ts) reaches for process output, exit or signals; only the defaults read env and cwd', () => {
    const dir = join(ROOT, 'src', 'cli');
    const files = readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts') && f !== 'main.ts');
    expect(files.length).toBeGreaterThan(10);
    const banned = [/process\.(stdout|stderr)\b/, /process\.exit\b/, /process\.exitCode\b/, /process\.(on|once)\(\s*'(SIG\w+|disconnect)'/];
    // cli-io.ts fills in the defaults of a run (process.env, process.cwd()); commands read the run's.
    const globals = /process\.(env|cwd)\b/;
    const hits = files.flatMap((f) =>
      readFileSync(join(dir, f), 'utf8')
        .split('\n')
        .filter((line) => !/^\s*(\/\/|\/?\*)/.test(line) && (banned.some((re) => re.test(line)) || (f !== 'cli-io.ts' && globals.test(line))))
        .map((line) => `${f}: ${line.trim()}`),
    );
    expect(hits).toEqual([]);
  });
});

describe('stop requests', () => {
  it('a request made before the command listens is heard; the second says "at once"; the binary is told when a command first listens', async () => {
    let listening = 0;
    const stops = new StopRequests({ onFirstListener: () => listening++ });
    stops.request('SIGTERM');
    const heard: [string, number][] = [];
    const off = stops.listen((reason, nth) => heard.push([reason, nth]));
    stops.listen(() => undefined);
    await Promise.resolve();
    stops.request('SIGINT');
    off();
    stops.request('SIGTERM');
    expect(heard).toEqual([
      ['SIGTERM', 1],
      ['SIGINT', 2],
    ]);
    expect(listening).toBe(1);
    expect(stops.requested).toBe(3);
  });

  it('untilStopped: 0 after a graceful stop, 1 if the stop fails, 1 at once on a second request', async () => {
    const notes: string[] = [];
    const graceful = new StopRequests();
    const a = untilStopped(
      graceful,
      (n) => notes.push(n),
      async () => undefined,
    );
    graceful.request('SIGTERM');
    expect(await a.done).toBe(0);

    const failing = new StopRequests();
    const b = untilStopped(
      failing,
      (n) => notes.push(n),
      async () => Promise.reject(new Error('pool gone')),
    );
    failing.request('SIGTERM');
    expect(await b.done).toBe(1);

    const twice = new StopRequests();
    let release!: () => void;
    const c = untilStopped(
      twice,
      (n) => notes.push(n),
      () => new Promise<void>((r) => (release = r)),
    );
    twice.request('SIGTERM');
    twice.request('SIGINT');
    expect(await c.done).toBe(1);
    release();
    expect(notes).toEqual(['stopping failed: pool gone', 'SIGINT again: exiting without waiting']);
  });
});

describe('listings', () => {
  it('say so when there is nothing to list (on stderr), and print [] with --json', async () => {
    const none = await cli(['jobs', 'list'], { env: env() });
    expect(none).toEqual({ code: 0, stdout: '', stderr: 'no jobs\n' });
    const filtered = await cli(['jobs', 'list', '--kind', 'send-email'], { env: env() });
    expect(filtered.stderr).toBe('no jobs match\n');
    expect(JSON.parse((await cli(['jobs', 'list', '--json'], { env: env() })).stdout)).toEqual([]);
    for (const [args, says] of [
      [['queues', 'list'], 'no queues'],
      [['workers'], 'no live processes'],
      [['stats'], 'no jobs'],
      [['audit', '--target', 'job:1'], 'no manual actions on job:1'],
      [['schedules', 'ticks', 'nightly-digest'], 'no ticks of nightly-digest yet'],
    ] as const) {
      const r = await cli([...args], { env: env() });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout, args.join(' ')).toBe('');
      expect(r.stderr).toContain(says);
    }
    // A daemon of the config never elected is a row, not an empty listing.
    expect((await cli(['daemons'], { env: env() })).stdout).toMatch(/daemon:refresh-seeds\s+never elected/);
  });

  it('budget over budget exits 2 with --json as well', async () => {
    const r = await cli(['budget', '--replicas', '1000', '--json'], { env: env() });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, replicas: 1000 });
  });
});

describe('long-running commands in-process', () => {
  it('dev: the supervisor here, the app in a child process with its output piped to the streams given, both stopped on request', async () => {
    const dev = startInProcess(['--database-url', t.url, 'dev', '--roles', 'outbox-worker', '--no-watch'], { env: { NIGHTSHIFT_LOG_LEVEL: 'info' } });
    try {
      await dev.waitForLine('dev: started (#1)');
      dev.stop('SIGINT');
      const r = await dev.ended;
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('dev: SIGINT: stopping the app, then PostgreSQL');
      expect(r.stdout).toContain('dev: stopped');
    } finally {
      await dev.close();
    }
  });
});

describe('the config is loaded afresh on every run', () => {
  const dirs: string[] = [];
  const schemas: string[] = [];
  afterAll(async () => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    for (const s of schemas) await t.sql.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
  });

  // tsx loads an ES-module config (a package of "type": "module") and a CommonJS one differently.
  it.each([
    ['an ES module', { type: 'module' }],
    ['CommonJS', undefined],
  ])('%s: a value read at import time by a file the config imports is read again by the next run', async (what, pkg) => {
    const dir = mkdtempSync(join(tmpdir(), 'nightshift-fresh-config-'));
    dirs.push(dir);
    if (pkg) writeFileSync(join(dir, 'package.json'), JSON.stringify(pkg));
    // The schema is decided in a module the config imports: a cached module would keep the first.
    writeFileSync(join(dir, 'where.ts'), 'export const schema = process.env.NS_FRESH_SCHEMA;\n');
    writeFileSync(
      join(dir, 'nightshift.config.ts'),
      `import { defineConfig } from ${JSON.stringify(join(ROOT, 'src', 'index.ts'))};
import { schema } from './where.js';
export default defineConfig({ database: { schema } });
`,
    );
    const mine = [1, 2].map((n) => `${t.schema}_${what === 'CommonJS' ? 'c' : 'e'}${n}`);
    schemas.push(...mine);
    const seen: string[] = [];
    for (const schema of mine) {
      const r = await withProcessEnv({ NS_FRESH_SCHEMA: schema }, () => cli(['migrate', '--json'], { env: env(), cwd: dir }));
      expect(r.code, r.stderr).toBe(0);
      seen.push((JSON.parse(r.stdout) as { schema: string }).schema);
    }
    expect(seen).toEqual(mine);
  });
});
