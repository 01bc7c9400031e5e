/**
 * What `npm install nightshift` gives a user: the tarball `npm pack` makes (built in a staging copy,
 * so the repository's dist/ is left alone), installed with npm into a fresh project on this Node,
 * then imported from ESM and required from CommonJS (require(esm), Node >= 20.19) with TypeScript
 * resolving the types of both entry points, and linted by publint and arethetypeswrong (offline,
 * on the tarball).
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const bin = (pkg: string, path: string) => join(ROOT, 'node_modules', pkg, path);

interface Run {
  code: number;
  out: string;
}

function sh(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, env: { ...process.env, ...env }, maxBuffer: 32 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, out: `${stdout}${stderr}` });
    });
  });
}

const node = (args: string[], cwd: string) => sh(process.execPath, args, cwd);
const npm = (args: string[], cwd: string) => sh('npm', [...args, '--no-audit', '--no-fund', '--loglevel=warn'], cwd, { npm_config_update_notifier: 'false' });

describe('the published package', () => {
  let work: string;
  let tarball: string;
  let consumer: string;
  let install: Run;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'nightshift-pack-'));
    const stage = join(work, 'stage');
    mkdirSync(stage);
    // What the build needs, plus what package.json ships ("files"; dist/ is built here).
    const files = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { files: string[] }).files.filter((f) => f !== 'dist');
    for (const entry of new Set(['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'scripts', ...files])) {
      if (existsSync(join(ROOT, entry))) cpSync(join(ROOT, entry), join(stage, entry), { recursive: true });
    }
    symlinkSync(join(ROOT, 'node_modules'), join(stage, 'node_modules'), 'dir');
    // prepack builds dist/ inside the staging copy.
    const pack = await npm(['pack', '--pack-destination', work], stage);
    expect(pack.code, pack.out).toBe(0);
    tarball = join(
      work,
      readdirSync(work).find((f) => f.endsWith('.tgz'))!,
    );

    consumer = join(work, 'consumer');
    mkdirSync(consumer);
    writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    install = await npm(['install', '--prefer-offline', tarball], consumer);
  });

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('holds the built entry points, types, CLI and migrations, and no sources or tests', async () => {
    const list = await sh('tar', ['-tzf', tarball], work);
    const files = list.out
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, ''));
    for (const f of ['package.json', 'README.md', 'dist/index.js', 'dist/index.d.ts', 'dist/testing/index.js', 'dist/testing/index.d.ts', 'dist/cli/main.js']) {
      expect(files, f).toContain(f);
    }
    expect(files.some((f) => /^dist\/db\/migrations\/\d+_.*\.sql$/.test(f))).toBe(true);
    expect(files.filter((f) => /^(src|test|bench|examples|scripts)\//.test(f) || f.endsWith('.test.js'))).toEqual([]);
  });

  it('installs with npm on this Node without an engine warning', () => {
    expect(install.code, install.out).toBe(0);
    expect(install.out).not.toMatch(/EBADENGINE|Unsupported engine|notsup/i);
  });

  it('passes publint', async () => {
    const r = await node([bin('publint', 'src/cli.js'), '--strict', tarball], work);
    expect(r.code, r.out).toBe(0);
  });

  it('passes arethetypeswrong for an ESM-only package (types resolve from ESM under node16 and bundlers)', async () => {
    // esm-only: a CommonJS TypeScript caller under `module: node16` cannot require() ESM; the next
    // test covers require() under `nodenext`, where TypeScript (>= 5.8) and Node >= 20.19 allow it.
    const r = await node([bin('@arethetypeswrong/cli', 'dist/index.js'), '--profile', 'esm-only', '--format', 'ascii', tarball], work);
    expect(r.code, r.out).toBe(0);
  });

  it('type-checks and runs an ESM import and a CommonJS require() of both entry points', async () => {
    writeFileSync(
      join(consumer, 'esm.mts'),
      `import { createNightshift, defineJob, NightshiftError } from 'nightshift';
import { liveResources } from 'nightshift/testing';
const job = defineJob({ kind: 'mail', payload: { '~standard': { version: 1, vendor: 'x', validate: (v: unknown) => ({ value: v }) } }, run: async () => {} });
const make: typeof createNightshift = createNightshift;
console.log(JSON.stringify({ make: typeof make, live: Array.isArray(liveResources()), kind: job.kind, error: NightshiftError.name }));
`,
    );
    writeFileSync(
      join(consumer, 'cjs.cts'),
      `import ns = require('nightshift');
import testing = require('nightshift/testing');
const job: ns.JobDefinition = ns.defineJob({ kind: 'mail', payload: { '~standard': { version: 1, vendor: 'x', validate: (v: unknown) => ({ value: v }) } }, run: async () => {} });
console.log(JSON.stringify({ make: typeof ns.createNightshift, live: Array.isArray(testing.liveResources()), kind: job.kind, error: ns.NightshiftError.name }));
`,
    );
    writeFileSync(
      join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, outDir: 'out', skipLibCheck: false, types: ['node'] },
        files: ['esm.mts', 'cjs.cts'],
      }),
    );
    const tsc = await node([bin('typescript', 'bin/tsc'), '-p', '.'], consumer);
    expect(tsc.code, tsc.out).toBe(0);
    const expected = { make: 'function', live: true, kind: 'mail', error: 'NightshiftError' };
    const esm = await node(['out/esm.mjs'], consumer);
    expect(esm.code, esm.out).toBe(0);
    expect(JSON.parse(esm.out)).toEqual(expected);
    const cjs = await node(['out/cjs.cjs'], consumer);
    expect(cjs.code, cjs.out).toBe(0);
    expect(JSON.parse(cjs.out.split('\n').filter((l) => l.startsWith('{'))[0]!)).toEqual(expected);
  });

  it('installs a working `nightshift` command', async () => {
    const r = await node([join(consumer, 'node_modules', 'nightshift', 'dist', 'cli', 'main.js'), '--help'], consumer);
    expect(r.code, r.out).toBe(0);
    expect(r.out).toMatch(/Usage: nightshift/);
    const viaBin = await sh(join(consumer, 'node_modules', '.bin', 'nightshift'), ['--version'], consumer);
    expect(viaBin.code, viaBin.out).toBe(0);
  });
});
