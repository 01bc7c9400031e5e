/**
 * A rolling upgrade: a worker of the previous version keeps running while the new version migrates
 * the schema and starts beside it; both work the same queue on the migrated schema.
 *
 * The previous version is this repository at the commit before its newest migration was added,
 * taken with `git archive` into a temp directory and run from source (through tsx) on this
 * checkout's node_modules. Limits: it is the previous *schema* version, not a published release;
 * its dependencies are today's; only the (newest − 1, newest) pair is tested. Without git history
 * (a shallow clone) the test is skipped, and fails under CI=true.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/db.js';
import { startScript, type Proc } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MIGRATIONS = join(ROOT, 'src', 'db', 'migrations');
const newest = readdirSync(MIGRATIONS)
  .filter((f) => /^\d{4}_.*\.sql$/.test(f))
  .sort()
  .at(-1)!;

/** The commit before the one that added the newest migration, or why there is none. */
function previousVersion(): { commit: string } | { missing: string } {
  const git = (...args: string[]) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  const added = git('log', '-1', '--format=%H', '--diff-filter=A', '--', `src/db/migrations/${newest}`);
  if (added.status !== 0) return { missing: `git is not usable here: ${added.stderr.trim()}` };
  const commit = added.stdout.trim();
  if (!commit) return { missing: `no commit adds ${newest} (a shallow clone?)` };
  const parent = git('rev-parse', '--verify', '--quiet', `${commit}^`);
  if (parent.status !== 0) return { missing: `the commit before ${commit.slice(0, 8)} is not in this clone (shallow?)` };
  return { commit: parent.stdout.trim() };
}

/**
 * The same worker script for both versions, importing that version's public API: it migrates
 * (argv `migrate`), or enqueues NS_ENQUEUE jobs and then works, each job recording which version
 * ran it. A minimal Standard Schema stands in for zod, so the script needs nothing but nightshift.
 */
function workerScript(indexUrl: string): string {
  return `import { createNightshift, defineJob } from ${JSON.stringify(indexUrl)};
const env = process.env;
const payload = { '~standard': { version: 1, vendor: 'upgrade-test', validate: (value) => ({ value }) } };
const job = defineJob({
  kind: 'upgrade-job',
  queue: 'upgrade',
  payload,
  run: async (p, ctx) => {
    await ctx.db.query({ text: 'INSERT INTO "' + env.NS_SCHEMA + '".upgrade_runs (job_id, version) VALUES ($1, $2)', values: [ctx.jobId, env.NS_VERSION] });
    await new Promise((r) => setTimeout(r, 20));
  },
});
const ns = createNightshift({ databaseUrl: env.DATABASE_URL, schema: env.NS_SCHEMA, jobs: [job], concurrency: 4, pollIntervalMs: 100 });
if (process.argv[2] === 'migrate') {
  const r = await ns.migrate();
  console.log('migrated ' + JSON.stringify(r.applied.map((a) => a.version)));
  await ns.stop();
} else {
  const n = Number(env.NS_ENQUEUE ?? 0);
  if (n > 0) {
    const ids = (await ns.enqueueMany(job, Array.from({ length: n }, (_, i) => ({ i, by: env.NS_VERSION })))).map((r) => r.id);
    console.log('enqueued ' + ids.join(','));
  }
  if (process.argv[2] === 'work') {
    process.on('SIGTERM', () => void ns.stop().then(() => process.exit(0), () => process.exit(1)));
    try {
      await ns.start();
      console.log('ready');
    } catch (err) {
      console.log('start failed ' + (err && err.code));
      await ns.stop();
      process.exit(3);
    }
  } else {
    await ns.stop();
  }
}
`;
}

const previous = previousVersion();
const runnable = 'commit' in previous || process.env.CI === 'true';
if (!runnable) console.warn(`skipping the upgrade test: ${(previous as { missing: string }).missing}`);

describe.runIf(runnable)(`a rolling upgrade across ${newest}: old and new workers on one migrated schema`, () => {
  const t = useTestDatabase('upgrade');
  let dir: string;
  let oldScript: string;
  let newScript: string;
  let compatibleUpgrade = false;
  let added: number[] = [];
  const procs: Proc[] = [];

  beforeAll(() => {
    if (!('commit' in previous)) throw new Error(`the upgrade test needs git history under CI=true: ${previous.missing}`);
    dir = mkdtempSync(join(tmpdir(), 'nightshift-upgrade-'));
    const old = join(dir, 'old');
    execFileSync('mkdir', ['-p', old]);
    // The previous version's sources and package.json (ESM), run on today's dependencies.
    execFileSync('sh', ['-c', `git -C "$1" archive "$2" src package.json | tar -x -C "$3"`, 'sh', ROOT, previous.commit, old]);
    symlinkSync(join(ROOT, 'node_modules'), join(old, 'node_modules'), 'dir');
    const oldMigrations = readdirSync(join(old, 'src', 'db', 'migrations'));
    expect(oldMigrations).not.toContain(newest);
    added = readdirSync(MIGRATIONS)
      .filter((f) => /^\d{4}_.*\.sql$/.test(f) && !oldMigrations.includes(f))
      .sort()
      .map((f) => Number(f.slice(0, 4)));
    // The newest migration lets older code run beside it, and the previous version checks that marker.
    compatibleUpgrade = /^-- nightshift:compatible\b/m.test(readFileSync(join(MIGRATIONS, newest), 'utf8')) && readFileSync(join(old, 'src', 'db', 'migrator.ts'), 'utf8').includes('nightshift:compatible');
    oldScript = join(old, 'upgrade-worker.mts');
    writeFileSync(oldScript, workerScript(pathToFileURL(join(old, 'src', 'index.ts')).href));
    // The new version's script lives beside a node_modules link too (`--import tsx` resolves from the working directory).
    execFileSync('mkdir', ['-p', join(dir, 'new')]);
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'new', 'node_modules'), 'dir');
    newScript = join(dir, 'new', 'upgrade-worker.mts');
    writeFileSync(newScript, workerScript(pathToFileURL(join(ROOT, 'src', 'index.ts')).href));
  });

  afterAll(async () => {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.exited));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const env = (version: string, extra: Record<string, string> = {}) => ({ DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_VERSION: version, NIGHTSHIFT_LOG_LEVEL: 'warn', ...extra });
  const run = (script: string, version: string, args: string[], extra: Record<string, string> = {}) => {
    const p = startScript(relative(ROOT, script), env(version, extra), args, dirname(script));
    procs.push(p);
    return p;
  };
  const runsBy = async (version: string, ids: string[]) =>
    (await t.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${t.schema}".upgrade_runs WHERE version = $1 AND job_id = ANY($2::bigint[])`, [version, ids])).rows[0]!.n;
  const idsOf = (p: Proc) => /enqueued ([\d,]+)/.exec(p.output())![1]!.split(',');

  it('the old worker keeps working through the migration, the new one joins, and an old process starts on the newer schema only if its migrations are marked compatible', async () => {
    // The previous version installs its schema and starts working.
    const oldMigrate = run(oldScript, 'old', ['migrate']);
    expect((await oldMigrate.exited).code, oldMigrate.output()).toBe(0);
    await t.sql.query(`CREATE TABLE "${t.schema}".upgrade_runs (job_id bigint NOT NULL, version text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp())`);
    const oldWorker = run(oldScript, 'old', ['work'], { NS_ENQUEUE: '20' });
    await oldWorker.waitForLine('ready');
    const before = idsOf(oldWorker);
    await waitFor('the old worker to run its jobs', async () => (await runsBy('old', before)) === before.length);

    // The new version migrates while the old worker runs.
    const newMigrate = run(newScript, 'new', ['migrate']);
    expect((await newMigrate.exited).code, newMigrate.output()).toBe(0);
    // Every migration the previous version's tree lacks (a commit may add several).
    expect(newMigrate.output()).toContain(`migrated ${JSON.stringify(added)}`);

    // Jobs the new version enqueues are run by the old worker, still running on the newer schema.
    const newProducer = run(newScript, 'new', ['enqueue'], { NS_ENQUEUE: '20' });
    expect((await newProducer.exited).code, newProducer.output()).toBe(0);
    const fromNew = idsOf(newProducer);
    await waitFor('the old worker to run jobs the new version enqueued', async () => (await runsBy('old', fromNew)) === fromNew.length);

    // The new worker joins: both versions work one queue; every job runs once and completes.
    const newWorker = run(newScript, 'new', ['work'], { NS_ENQUEUE: '200' });
    await newWorker.waitForLine('ready');
    const mixed = idsOf(newWorker);
    await waitFor('every job to complete', async () => {
      const { rows } = await t.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE kind = 'upgrade-job' AND state <> 'completed'`);
      return rows[0]!.n === 0;
    });
    const { rows: runs } = await t.sql.query<{ job_id: string; n: number }>(`SELECT job_id::text, count(*)::int AS n FROM "${t.schema}".upgrade_runs GROUP BY job_id HAVING count(*) > 1`);
    expect(runs, 'no job ran twice').toEqual([]);
    expect((await runsBy('old', mixed)) + (await runsBy('new', mixed))).toBe(mixed.length);
    expect(await runsBy('new', mixed)).toBeGreaterThan(0);
    expect(oldWorker.output()).not.toMatch(/error/i);

    // A process of the previous version started now: it starts on the newer schema when the newest
    // migration is marked compatible and the previous version knows the rule (a rolling deploy can
    // restart or roll back its pods); otherwise it refuses, naming the code.
    const lateOld = run(oldScript, 'old', ['work']);
    if (compatibleUpgrade) {
      await lateOld.waitForLine('ready');
      lateOld.kill('SIGTERM');
      expect((await lateOld.exited).code).toBe(0);
    } else {
      expect((await lateOld.exited).code).toBe(3);
      expect(lateOld.output()).toContain('start failed NS_SCHEMA_TOO_NEW');
    }

    // Both stop cleanly on SIGTERM.
    oldWorker.kill('SIGTERM');
    newWorker.kill('SIGTERM');
    expect((await oldWorker.exited).code).toBe(0);
    expect((await newWorker.exited).code).toBe(0);
  });
});
